package store

import (
	"context"

	"trove.dev/trove/internal/registry"
)

// Lifecycle stores the deprecation and revocation of published provider
// and module versions (registry.Deprecation, registry.Revocation), which
// GetProviderVersion, ListProviderVersions, GetModuleVersion and
// ListModuleVersions return with the versions. Names are passed in
// normalized; the version as stored.
//
// Each call replaces one state of one version: a non-nil value sets it
// (setting it again replaces reason, link, time and author), nil clears
// it (clearing a state the version does not have is not an error).
// NotFound if there is no such version. Invalid for a reason or link that
// registry.CheckDeprecation or registry.CheckLifecycleReason refuses, or
// an unstorable time. Every change is reported on the change feed as a
// ChangeProvider or ChangeModule of the version's provider or module, so
// that every replica drops the documents that show it.
type Lifecycle interface {
	SetProviderDeprecation(ctx context.Context, namespace, typ, version string, d *registry.Deprecation) error
	SetProviderRevocation(ctx context.Context, namespace, typ, version string, r *registry.Revocation) error
	SetModuleDeprecation(ctx context.Context, namespace, name, system, version string, d *registry.Deprecation) error
	SetModuleRevocation(ctx context.Context, namespace, name, system, version string, r *registry.Revocation) error
}
