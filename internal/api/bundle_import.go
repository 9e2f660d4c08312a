package api

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/staging"
)

// bundleStagePrefix names the staging directories of imports. It starts
// with the provider publish's prefix ("publish-"), so that the start-up
// sweep of a crashed server's uploads (publish.RemoveStaleUploads)
// removes a crashed import's files too.
const bundleStagePrefix = "publish-bundle-"

// importBundle answers POST RouteBundle: it stages every file of the tar
// in the body, checking each against the digest it is named by, then
// verifies everything (each provider's signature over its SHA256SUMS
// with its key, judged when the signature was made; each package against
// SHA256SUMS, its size and its h1 hash, and as a provider publish checks
// it; each module version as a module publish checks it), and only then
// stores the files and writes the index in one transaction. Nothing is
// written for a bundle that fails a check; the staged files are removed
// in any case.
func (h *handler) importBundle(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	ctx := r.Context()
	body := http.MaxBytesReader(w, r.Body, h.MaxUploadBytes)
	dir, err := staging.Dir{Path: h.TempDir, Prefix: bundleStagePrefix}.MkdirTemp("*")
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating the staging directory of a bundle")
	}
	defer os.RemoveAll(dir)

	tr := tar.NewReader(body)
	m, err := readManifest(tr)
	if err != nil {
		return err
	}
	imp, err := h.checkManifest(ctx, m)
	if err != nil {
		return err
	}
	sizes, err := stageBlobs(tr, dir, imp.needed, h.MaxUploadBytes)
	if err != nil {
		return err
	}
	for _, d := range imp.order {
		if _, ok := sizes[d]; !ok {
			return registry.Errorf(registry.Invalid, "the bundle lacks the file %s%s (%s)", apispec.BundleBlobPrefix, d, imp.needed[d])
		}
	}
	// operations.ImportBundle owns the rest: every package and module is
	// checked as a publish checks it, then stored in one transaction with
	// its audit entry and events.
	done, err := h.Ops.ImportBundle(ctx, actor(r), operations.Bundle{Dir: dir, Sizes: sizes, Files: imp.order,
		Providers: imp.providers, Sources: imp.sources, Modules: imp.modules})
	if err != nil {
		return err
	}
	out := apispec.BundleImportResult{Providers: []apispec.BundleImportedProvider{}, Modules: []apispec.BundleImportedModule{}}
	for i, p := range m.Providers {
		out.Providers = append(out.Providers, apispec.BundleImportedProvider{Source: imp.sources[i], Version: p.Version, Packages: done.Providers[i]})
	}
	for i, v := range done.ModuleVersions {
		out.Modules = append(out.Modules, apispec.BundleImportedModule{Address: v.Namespace + "/" + v.Name + "/" + v.System, Version: v.Version, Created: done.Modules[i]})
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// readManifest reads the first entry of a bundle, its manifest.
func readManifest(tr *tar.Reader) (apispec.BundleManifest, error) {
	var m apispec.BundleManifest
	hdr, err := tr.Next()
	if err != nil {
		return m, bundleReadError(err, "its manifest")
	}
	if hdr.Name != apispec.BundleManifestName || hdr.Typeflag != tar.TypeReg {
		return m, registry.Errorf(registry.Invalid, "not a Trove bundle: its first file is %q, not %s", hdr.Name, apispec.BundleManifestName)
	}
	if hdr.Size > apispec.MaxBundleManifestBytes {
		return m, registry.Errorf(registry.TooLarge, "the bundle's %s is larger than %d MiB", apispec.BundleManifestName, apispec.MaxBundleManifestBytes>>20)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return m, bundleReadError(err, "its manifest")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, registry.Errorf(registry.Invalid, "the bundle's %s does not parse: %v", apispec.BundleManifestName, err)
	}
	if m.Format != apispec.BundleFormat {
		return m, registry.Errorf(registry.Invalid, "the bundle's format is %q; this Trove reads %q", m.Format, apispec.BundleFormat)
	}
	if n := len(m.Providers) + len(m.Modules); n == 0 || n > apispec.MaxBundleItems {
		return m, registry.Errorf(registry.Invalid, "a bundle holds 1 to %d provider and module versions; this one has %d", apispec.MaxBundleItems, n)
	}
	return m, nil
}

// bundleReadError describes a failure to read the tar: a body over the
// limit stays a *http.MaxBytesError (TooLarge), anything else is an
// invalid bundle.
func bundleReadError(err error, what string) error {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return err
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return registry.Errorf(registry.Invalid, "reading the bundle's %s: %v", what, err)
}

// bundleImport is a checked manifest: what to store, once verified.
type bundleImport struct {
	providers []registry.MirroredVersion
	sources   []string // of providers, as addresses print
	modules   []registry.ModuleVersion
	needed    map[string]string // digest -> what it is, for messages
	order     []string          // the digests of needed, in manifest order
	versions  map[string]bool   // the versions named so far, as messages name them
}

// once refuses a version (what names it) that the manifest names twice.
func (b *bundleImport) once(what string) error {
	if b.versions[what] {
		return registry.Errorf(registry.Invalid, "the bundle's manifest names %s twice", what)
	}
	b.versions[what] = true
	return nil
}

// need records that the bundle must hold the file digest.
func (b *bundleImport) need(digest, what string) error {
	if err := registry.CheckDigest(digest); err != nil {
		return registry.Errorf(registry.Invalid, "%s: invalid digest %q", what, digest)
	}
	if _, ok := b.needed[digest]; !ok {
		b.needed[digest] = what
		b.order = append(b.order, digest)
	}
	return nil
}

// checkManifest checks the names, versions and digests of a manifest and
// the namespaces of its modules, and returns what to import.
func (h *handler) checkManifest(ctx context.Context, m apispec.BundleManifest) (*bundleImport, error) {
	b := &bundleImport{needed: map[string]string{}, versions: map[string]bool{}}
	now := h.Now().UTC()
	for _, p := range m.Providers {
		addr, err := tfaddr.ParseProviderSource(p.Source)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "invalid provider source %q in the bundle: %s", p.Source, err)
		}
		if discovery.IsOwnHost(h.PublicURL.String(), addr.Hostname) {
			return nil, registry.Errorf(registry.Invalid, "provider %s is one of this registry's own (its host is %s): publish it to its namespace instead of importing it", addr, h.PublicURL.Host)
		}
		if _, err := registry.ParseVersion(p.Version); err != nil {
			return nil, err
		}
		what := fmt.Sprintf("provider %s %s", addr, p.Version)
		if err := b.once(what); err != nil {
			return nil, err
		}
		protocols, err := release.CheckProtocols(p.Protocols)
		if err != nil {
			return nil, registry.Wrap(registry.Invalid, err, what)
		}
		if _, err := registry.ParseKeyID(p.Key.KeyID); err != nil {
			return nil, registry.Wrap(registry.Invalid, err, what)
		}
		if err := firstError(b.need(p.SHASums, "the SHA256SUMS of "+what), b.need(p.Signature, "the signature of "+what)); err != nil {
			return nil, err
		}
		if len(p.Platforms) == 0 {
			return nil, registry.Errorf(registry.Invalid, "%s has no packages in the bundle", what)
		}
		v := registry.MirroredVersion{Host: addr.Hostname.String(), ProviderVersion: registry.ProviderVersion{
			Namespace: addr.Namespace, Type: addr.Type, Version: p.Version, Protocols: protocols,
			SHASumsDigest: p.SHASums, SHASumsSignatureDigest: p.Signature,
			SigningKey:  registry.SigningKey{Namespace: addr.Namespace, KeyID: p.Key.KeyID, ASCIIArmor: p.Key.ASCIIArmor},
			PublishedAt: now,
		}}
		for _, pl := range p.Platforms {
			if err := registry.ValidatePlatform(pl.OS, pl.Arch); err != nil {
				return nil, err
			}
			if pl.Size < 1 || !strings.HasPrefix(pl.H1, "h1:") {
				return nil, registry.Errorf(registry.Invalid, "%s: the package of %s_%s has no size or h1 hash in the manifest", what, pl.OS, pl.Arch)
			}
			if err := b.need(pl.SHA256, fmt.Sprintf("the %s_%s package of %s", pl.OS, pl.Arch, what)); err != nil {
				return nil, err
			}
			v.Platforms = append(v.Platforms, registry.Platform{OS: pl.OS, Arch: pl.Arch, Filename: pl.Filename, SHA256: pl.SHA256, Size: pl.Size, H1: pl.H1})
		}
		if err := registry.CheckPlatforms(v.ProviderVersion); err != nil {
			return nil, err
		}
		b.providers = append(b.providers, v)
		b.sources = append(b.sources, addr.String())
	}
	for _, bm := range m.Modules {
		addr, err := modules.ParseAddress(bm.Namespace, bm.Name, bm.System, bm.Version)
		if err != nil {
			return nil, err
		}
		ns, name, system := addr.Namespace, addr.Name, addr.System
		what := fmt.Sprintf("module %s/%s/%s %s", ns, name, system, bm.Version)
		if err := b.once(what); err != nil {
			return nil, err
		}
		if bm.Format != "tar.gz" && bm.Format != "zip" {
			return nil, registry.Errorf(registry.Invalid, "%s: unknown archive format %q", what, bm.Format)
		}
		if bm.Size < 1 {
			return nil, registry.Errorf(registry.Invalid, "%s: its archive has no size in the manifest", what)
		}
		if err := b.need(bm.Archive, "the archive of "+what); err != nil {
			return nil, err
		}
		if _, err := h.Index.GetNamespace(ctx, ns); err != nil {
			if registry.IsKind(err, registry.NotFound) {
				return nil, registry.Errorf(registry.NotFound, "%s goes into namespace %q, which this Trove does not have: create it first (trove namespace create %s)", what, ns, ns)
			}
			return nil, err
		}
		published := bm.PublishedAt
		if published.IsZero() {
			published = now
		}
		var metadata []byte // checked, then replaced by the archive's (modules.Publisher.CheckImport)
		if len(bm.Metadata) > 0 && string(bm.Metadata) != "null" {
			metadata = bm.Metadata
		}
		b.modules = append(b.modules, registry.ModuleVersion{
			Namespace: ns, Name: name, System: system, Version: bm.Version,
			ArchiveDigest: bm.Archive, ArchiveFormat: bm.Format, ArchiveSize: bm.Size,
			Metadata: metadata, Description: bm.Description, Origin: bm.Origin, PublishedAt: published,
		})
	}
	return b, nil
}

// stageBlobs copies every further entry of the tar into dir, named by its
// digest, and returns the sizes by digest. Each entry must be a regular
// file named BundleBlobPrefix+digest, hold content of that digest, be one
// the manifest names and come once.
func stageBlobs(tr *tar.Reader, dir string, needed map[string]string, limit int64) (map[string]int64, error) {
	sizes := map[string]int64{}
	var staged int64 // the request's bytes are bounded on the wire; these are bounded here
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return sizes, nil
		}
		if err != nil {
			return nil, bundleReadError(err, "files")
		}
		digest, ok := strings.CutPrefix(hdr.Name, apispec.BundleBlobPrefix)
		switch {
		case !ok || hdr.Typeflag != tar.TypeReg || registry.CheckDigest(digest) != nil:
			return nil, registry.Errorf(registry.Invalid, "the bundle holds %q, which is not a file %s<sha256>", hdr.Name, apispec.BundleBlobPrefix)
		case needed[digest] == "":
			return nil, registry.Errorf(registry.Invalid, "the bundle holds %s, which its manifest does not name", hdr.Name)
		}
		if _, ok := sizes[digest]; ok {
			return nil, registry.Errorf(registry.Invalid, "the bundle holds %s twice", hdr.Name)
		}
		// A sparse entry (GNU or PAX) unpacks to more than it sends: a few
		// KB could stage gigabytes. A bundle never has one.
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				return nil, registry.Errorf(registry.Invalid, "the bundle's file %s is a sparse tar entry; bundles hold plain files", hdr.Name)
			}
		}
		if hdr.Size < 0 || staged+hdr.Size > limit {
			return nil, registry.Errorf(registry.TooLarge, "the bundle's files add up to more than %d bytes", limit)
		}
		staged += hdr.Size
		n, got, err := stageFile(filepath.Join(dir, digest), tr, limit, hdr.Name)
		if err != nil {
			return nil, err
		}
		if got != digest {
			return nil, registry.Errorf(registry.Invalid, "the bundle's file %s (%s) holds content of digest %s: it was changed or damaged", hdr.Name, needed[digest], got)
		}
		sizes[digest] = n
	}
}

// stageFile copies r into a new file at path, synced, and returns its
// size and digest.
func stageFile(path string, r io.Reader, limit int64, what string) (int64, string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, "", registry.Wrap(registry.Internal, err, "staging "+what)
	}
	defer f.Close()
	n, digest, err := staging.Copy(f, r, limit, what)
	if err != nil {
		if registry.IsKind(err, registry.TooLarge) {
			return 0, "", err
		}
		return 0, "", bundleReadError(err, what)
	}
	if err := f.Sync(); err != nil {
		return 0, "", registry.Wrap(registry.Internal, err, "staging "+what)
	}
	return n, digest, f.Close()
}
