package publish

import (
	"trove.dev/trove/internal/provenance"
)

// signProvenance makes the version's provenance: an in-toto statement of
// its archives and origin (provenance.WithOrigin), signed with the
// namespace's managed key in a DSSE envelope (provenance.SignRelease). A
// namespace without a managed key (or a Trove without Managed) gets none.
// A managed key that cannot sign now refuses the publish, as it refuses an
// unsigned release: a version of a namespace with a managed key never goes
// without its provenance.
func (pub *publication) signProvenance() error {
	v := &pub.v
	rel := provenance.Release{Namespace: v.Namespace, Type: v.Type, Version: v.Version,
		Archives: map[string]string{}, PublishedAt: v.PublishedAt}
	for _, pl := range v.Platforms {
		rel.Archives[pl.Filename] = pl.SHA256
	}
	o, _ := provenance.OriginFrom(pub.ctx)
	env, err := provenance.SignRelease(pub.ctx, rel, o, pub.p.opt.Managed, pub.p.opt.Logger)
	if err != nil {
		return err
	}
	v.Provenance = env
	return nil
}
