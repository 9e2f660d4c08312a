package operations

import (
	"context"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
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
// Issuer, Repository, Refs and ImportKeys (registry.ProvenancePolicy.Validate),
// for its admins: from then on every provider and module publish into the
// namespace must come from a keyless token whose CI claims the policy
// admits, and every module a bundle brings into it must carry provenance
// that verifies with one of the import keys. Each import key's ASCIIArmor
// must be an OpenPGP public key (signing.ParsePublicKey); its KeyID, when
// given, must be that key's. It returns the policy as stored.
func (o *Operations) SetProvenancePolicy(ctx context.Context, a Actor, namespace string, p registry.ProvenancePolicy) (registry.ProvenancePolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.ProvenancePolicy{}, err
	}
	keys, err := parseImportKeys(ns, p.ImportKeys)
	if err != nil {
		return registry.ProvenancePolicy{}, err
	}
	p = registry.ProvenancePolicy{Namespace: ns, Issuer: p.Issuer, Repository: p.Repository, Refs: p.Refs, ImportKeys: keys,
		UpdatedAt: o.opt.Now().UTC().Truncate(time.Microsecond), UpdatedBy: a.name()}
	if err := p.Validate(); err != nil {
		return registry.ProvenancePolicy{}, err
	}
	details := "repository " + p.Repository + " refs " + p.Refs + " issuer " + p.Issuer
	if len(keys) > 0 {
		ids := make([]string, 0, len(keys))
		for _, k := range keys {
			ids = append(ids, k.KeyID)
		}
		details += " import keys " + strings.Join(ids, ",")
	}
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

// parseImportKeys parses the import keys of a policy of namespace ns:
// each must be one ASCII-armored OpenPGP public key that can verify
// (signing.ParsePublicKey), listed once, and match the key ID it is given
// with, when one is; at most registry.MaxPolicyImportKeys.
func parseImportKeys(ns string, keys []registry.SigningKey) ([]registry.SigningKey, error) {
	if len(keys) > registry.MaxPolicyImportKeys {
		return nil, registry.Errorf(registry.Invalid, "a provenance policy has at most %d import keys; this one has %d", registry.MaxPolicyImportKeys, len(keys))
	}
	out := make([]registry.SigningKey, 0, len(keys))
	for i, k := range keys {
		what := fmt.Sprintf("import key %d", i+1)
		if k.KeyID != "" {
			what += " (" + registry.Elide(k.KeyID) + ")"
		}
		parsed, err := signing.ParsePublicKey(k.ASCIIArmor)
		if err != nil {
			return nil, registry.Wrap(registry.Invalid, err, what+" of the provenance policy; give the exporting Trove's public key (trove key list NAMESPACE there, or GET /api/v1/namespaces/{ns}/keys)")
		}
		if k.KeyID != "" && !strings.EqualFold(k.KeyID, parsed.KeyID) {
			return nil, registry.Errorf(registry.Invalid, "%s of the provenance policy is the key %s, not %s", what, parsed.KeyID, registry.Elide(k.KeyID))
		}
		parsed.Namespace = ns
		out = append(out, parsed)
	}
	return out, nil
}
