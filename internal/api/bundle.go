package api

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
)

// Air-gap bundles (apispec.RouteBundle): an export streams a tar of
// provider and module versions with their original SHA256SUMS, signatures
// and keys; an import (bundle_import.go) verifies all of it before it
// stores any of it. Both are for global admins only: an export reads any
// namespace, private ones included, and makes the mirror download; an
// import writes the mirror and every namespace a bundle names.

// exportBundle answers GET RouteBundle with the bundle of the versions
// the query names. Everything is resolved, and the mirror's missing
// packages fetched, before the first byte is written, so that a failure
// is answered as an error; a failure while streaming aborts the answer,
// so that a client never takes a truncated bundle for a whole one.
func (h *handler) exportBundle(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	q := r.URL.Query()
	sources, modules := q[apispec.BundleProviderParam], q[apispec.BundleModuleParam]
	switch n := len(sources) + len(modules); {
	case n == 0:
		return registry.Errorf(registry.Invalid, "name at least one provider (?%s=host/namespace/type@version) or module (?%s=namespace/name/system@version) to export",
			apispec.BundleProviderParam, apispec.BundleModuleParam)
	case n > apispec.MaxBundleItems:
		return registry.Errorf(registry.Invalid, "at most %d provider and module versions per bundle, got %d", apispec.MaxBundleItems, n)
	}
	platforms, err := parsePlatforms(q[apispec.BundlePlatformParam])
	if err != nil {
		return err
	}
	ctx := r.Context()
	m := apispec.BundleManifest{Format: apispec.BundleFormat, CreatedAt: h.Now().UTC(),
		Providers: []apispec.BundleProvider{}, Modules: []apispec.BundleModule{}}
	var blobs []string // in the order they are written, each once
	add := func(digest string) {
		if !slices.Contains(blobs, digest) {
			blobs = append(blobs, digest)
		}
	}
	inline := map[string][]byte{} // the provenance envelopes, which are no blobs of the store
	// carry adds a provenance envelope to the bundle and returns its digest.
	carry := func(envelope []byte) string {
		digest := sha256Hex(envelope)
		inline[digest] = envelope
		add(digest)
		m.Format = apispec.BundleFormatProvenance
		return digest
	}
	for _, s := range sources {
		p, envelope, err := h.bundleProvider(ctx, s, platforms)
		if err != nil {
			return err
		}
		if envelope != nil {
			p.Provenance.Envelope = carry(envelope)
		}
		m.Providers = append(m.Providers, p)
		add(p.SHASums)
		add(p.Signature)
		for _, pl := range p.Platforms {
			add(pl.SHA256)
		}
	}
	for _, s := range modules {
		mv, envelope, err := h.bundleModule(ctx, s)
		if err != nil {
			return err
		}
		add(mv.Archive)
		if envelope != nil {
			mv.Provenance.Envelope = carry(envelope)
		}
		m.Modules = append(m.Modules, mv)
	}
	sizes := make(map[string]int64, len(blobs))
	for _, d := range blobs {
		if e, ok := inline[d]; ok {
			sizes[d] = int64(len(e))
			continue
		}
		if sizes[d], err = h.Blobs.Stat(ctx, d); err != nil {
			return registry.Wrap(registry.KindOf(err), err, "file "+d+" of the bundle")
		}
	}
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}

	w.Header().Set("Content-Type", apispec.BundleContentType)
	w.Header().Set("Content-Disposition", `attachment; filename="trove-bundle.tar"`)
	h.Audit.Record(ctx, r, registry.AuditEvent{Action: registry.AuditBundleExport, Target: registry.Elide(strings.Join(append(slices.Clone(sources), modules...), " ")),
		Details: fmt.Sprintf("%d files", len(blobs))})
	w.WriteHeader(http.StatusOK)
	if err := h.writeBundle(ctx, w, manifest, blobs, sizes, inline); err != nil {
		h.Logger.ErrorContext(ctx, "bundle export failed while streaming: answer aborted", "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// writeBundle writes the tar: the manifest, then every blob, from inline
// when it holds it, else from the blob store.
func (h *handler) writeBundle(ctx context.Context, w io.Writer, manifest []byte, blobs []string, sizes map[string]int64, inline map[string][]byte) error {
	tw := tar.NewWriter(w)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: apispec.BundleManifestName, Mode: 0o644, Size: int64(len(manifest)), ModTime: h.Now().UTC(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	for _, d := range blobs {
		if e, ok := inline[d]; ok {
			hdr := &tar.Header{Typeflag: tar.TypeReg, Name: apispec.BundleBlobPrefix + d, Mode: 0o644, Size: int64(len(e)), Format: tar.FormatPAX}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := tw.Write(e); err != nil {
				return err
			}
			continue
		}
		if err := h.writeBlobEntry(ctx, tw, d, sizes[d]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeBlobEntry writes one blob as the entry BundleBlobPrefix+digest,
// without a modification time: a blob's entry depends on its content only.
func (h *handler) writeBlobEntry(ctx context.Context, tw *tar.Writer, digest string, size int64) error {
	b, err := h.Blobs.Open(ctx, digest)
	if err != nil {
		return err
	}
	defer b.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: apispec.BundleBlobPrefix + digest, Mode: 0o644, Size: size, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, b.Content)
	if err == nil && n != size {
		err = fmt.Errorf("blob %s has %d bytes, not %d", digest, n, size)
	}
	return err
}

// parsePlatforms parses "os_arch" values.
func parsePlatforms(values []string) ([][2]string, error) {
	var out [][2]string
	for _, v := range values {
		os, arch, ok := strings.Cut(v, "_")
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "invalid platform %q: want os_arch, e.g. linux_amd64", v)
		}
		if err := registry.ValidatePlatform(os, arch); err != nil {
			return nil, err
		}
		out = append(out, [2]string{os, arch})
	}
	return out, nil
}

// splitVersion splits "address@version" and checks the version.
func splitVersion(s, shape string) (string, string, error) {
	addr, version, ok := strings.Cut(s, "@")
	if !ok || addr == "" || version == "" {
		return "", "", registry.Errorf(registry.Invalid, "invalid %q: want %s@version", s, shape)
	}
	if _, err := registry.ParseVersion(version); err != nil {
		return "", "", err
	}
	return addr, version, nil
}

// bundleProvider returns the manifest entry of a provider version,
// "host/namespace/type@version": one of Trove's own when host is its
// public URL's, else a mirrored one, whose missing packages the mirror
// fetches now. platforms, if not empty, selects the packages. A version
// with provenance also returns its envelope, the entry's Provenance
// holding its keys (its Envelope digest is the caller's).
func (h *handler) bundleProvider(ctx context.Context, s string, platforms [][2]string) (apispec.BundleProvider, []byte, error) {
	src, version, err := splitVersion(s, "host/namespace/type")
	if err != nil {
		return apispec.BundleProvider{}, nil, err
	}
	addr, err := tfaddr.ParseProviderSource(src)
	if err != nil {
		return apispec.BundleProvider{}, nil, registry.Errorf(registry.Invalid, "invalid provider source %q: %s", src, err)
	}
	v, err := h.bundledVersion(ctx, addr, version, platforms)
	if err != nil {
		return apispec.BundleProvider{}, nil, err
	}
	envelope, keys, err := h.bundledProvenance(ctx, addr, v.Version)
	if err != nil {
		return apispec.BundleProvider{}, nil, err
	}
	p := apispec.BundleProvider{
		Source: addr.String(), Version: v.Version, Protocols: v.Protocols,
		SHASums: v.SHASumsDigest, Signature: v.SHASumsSignatureDigest,
		Key: apispec.BundleKey{KeyID: v.SigningKey.KeyID, ASCIIArmor: v.SigningKey.ASCIIArmor},
	}
	for _, pl := range v.Platforms {
		if len(platforms) > 0 && !slices.Contains(platforms, [2]string{pl.OS, pl.Arch}) {
			continue
		}
		if pl.H1 == "" { // published before Trove hashed packages, not backfilled yet
			if pl.H1, err = (&lockSource{h: h}).hashBlob(ctx, pl); err != nil {
				return apispec.BundleProvider{}, nil, err
			}
		}
		p.Platforms = append(p.Platforms, apispec.BundlePlatform{OS: pl.OS, Arch: pl.Arch, Filename: pl.Filename, SHA256: pl.SHA256, H1: pl.H1, Size: pl.Size})
	}
	if len(p.Platforms) == 0 {
		return apispec.BundleProvider{}, nil, registry.Errorf(registry.Invalid, "provider %s %s has a package for none of the platforms asked for", addr, version)
	}
	if envelope != nil {
		p.Provenance = &apispec.BundleProvenance{Keys: bundleKeys(keys)}
	}
	return p, envelope, nil
}

// bundledProvenance returns the provenance envelope of a provider
// version and the keys that verify it: of an own version, the envelope
// Trove signed and its namespace's managed keys; of a mirrored one, what
// an earlier bundle import stored. nil for a version without one.
func (h *handler) bundledProvenance(ctx context.Context, addr tfaddr.Provider, version string) ([]byte, []registry.SigningKey, error) {
	if !discovery.IsOwnHost(h.PublicURL.String(), addr.Hostname) {
		envelope, keys, err := h.Index.MirroredProvenance(ctx, addr.Hostname.String(), addr.Namespace, addr.Type, version)
		if registry.IsKind(err, registry.NotFound) {
			return nil, nil, nil
		}
		return envelope, keys, err
	}
	envelope, err := h.Index.ProviderProvenance(ctx, addr.Namespace, addr.Type, version)
	if registry.IsKind(err, registry.NotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	keys, err := h.managedKeys(ctx, addr.Namespace, fmt.Sprintf("provider %s %s", addr, version))
	if err != nil {
		return nil, nil, err
	}
	return envelope, keys, nil
}

// managedKeys returns the Trove-managed keys of namespace, which verify
// the provenance of what (a version of it) a bundle carries; Conflict
// when it has none left.
func (h *handler) managedKeys(ctx context.Context, namespace, what string) ([]registry.SigningKey, error) {
	all, err := h.Index.ListSigningKeys(ctx, namespace)
	if err != nil {
		return nil, err
	}
	var keys []registry.SigningKey
	for _, k := range all {
		if k.Managed {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, registry.Errorf(registry.Conflict, "%s has provenance, but namespace %s has no Trove-managed key left to verify it with; a bundle could not carry it", what, namespace)
	}
	return keys, nil
}

// bundleKeys returns keys as a bundle lists them.
func bundleKeys(keys []registry.SigningKey) []apispec.BundleKey {
	out := make([]apispec.BundleKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, apispec.BundleKey{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	return out
}

// sha256Hex is the lower-case hex SHA-256 of data.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// bundledVersion reads a provider version: an own one from the index, a
// mirrored one from the mirror, which first fetches the packages it does
// not hold yet of the platforms asked for (all if none).
func (h *handler) bundledVersion(ctx context.Context, addr tfaddr.Provider, version string, platforms [][2]string) (registry.ProviderVersion, error) {
	if discovery.IsOwnHost(h.PublicURL.String(), addr.Hostname) {
		v, err := h.Index.GetProviderVersion(ctx, addr.Namespace, addr.Type, version)
		if registry.IsKind(err, registry.NotFound) {
			return v, registry.Errorf(registry.NotFound, "provider %s has no version %s", addr, version)
		}
		return v, err
	}
	if h.Mirror == nil {
		return registry.ProviderVersion{}, registry.Errorf(registry.NotFound, "provider %s not found: this registry serves %s/... and mirrors no other registry", addr, h.PublicURL.Host)
	}
	host := addr.Hostname.String()
	v, err := h.Mirror.MirroredVersion(ctx, host, addr.Namespace, addr.Type, version)
	if err != nil {
		return v, err
	}
	fetched := false
	for _, pl := range v.Platforms {
		if !pl.Held() && (len(platforms) == 0 || slices.Contains(platforms, [2]string{pl.OS, pl.Arch})) {
			if err := h.Mirror.FetchPackage(ctx, registry.PackageOrigin{Host: host, Namespace: addr.Namespace, Type: addr.Type, Version: version, OS: pl.OS, Arch: pl.Arch}); err != nil {
				return v, err
			}
			fetched = true
		}
	}
	if fetched {
		return h.Mirror.MirroredVersion(ctx, host, addr.Namespace, addr.Type, version)
	}
	return v, nil
}

// bundleModule returns the manifest entry of a module version,
// "namespace/name/system@version", and its provenance envelope, if it
// has one (the entry's Provenance then holds its keys; its Envelope
// digest is the caller's).
func (h *handler) bundleModule(ctx context.Context, s string) (apispec.BundleModule, []byte, error) {
	addr, version, err := splitVersion(s, "namespace/name/system")
	if err != nil {
		return apispec.BundleModule{}, nil, err
	}
	parts := strings.Split(addr, "/")
	if len(parts) != 3 {
		return apispec.BundleModule{}, nil, registry.Errorf(registry.Invalid, "invalid module %q: want namespace/name/system@version", s)
	}
	ns, err1 := registry.ParseNamespace(parts[0])
	name, err2 := registry.ParseModuleName(parts[1])
	system, err3 := registry.ParseModuleSystem(parts[2])
	if err := firstError(err1, err2, err3); err != nil {
		return apispec.BundleModule{}, nil, err
	}
	v, err := h.Index.GetModuleVersion(ctx, ns, name, system, version)
	if registry.IsKind(err, registry.NotFound) && h.ModuleMirror != nil && h.ModuleMirror.Mirrored(ns) {
		v, err = h.ModuleMirror.FetchModule(ctx, ns, name, system, version)
	}
	if err != nil {
		return apispec.BundleModule{}, nil, err
	}
	out := apispec.BundleModule{
		Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version,
		Archive: v.ArchiveDigest, Format: v.ArchiveFormat, Size: v.ArchiveSize,
		Description: v.Description, Origin: v.Origin, Metadata: v.Metadata, PublishedAt: v.PublishedAt,
	}
	envelope, err := h.Index.ModuleProvenance(ctx, v.Namespace, v.Name, v.System, v.Version)
	if registry.IsKind(err, registry.NotFound) {
		return out, nil, nil
	}
	if err != nil {
		return apispec.BundleModule{}, nil, err
	}
	keys, err := h.Index.ModuleProvenanceKeys(ctx, v.Namespace, v.Name, v.System, v.Version)
	if registry.IsKind(err, registry.NotFound) {
		keys, err = h.managedKeys(ctx, v.Namespace, fmt.Sprintf("module %s/%s/%s %s", v.Namespace, v.Name, v.System, v.Version))
	}
	if err != nil {
		return apispec.BundleModule{}, nil, err
	}
	out.Provenance = &apispec.BundleProvenance{Keys: bundleKeys(keys)}
	return out, envelope, nil
}

// firstError returns the first error that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
