package provenance

import (
	"context"
	"log/slog"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
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

// WithOrigin returns ctx carrying o: the publishers (internal/publish,
// internal/modules) sign the provenance of what they publish under it.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the Origin WithOrigin put in ctx, and false (with
// the zero Origin) without one.
func OriginFrom(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok
}

// Statement returns the statement of rel published by o: keyless with
// CI claims, else naming the token and its user.
func (o Origin) Statement(rel Release) Statement {
	if o.CI != nil {
		return NewKeyless(rel, *o.CI)
	}
	return NewPublish(rel, Identity{User: o.User, TokenID: o.TokenID})
}

// SignRelease makes the provenance of rel published by o: its statement,
// signed with the managed key of rel's namespace in a DSSE envelope
// (JSON). It returns nil without an error when there is nothing to sign
// with: m is nil (a Trove without managed keys) or the namespace has no
// managed key. A managed key that cannot sign now is Unavailable (the
// cause goes to log): the caller refuses the publish, as a version of a
// namespace with a managed key never goes without its provenance.
func SignRelease(ctx context.Context, rel Release, o Origin, m *signing.Managed, log *slog.Logger) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	env, _, err := Sign(ctx, o.Statement(rel), func(ctx context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return m.Sign(ctx, rel.Namespace, data)
	})
	switch {
	case registry.IsKind(err, registry.NotFound):
		return nil, nil
	case registry.IsKind(err, registry.Unavailable):
		if log != nil {
			log.ErrorContext(ctx, "cannot sign the provenance with the namespace's managed key", "namespace", rel.Namespace, "err", err)
		}
		return nil, registry.Errorf(registry.Unavailable,
			"this Trove cannot sign the provenance with the managed key of namespace %s now: its signing secret is unavailable (the server log says why); try again later or ask the operator", rel.Namespace)
	case err != nil:
		return nil, err
	}
	return env, nil
}
