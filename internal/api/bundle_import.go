package api

import (
	"archive/tar"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
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
	body, err := httpjson.Body(w, r, h.MaxUploadBytes)
	if err != nil {
		return err
	}
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
	// operations decides: the manifest's rules first, then, once the
	// files are staged, every package, module and provenance is checked
	// as a publish checks it and stored in one transaction with its audit
	// entry and events.
	b, needed, err := h.Ops.CheckBundleManifest(ctx, actor(r), m)
	if err != nil {
		return err
	}
	sizes, err := stageBlobs(tr, dir, needed, h.MaxUploadBytes)
	if err != nil {
		return err
	}
	// ImportBundle refuses a bundle that lacks a file its manifest names
	// (a blob or a provenance envelope): one rule, in operations.
	b.Dir, b.Sizes = dir, sizes
	done, err := h.Ops.ImportBundle(ctx, actor(r), b)
	if err != nil {
		return err
	}
	out := apispec.BundleImportResult{Providers: []apispec.BundleImportedProvider{}, Modules: []apispec.BundleImportedModule{}}
	for i, p := range m.Providers {
		out.Providers = append(out.Providers, apispec.BundleImportedProvider{Source: b.Sources[i], Version: p.Version, Packages: done.Providers[i]})
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
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return m, err
		}
		return m, registry.Errorf(registry.Invalid, "not a Trove bundle: the body is not a tar archive that starts with %s (make one with trove bundle export)", apispec.BundleManifestName)
	}
	if hdr.Name != apispec.BundleManifestName || hdr.Typeflag != tar.TypeReg {
		return m, registry.Errorf(registry.Invalid, "not a Trove bundle: its first file is %q, not %s", hdr.Name, apispec.BundleManifestName)
	}
	if hdr.Size > apispec.MaxBundleManifestBytes {
		return m, registry.Errorf(registry.TooLarge, "the bundle's %s is larger than %d MiB", apispec.BundleManifestName, apispec.MaxBundleManifestBytes>>20)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		return m, bundleReadError(err, apispec.BundleManifestName)
	}
	// The API's rules for a JSON document: a member given twice, or data
	// after the object, would leave what counts to the reader.
	return m, httpjson.Unmarshal(data, &m, "bundle "+apispec.BundleManifestName)
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
