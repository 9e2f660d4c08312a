package ocitransfer

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/registry"
)

// Puller copies one provider or module version from a registry into a
// Trove namespace through Trove's publish API, so that every rule of the
// server applies.
type Puller struct {
	Source Registry
	API    *client.Client
	Keys   KeysFunc
	Log    Logf
	Now    func() time.Time
}

// PullResult is what Pull published.
type PullResult struct {
	Digest  string `json:"digest"` // of the index or manifest read
	Version string `json:"version"`
	Created bool   `json:"created"` // false: the very same version was already published
}

// Pull reads the artifact ref (a tag, or a digest "sha256:...") names in
// the source repository path and publishes it as version of it (a
// provider Namespace/Type or a module Namespace/Name/System). version ""
// takes the version from the tag. Everything is fetched and checked
// before anything is sent to Trove: the digest of every document and
// blob, the shape OpenTofu expects, and, for a provider, that the
// SHA256SUMS attached to the index is signed by a key the target
// namespace trusts and lists every package.
func (p *Puller) Pull(ctx context.Context, path, ref string, it Item, ver string) (PullResult, error) {
	var res PullResult
	repo, err := p.Source.repo(path)
	if err != nil {
		return res, err
	}
	if ver == "" {
		if checkDigest(ref) == nil {
			return res, registry.Errorf(registry.Invalid, "pulling by digest needs the version to publish as (--version)")
		}
		ver = oci.VersionOf(ref)
	}
	if _, err := registry.ParseVersion(ver); err != nil {
		return res, registry.Errorf(registry.Invalid, "%q is not a version (%s): give the version to publish as with --version", ver, registry.Message(err))
	}
	res.Version = ver
	dir, err := os.MkdirTemp("", "trove-oci-pull-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	now := time.Now()
	if p.Now != nil {
		now = p.Now()
	}
	if it.Type != "" {
		keys, err := p.Keys(ctx, it.Namespace)
		if err != nil {
			return res, fmt.Errorf("reading the signing keys of namespace %s: %w", it.Namespace, err)
		}
		if len(keys) == 0 {
			return res, registry.Errorf(registry.Invalid, "namespace %s has no signing key: add the key that signed the release (trove key add) so the pull can verify it", it.Namespace)
		}
		if checkDigest(ref) == nil {
			return res, registry.Errorf(registry.Invalid, "pull a provider by its tag (the version), not by digest")
		}
		pv, err := readProvider(ctx, p.Source, repo, ref, keys, now, dir)
		if err != nil {
			return res, err
		}
		p.Log.printf("Verified %s:%s: SHA256SUMS signed by key %s lists all %d packages; every digest matches", repo.Name(), ref, pv.keyID, len(pv.zips))
		base := "terraform-provider-" + it.Type + "_" + ver + "_SHA256SUMS"
		files := []client.PublishFile{memFile(base, pv.sums), memFile(base+".sig", pv.sig)}
		for _, e := range pv.extras {
			files = append(files, memFile(e.name, e.data))
		}
		for i, z := range pv.zips {
			files = append(files, client.PublishFile{Name: pv.filenames[i], Open: func() (io.ReadCloser, error) { return z.Compressed() }})
		}
		out, err := p.API.PublishProvider(ctx, it.Namespace, it.Type, ver, files)
		if err != nil {
			return res, err
		}
		res.Digest, res.Created = pv.indexDesc.Digest, out.Created
		return res, nil
	}
	mv, err := readModule(ctx, p.Source, repo, ref, dir)
	if err != nil {
		return res, err
	}
	p.Log.printf("Verified %s@%s: the module package matches its digest", repo.Name(), mv.desc.Digest)
	f, err := mv.zip.Compressed()
	if err != nil {
		return res, err
	}
	defer f.Close()
	out, err := p.API.PublishModule(ctx, client.ModuleUpload{
		Namespace: it.Namespace, Name: it.Name, System: it.System, Version: ver,
		Archive: f, ContentType: apispec.ModuleArchiveZip,
		Origin: fmt.Sprintf("oci://%s@%s", repo.Name(), mv.desc.Digest),
	})
	if err != nil {
		return res, err
	}
	res.Digest, res.Created = mv.desc.Digest, out.Created
	return res, nil
}

func memFile(name string, data []byte) client.PublishFile {
	return client.PublishFile{Name: name, Open: func() (io.ReadCloser, error) { return memBlob(data, "").Compressed() }}
}
