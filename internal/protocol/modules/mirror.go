package modules

import (
	"context"
	"slices"

	"trove.dev/trove/internal/registry"
)

// Mirror supplies the modules of namespaces that mirror an upstream
// registry's (*mirror.Modules implements it).
type Mirror interface {
	// Mirrored reports whether a namespace (normalized) mirrors an
	// upstream.
	Mirrored(namespace string) bool
	// ModuleVersions returns the versions the upstream lists and may be
	// mirrored; Unavailable when the upstream cannot be reached.
	ModuleVersions(ctx context.Context, namespace, name, system string) ([]string, error)
	// FetchModule returns the stored version, fetching and storing it
	// first if needed.
	FetchModule(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error)
}

// WithMirror makes the Service list and serve the modules of the
// namespaces m mirrors: their versions document lists the upstream's
// versions with those Trove holds (only those when the upstream is down),
// and the download of a version Trove does not hold yet fetches it first.
func WithMirror(m Mirror) Option { return func(s *Service) { s.mirror = m } }

// mirroredVersions adds the upstream's versions of a mirrored module to
// the stored ones vs: it returns the versions the upstream lists that are
// not stored. When the upstream fails and Trove holds versions, those are
// served alone (logged); otherwise its error is the answer.
func (s *Service) mirroredVersions(ctx context.Context, key modKey, vs []registry.ModuleVersion) ([]string, error) {
	up, err := s.mirror.ModuleVersions(ctx, key.ns, key.name, key.system)
	if err != nil {
		if len(vs) == 0 || !registry.IsKind(err, registry.Unavailable) && !registry.IsKind(err, registry.NotFound) {
			return nil, err
		}
		s.log.WarnContext(ctx, "module mirror: listing the versions held", "module", key.ns+"/"+key.name+"/"+key.system,
			"versions", len(vs), "error", registry.Message(err), "cause", err.Error())
		return nil, nil
	}
	var extra []string
	for _, v := range up {
		if !slices.ContainsFunc(vs, func(mv registry.ModuleVersion) bool { return mv.Version == v }) {
			extra = append(extra, v)
		}
	}
	return extra, nil
}

// fetchMirrored returns a version of a mirrored module that Trove does
// not hold yet, fetching it: only a version the upstream listed.
func (s *Service) fetchMirrored(ctx context.Context, e *entry, key modKey, ver string) (registry.ModuleVersion, bool, error) {
	if s.mirror == nil || !slices.Contains(e.Value.upstream, ver) {
		return registry.ModuleVersion{}, false, nil
	}
	v, err := s.mirror.FetchModule(ctx, key.ns, key.name, key.system, ver)
	return v, true, err
}

// latestUpstream returns the newest release the upstream lists of a
// mirrored module Trove holds no version of (the newest pre-release
// without a release).
func latestUpstream(e *entry) string {
	for _, v := range e.Value.upstream {
		if p, err := registry.ParseVersion(v); err == nil && p.Prerelease() == "" {
			return v
		}
	}
	if len(e.Value.upstream) > 0 {
		return e.Value.upstream[0]
	}
	return ""
}
