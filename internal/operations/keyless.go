package operations

import (
	"context"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/keyless"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ExchangeIDToken is the keyless token exchange: it checks idToken, a CI
// system's ID token, against the trust policies of namespace (package
// keyless) and issues a token of the namespace through auth.Issue, with
// the trusting policy as its parent. The token and its audit entry
// (AuditTokenExchange, its actor "oidc:<subject>") commit in one
// transaction. A refused exchange stores nothing but its own audit entry
// (AuditTokenExchangeFails, in the namespace when it exists, so that its
// admins see the failures of their pipelines), never with the ID token
// itself. The caller a is anonymous (the exchange takes no token of
// Trove's): only its address is recorded; rate limiting is the
// entrance's.
func (o *Operations) ExchangeIDToken(ctx context.Context, a Actor, namespace, idToken string) (keyless.Result, error) {
	ns, err := registry.ParseNamespace(namespace)
	if err != nil {
		return keyless.Result{}, err
	}
	if o.opt.Keyless == nil {
		return keyless.Result{}, registry.Errorf(registry.Internal, "the keyless token exchange is not configured on this server")
	}
	// The audit entry of the token commits with it, named by the
	// exchange once it knows the token (Effects.Bind).
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditTokenExchange, Namespace: ns}})
	fx.Bind = func(record any) {
		if res, ok := record.(keyless.Result); ok {
			e := &fx.Audit[0]
			e.Actor, e.Target = "oidc:"+res.Subject, res.Token.ID
			e.Details = ExchangeDetails(res) + ", expires " + res.Token.ExpiresAt.UTC().Format(time.RFC3339)
		}
	}
	res, err := o.opt.Keyless.Exchange(store.WithEffects(ctx, fx), ns, idToken)
	if err != nil {
		e := registry.AuditEvent{Action: registry.AuditTokenExchangeFails, Target: "namespace " + ns, Actor: a.name(), SourceAddr: a.source(),
			Details: strings.Join(slices.DeleteFunc([]string{registry.Message(err), ExchangeDetails(res), res.Detail}, func(s string) bool { return s == "" }), "; ")}
		if _, nerr := o.opt.Index.GetNamespace(ctx, ns); nerr == nil {
			e.Namespace = ns
		}
		o.opt.Audit.Record(ctx, nil, e)
		return res, err
	}
	o.done(ctx, fx)
	return res, nil
}

// ExchangeDetails describes what an exchange found out of the ID token,
// for the audit log: never the token itself.
func ExchangeDetails(res keyless.Result) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("issuer", res.Issuer)
	add("subject", res.Subject)
	for _, c := range []string{"repository", "project_path", "ref", "environment", "workflow_ref", "job_workflow_ref"} {
		add(c, registry.Elide(res.Claim(c)))
	}
	add("jti", res.JTI)
	add("policy", res.Policy.ID)
	return strings.Join(parts, ", ")
}
