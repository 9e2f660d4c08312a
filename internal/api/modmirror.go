package api

import (
	"context"

	"trove.dev/trove/internal/registry"
)

// ModuleMirror is what the API needs of the module mirror
// (*mirror.Modules): a bundle export fetches the mirrored module versions
// Trove does not hold yet, as the provider mirror's are.
type ModuleMirror interface {
	// Mirrored reports whether a namespace (normalized) mirrors an
	// upstream's modules.
	Mirrored(namespace string) bool
	// FetchModule returns the stored version, fetching it first if
	// needed.
	FetchModule(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error)
}
