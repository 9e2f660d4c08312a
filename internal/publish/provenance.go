package publish

import (
	"context"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
)

// Origin is who publishes a release, for its provenance statement: the
// CI pipeline a keyless token was issued to (CI), or else the token and,
// for a personal token, its user.
type Origin struct {
	CI      *registry.CIClaims
	User    string
	TokenID string
}

type originKey struct{}

// WithOrigin returns ctx carrying o, for the provenance of what
// PublishProvider publishes under it.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the Origin WithOrigin put in ctx (zero without).
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

// signProvenance makes the version's provenance: an in-toto statement of
// its archives and origin, signed with the namespace's managed key in a
// DSSE envelope. A namespace without a managed key (or a Trove without
// Managed) gets none. A managed key that cannot sign now refuses the
// publish, as it refuses an unsigned release: a version of a namespace
// with a managed key never goes without its provenance.
func (pub *publication) signProvenance() error {
	m := pub.p.opt.Managed
	if m == nil {
		return nil
	}
	v := &pub.v
	rel := provenance.Release{Namespace: v.Namespace, Type: v.Type, Version: v.Version,
		Archives: map[string]string{}, PublishedAt: v.PublishedAt}
	for _, pl := range v.Platforms {
		rel.Archives[pl.Filename] = pl.SHA256
	}
	o := OriginFrom(pub.ctx)
	var s provenance.Statement
	if o.CI != nil {
		s = provenance.NewKeyless(rel, *o.CI)
	} else {
		s = provenance.NewPublish(rel, provenance.Identity{User: o.User, TokenID: o.TokenID})
	}
	env, _, err := provenance.Sign(pub.ctx, s, func(ctx context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return m.Sign(ctx, v.Namespace, data)
	})
	switch {
	case registry.IsKind(err, registry.NotFound):
		return nil
	case registry.IsKind(err, registry.Unavailable):
		pub.p.opt.Logger.ErrorContext(pub.ctx, "cannot sign the provenance with the namespace's managed key", "namespace", v.Namespace, "err", err)
		return registry.Errorf(registry.Unavailable,
			"this Trove cannot sign the provenance with the managed key of namespace %s now: its signing secret is unavailable (the server log says why); try again later or ask the operator", v.Namespace)
	case err != nil:
		return err
	}
	v.Provenance = env
	return nil
}
