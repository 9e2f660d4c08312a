package publish

import (
	"context"
	"fmt"
	"io"
	"os"

	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/staging"
)

// DocsResult reports the outcome of PublishDocs: the version with its
// documentation, the documentation's pages, and Created false when the
// version had that very archive already.
type DocsResult struct {
	Version registry.ProviderVersion
	Docs    *providerdocs.Docs
	Created bool
}

// PublishDocs stores archive, a documentation archive (package
// providerdocs), as the documentation of an existing provider version.
// The archive is staged while it is hashed, within
// registry.MaxProviderDocsBytes, and parsed with providerdocs before
// anything is stored; then its blob is stored and the index records it
// (store.Providers.SetProviderDocs). Uploading the archive the version
// has already succeeds with Created false; another archive when the
// version has documentation is a Conflict, an unknown version NotFound.
func (p *Publisher) PublishDocs(ctx context.Context, namespace, typ, version string, archive io.Reader) (DocsResult, error) {
	ns, err := registry.ParseNamespace(namespace)
	if err != nil {
		return DocsResult{}, err
	}
	if typ, err = registry.ParseProviderType(typ); err != nil {
		return DocsResult{}, err
	}
	if _, err := registry.ParseVersion(version); err != nil {
		return DocsResult{}, err
	}
	v, err := p.opt.Index.GetProviderVersion(ctx, ns, typ, version)
	if registry.IsKind(err, registry.NotFound) {
		return DocsResult{}, registry.Errorf(registry.NotFound, "provider %s/%s has no version %s: publish the version first (trove publish), then its documentation", ns, typ, version)
	}
	if err != nil {
		return DocsResult{}, err
	}

	f, err := p.stage.CreateFile("*.docs")
	if err != nil {
		return DocsResult{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, digest, err := staging.Copy(f, archive, registry.MaxProviderDocsBytes, "the documentation archive")
	if err != nil {
		return DocsResult{}, err
	}
	if n == 0 {
		return DocsResult{}, registry.Errorf(registry.Invalid, "the documentation archive is empty: send the .tar.gz or .zip of the docs directory")
	}
	if v.DocsDigest != "" && v.DocsDigest != digest {
		return DocsResult{}, docsConflict(v)
	}
	docs, err := providerdocs.Parse(f, n)
	if err != nil {
		return DocsResult{}, err
	}
	if v.DocsDigest == digest {
		return DocsResult{Version: v, Docs: docs}, nil
	}
	if err := f.Sync(); err != nil {
		return DocsResult{}, err
	}
	if err := staging.Store(ctx, p.opt.Blobs, digest, n, f.Name()); err != nil {
		return DocsResult{}, fmt.Errorf("store the documentation archive: %w", err)
	}
	// Of concurrent uploads of this archive (which all found the version
	// without documentation above), the index tells the one that recorded
	// it: the others are retries.
	created, err := p.opt.Index.SetProviderDocs(ctx, ns, typ, version, digest, n)
	if registry.IsKind(err, registry.Conflict) {
		// A concurrent upload of another archive won.
		if v, gerr := p.opt.Index.GetProviderVersion(ctx, ns, typ, version); gerr == nil {
			return DocsResult{}, docsConflict(v)
		}
	}
	if err != nil {
		return DocsResult{}, err
	}
	if !created {
		v, err := p.opt.Index.GetProviderVersion(ctx, ns, typ, version)
		if err != nil {
			return DocsResult{}, err
		}
		return DocsResult{Version: v, Docs: docs}, nil
	}
	v.DocsDigest, v.DocsSize = digest, n
	p.opt.Logger.InfoContext(ctx, "published provider documentation",
		"namespace", ns, "type", typ, "version", version, "pages", len(docs.Pages), "digest", digest)
	return DocsResult{Version: v, Docs: docs, Created: true}, nil
}

// docsConflict is the refusal of other documentation for v.
func docsConflict(v registry.ProviderVersion) error {
	return registry.Errorf(registry.Conflict,
		"%s/%s %s has other documentation already (archive %s); a version and its documentation are immutable: publish a new version to change the documentation",
		v.Namespace, v.Type, v.Version, v.DocsDigest)
}
