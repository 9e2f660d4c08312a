package api

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

// Mirror is what the lock route needs of the provider mirror
// (*mirror.Mirror): the versions of other registries' providers, and
// their packages fetched so that they can be hashed.
type Mirror interface {
	MirroredVersions(ctx context.Context, host, namespace, typ string) ([]string, error)
	MirroredVersion(ctx context.Context, host, namespace, typ, version string) (registry.ProviderVersion, error)
	FetchPackage(ctx context.Context, o registry.PackageOrigin) error
}

// lock answers POST /api/v1/lock with a lock file for the providers the
// caller may read: Trove's own (its host is the public URL's) and, when
// there is a mirror, those of its upstream registries.
func (h *handler) lock(w http.ResponseWriter, r *http.Request) error {
	var req apispec.LockRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return registry.Errorf(registry.Invalid, "%s", err.Error())
	}
	reqs := make([]lockfile.Requirement, 0, len(req.Providers))
	for _, p := range req.Providers {
		lr, err := lockfile.ParseRequirement(p.Source, p.Versions)
		if err != nil {
			return err
		}
		lr.Pinned = strings.TrimSpace(p.Pinned)
		reqs = append(reqs, lr)
	}
	entries, err := lockfile.Resolve(r.Context(), &lockSource{h: h, r: r}, reqs, req.Platforms)
	if err != nil {
		return err
	}
	out := apispec.LockResponse{LockFile: string(lockfile.Render(entries)), Providers: make([]apispec.LockedProvider, 0, len(entries))}
	for _, e := range entries {
		out.Providers = append(out.Providers, apispec.LockedProvider{Source: e.Source.String(), Version: e.Version, Constraints: e.Constraints, Hashes: e.Hashes})
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// lockSource reads providers for lockfile.Resolve: own ones from the
// index (if the caller may read their namespace), others from the mirror.
type lockSource struct {
	h *handler
	r *http.Request
}

// own reports whether p is one of Trove's own providers, and checks that
// the caller may read it.
func (s *lockSource) own(ctx context.Context, p tfaddr.Provider) (bool, error) {
	if !discovery.IsOwnHost(s.h.PublicURL.String(), p.Hostname) {
		if s.h.Mirror == nil {
			return false, registry.Errorf(registry.NotFound, "provider %s not found: this registry serves %s/... and mirrors no other registry", p, s.h.PublicURL.Host)
		}
		return false, nil
	}
	if ok, err := s.h.Access.CanRead(ctx, auth.FromContext(ctx), p.Namespace); err != nil || !ok {
		if err != nil {
			return true, err
		}
		return true, registry.Errorf(registry.NotFound, "provider %s not found", p)
	}
	return true, nil
}

func (s *lockSource) Versions(ctx context.Context, p tfaddr.Provider) ([]string, error) {
	own, err := s.own(ctx, p)
	if err != nil {
		return nil, err
	}
	if !own {
		return s.h.Mirror.MirroredVersions(ctx, p.Hostname.String(), p.Namespace, p.Type)
	}
	vs, err := s.h.Index.ListProviderVersionSummaries(ctx, p.Namespace, p.Type)
	if registry.IsKind(err, registry.NotFound) || err == nil && len(vs) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s has no versions", p)
	}
	versions := make([]string, 0, len(vs))
	for _, v := range vs {
		versions = append(versions, v.Version)
	}
	return versions, err
}

func (s *lockSource) Version(ctx context.Context, p tfaddr.Provider, version string) (registry.ProviderVersion, error) {
	own, err := s.own(ctx, p)
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	if !own {
		return s.h.Mirror.MirroredVersion(ctx, p.Hostname.String(), p.Namespace, p.Type, version)
	}
	return s.h.Index.GetProviderVersion(ctx, p.Namespace, p.Type, version)
}

// PackageHash returns the h1 hash of a package: the one stored, else
// (a mirrored package not fetched yet, or an own one published before
// Trove hashed packages) computed now from the package, which the mirror
// fetches first.
func (s *lockSource) PackageHash(ctx context.Context, p tfaddr.Provider, v registry.ProviderVersion, pl registry.Platform) (string, error) {
	if pl.H1 != "" {
		return pl.H1, nil
	}
	if _, err := s.h.Blobs.Stat(ctx, pl.SHA256); registry.IsKind(err, registry.NotFound) && s.h.Mirror != nil {
		if err := s.h.Mirror.FetchPackage(ctx, registry.PackageOrigin{Host: p.Hostname.String(), Namespace: p.Namespace, Type: p.Type, Version: v.Version, OS: pl.OS, Arch: pl.Arch}); err != nil {
			return "", err
		}
		if mv, err := s.Version(ctx, p, v.Version); err == nil {
			if held, ok := mv.Platform(pl.OS, pl.Arch); ok && held.H1 != "" {
				return held.H1, nil
			}
		}
	}
	return s.hashBlob(ctx, pl)
}

// hashBlob computes the h1 hash of a stored package.
func (s *lockSource) hashBlob(ctx context.Context, pl registry.Platform) (string, error) {
	blob, err := s.h.Blobs.Open(ctx, pl.SHA256)
	if err != nil {
		return "", err
	}
	defer blob.Close()
	path, remove, err := s.h.tempFile(blob.Content)
	if err != nil {
		return "", err
	}
	defer remove()
	return release.PackageHash(path)
}

func (s *lockSource) SHASums(ctx context.Context, v registry.ProviderVersion) ([]byte, error) {
	blob, err := s.h.Blobs.Open(ctx, v.SHASumsDigest)
	if err != nil {
		return nil, err
	}
	defer blob.Close()
	return io.ReadAll(io.LimitReader(blob.Content, 1<<20))
}

// tempFile copies r into a new file in TempDir and returns its path and
// a function that removes it.
func (h *handler) tempFile(r io.Reader) (string, func(), error) {
	f, err := os.CreateTemp(h.TempDir, "lock-*.zip")
	if err != nil {
		return "", nil, registry.Wrap(registry.Internal, err, "creating a temporary file")
	}
	remove := func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, r); err != nil {
		remove()
		return "", nil, registry.Wrap(registry.Internal, err, "copying a package")
	}
	return f.Name(), remove, nil
}
