package gc

import (
	"context"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/retention"
	"trove.dev/trove/internal/store"
)

// Versions is what applying the namespaces' retention rules needs of the
// index (Options.Versions).
type Versions interface {
	store.RetentionRules
	store.Providers
	store.Modules
	store.GarbageCollection
}

// Expired is a version a retention rule deleted (in a dry run: would
// delete).
type Expired struct {
	// Kind is "provider" or "module".
	Kind string
	// Namespace, Name (the provider type or module name), System (modules
	// only) and Version name the version.
	Namespace, Name, System, Version string
	// blobs are the digests the version names, once per reference.
	blobs []string
}

// Address is "ns/type" or "ns/name/system".
func (e Expired) Address() string {
	if e.Kind == "module" {
		return e.Namespace + "/" + e.Name + "/" + e.System
	}
	return e.Namespace + "/" + e.Name
}

// applyRetention finds the versions every rule expires and, unless
// dryRun, deletes them (a version deleted meanwhile is skipped).
func (c *Collector) applyRetention(ctx context.Context, run Run) ([]Expired, error) {
	v := c.opt.Versions
	rules, err := v.ListRetentionRules(ctx)
	if err != nil {
		return nil, err
	}
	var out []Expired
	for _, rule := range rules {
		expired, err := c.expiredIn(ctx, rule)
		if err != nil {
			return nil, err
		}
		for _, e := range expired {
			if !run.DryRun {
				switch {
				case run.Delete != nil:
					err = run.Delete(ctx, e)
				case e.Kind == "module":
					err = v.DeleteModuleVersion(ctx, e.Namespace, e.Name, e.System, e.Version)
				default:
					err = v.DeleteProviderVersion(ctx, e.Namespace, e.Name, e.Version)
				}
				if registry.IsKind(err, registry.NotFound) {
					continue
				}
				if err != nil {
					return out, err
				}
				c.opt.Logger.InfoContext(ctx, "retention rule deleted a version", "kind", e.Kind, "address", e.Address(), "version", e.Version)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// expiredIn applies one namespace's rule to each of its providers and
// modules.
func (c *Collector) expiredIn(ctx context.Context, rule registry.RetentionRule) ([]Expired, error) {
	v, ns, now := c.opt.Versions, rule.Namespace, c.opt.Now()
	var out []Expired
	providers, err := v.ListProviders(ctx, ns)
	if registry.IsKind(err, registry.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, p := range providers {
		versions, err := v.ListProviderVersions(ctx, ns, p.Type)
		if registry.IsKind(err, registry.NotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		byVersion := map[string]registry.ProviderVersion{}
		in := make([]retention.Version, 0, len(versions))
		for _, pv := range versions {
			byVersion[pv.Version] = pv
			in = append(in, retention.Version{Version: pv.Version, PublishedAt: pv.PublishedAt,
				Deprecated: pv.Deprecation != nil, Revoked: pv.Revocation != nil})
		}
		names, err := retention.Expired(rule, in, now)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			pv := byVersion[name]
			blobs := []string{pv.SHASumsDigest, pv.SHASumsSignatureDigest}
			for _, pl := range pv.Platforms {
				blobs = append(blobs, pl.SHA256)
			}
			if pv.DocsDigest != "" {
				blobs = append(blobs, pv.DocsDigest)
			}
			out = append(out, Expired{Kind: "provider", Namespace: ns, Name: p.Type, Version: name, blobs: blobs})
		}
	}
	for offset := 0; ; {
		mods, total, err := v.ListModules(ctx, registry.ModuleFilter{Namespace: ns, Offset: offset, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, m := range mods {
			versions, err := v.ListModuleVersions(ctx, ns, m.Name, m.System)
			if registry.IsKind(err, registry.NotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			byVersion := map[string]registry.ModuleVersion{}
			in := make([]retention.Version, 0, len(versions))
			for _, mv := range versions {
				byVersion[mv.Version] = mv
				in = append(in, retention.Version{Version: mv.Version, PublishedAt: mv.PublishedAt,
					Deprecated: mv.Deprecation != nil, Revoked: mv.Revocation != nil})
			}
			names, err := retention.Expired(rule, in, now)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				out = append(out, Expired{Kind: "module", Namespace: ns, Name: m.Name, System: m.System, Version: name,
					blobs: []string{byVersion[name].ArchiveDigest}})
			}
		}
		offset += len(mods)
		if len(mods) == 0 || offset >= total {
			return out, nil
		}
	}
}

// freedBy returns the digests that only the expired versions name (in a
// dry run, where they are not deleted): those whose references are all
// theirs.
func (c *Collector) freedBy(ctx context.Context, expired []Expired) (map[string]bool, error) {
	refs := map[string]int{}
	for _, e := range expired {
		for _, d := range e.blobs {
			refs[d]++
		}
	}
	freed := map[string]bool{}
	for d, n := range refs {
		total, err := c.opt.Index.BlobReferences(ctx, d)
		if err != nil {
			return nil, err
		}
		if total <= n {
			freed[d] = true
		}
	}
	return freed, nil
}
