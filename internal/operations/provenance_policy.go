package operations

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ProvenancePolicy returns the provenance policy of namespace, for those
// who may read the namespace; NotFound if it has none.
func (o *Operations) ProvenancePolicy(ctx context.Context, a Actor, namespace string) (registry.ProvenancePolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeRead)
	if err != nil {
		return registry.ProvenancePolicy{}, err
	}
	return o.opt.Index.GetProvenancePolicy(ctx, ns)
}

// SetProvenancePolicy sets the provenance policy of namespace to p's
// Issuer, Repository and Refs (registry.ProvenancePolicy.Validate), for
// its admins: from then on every provider and module publish into the
// namespace must come from a keyless token whose CI claims the policy
// admits. It returns the policy as stored.
func (o *Operations) SetProvenancePolicy(ctx context.Context, a Actor, namespace string, p registry.ProvenancePolicy) (registry.ProvenancePolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.ProvenancePolicy{}, err
	}
	p = registry.ProvenancePolicy{Namespace: ns, Issuer: p.Issuer, Repository: p.Repository, Refs: p.Refs,
		UpdatedAt: o.opt.Now().UTC().Truncate(time.Microsecond), UpdatedBy: a.name()}
	if err := p.Validate(); err != nil {
		return registry.ProvenancePolicy{}, err
	}
	details := "repository " + p.Repository + " refs " + p.Refs + " issuer " + p.Issuer
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditProvenancePolicySet, Namespace: ns, Target: ns, Details: details}})
	if err := o.opt.Index.PutProvenancePolicy(store.WithEffects(ctx, fx), p); err != nil {
		return registry.ProvenancePolicy{}, err
	}
	o.done(ctx, fx)
	return p, nil
}

// DeleteProvenancePolicy removes the provenance policy of namespace, for
// its admins; NotFound if it has none.
func (o *Operations) DeleteProvenancePolicy(ctx context.Context, a Actor, namespace string) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditProvenancePolicyDelete, Namespace: ns, Target: ns}})
	if err := o.opt.Index.DeleteProvenancePolicy(store.WithEffects(ctx, fx), ns); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// admitPublish checks a publish into namespace ns by a, whose origin is
// origin, against the namespace's provenance policy: nil without one, or
// for the operator's own publishes (the module mirror and git sources
// publish as the server, from sources an admin configured).
func (o *Operations) admitPublish(ctx context.Context, a Actor, ns string, ci *registry.CIClaims) error {
	if a.Operator != "" {
		return nil
	}
	p, err := o.opt.Index.GetProvenancePolicy(ctx, ns)
	if registry.IsKind(err, registry.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.Admits(ci)
}
