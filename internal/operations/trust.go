package operations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TrustPolicies lists the trust policies of namespace (keyless
// publishing, docs/keyless.md), for its admins.
func (o *Operations) TrustPolicies(ctx context.Context, a Actor, namespace string) ([]registry.TrustPolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	return o.opt.Index.ListTrustPolicies(ctx, ns)
}

// TrustPolicy returns the trust policy id of namespace, for its admins.
func (o *Operations) TrustPolicy(ctx context.Context, a Actor, namespace, id string) (registry.TrustPolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.TrustPolicy{}, err
	}
	if id, err = registry.ParseTrustPolicyID(id); err != nil {
		return registry.TrustPolicy{}, err
	}
	return o.opt.Index.GetTrustPolicy(ctx, ns, id)
}

// TrustPolicyRequest is a trust policy to create.
type TrustPolicyRequest struct {
	Issuer string
	// Audience is the audience the ID tokens must name; "" means
	// Options.PublicURL.
	Audience   string
	Conditions map[string]string
	// Scope is the scope of the tokens issued; "" means publish.
	Scope string
	// TokenTTL is the life of the tokens issued; 0 means
	// registry.DefaultTrustTokenTTL.
	TokenTTL    time.Duration
	Description string
}

// CreateTrustPolicy creates a trust policy of namespace, for its admins:
// it must pass registry.CheckTrustPolicy, and a namespace has at most
// registry.MaxTrustPolicies. It returns the policy as stored.
func (o *Operations) CreateTrustPolicy(ctx context.Context, a Actor, namespace string, req TrustPolicyRequest) (registry.TrustPolicy, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.TrustPolicy{}, err
	}
	p := registry.TrustPolicy{
		Namespace: ns, Issuer: req.Issuer, Audience: req.Audience, Conditions: req.Conditions,
		Scope: registry.Scope(req.Scope), TokenTTL: req.TokenTTL, Description: req.Description, CreatedAt: o.opt.Now().UTC(),
	}
	if p.Audience == "" {
		if o.opt.PublicURL == nil {
			return registry.TrustPolicy{}, registry.Errorf(registry.Invalid, "audience is missing (this Trove has no public URL to default to)")
		}
		p.Audience = strings.TrimSuffix(o.opt.PublicURL.String(), "/")
	}
	if p.Scope == "" {
		p.Scope = registry.ScopePublish
	}
	if p.TokenTTL == 0 {
		p.TokenTTL = registry.DefaultTrustTokenTTL
	}
	if err := registry.CheckTrustPolicy(p); err != nil {
		return registry.TrustPolicy{}, err
	}
	existing, err := o.opt.Index.ListTrustPolicies(ctx, ns)
	if err != nil {
		return registry.TrustPolicy{}, err
	}
	if len(existing) >= registry.MaxTrustPolicies {
		return registry.TrustPolicy{}, registry.Errorf(registry.Conflict, "namespace %s has %d trust policies, the most it may have: delete one first", ns, len(existing))
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return registry.TrustPolicy{}, err
	}
	p.ID = "tp_" + hex.EncodeToString(b)
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditTrustPolicyCreate, Namespace: ns, Target: p.ID,
		Details: fmt.Sprintf("issuer %s, audience %s, conditions %s, scope %s, token lifetime %s", p.Issuer, p.Audience,
			conditionsText(p.Conditions), p.Scope, p.TokenTTL)}})
	if err := o.opt.Index.CreateTrustPolicy(store.WithEffects(ctx, fx), p); err != nil {
		return registry.TrustPolicy{}, err
	}
	o.done(ctx, fx)
	return p, nil
}

// DeleteTrustPolicy deletes the trust policy id of namespace, for its
// admins. The tokens issued under it stay until they expire.
func (o *Operations) DeleteTrustPolicy(ctx context.Context, a Actor, namespace, id string) error {
	p, err := o.TrustPolicy(ctx, a, namespace, id)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditTrustPolicyDelete, Namespace: p.Namespace, Target: p.ID,
		Details: "issuer " + p.Issuer + ", conditions " + conditionsText(p.Conditions)}})
	if err := o.opt.Index.DeleteTrustPolicy(store.WithEffects(ctx, fx), p.Namespace, p.ID); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// conditionsText writes conditions as "name=pattern, ..." sorted by name.
func conditionsText(c map[string]string) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = n + "=" + c[n]
	}
	return strings.Join(names, ", ")
}
