package operations_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestTrustPoliciesRefused: only a namespace's admins create and delete
// its trust policies; policies that would trust too much, hostile
// issuers, conditions and IDs are refused; nothing is stored.
func TestTrustPoliciesRefused(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, pat, bob, eve, root := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve"), e.user(t, "root")
	otherAdmin := e.service(t, registry.ScopeAdmin, "open")
	good := operations.TrustPolicyRequest{Issuer: "https://token.actions.githubusercontent.com", Audience: "https://trove.test",
		Conditions: map[string]string{"repository": "acme/infra"}}
	with := func(f func(r *operations.TrustPolicyRequest)) operations.TrustPolicyRequest {
		r := good
		r.Conditions = map[string]string{"repository": "acme/infra"}
		f(&r)
		return r
	}
	p, err := e.ops.CreateTrustPolicy(ctx, alice, "acme", good)
	adminOK(t, err)
	// other has the most trust policies it may have.
	for i := range registry.MaxTrustPolicies {
		_, err := e.ops.CreateTrustPolicy(ctx, root, "other", with(func(r *operations.TrustPolicyRequest) { r.Conditions["repository"] = fmt.Sprint("acme/", i) }))
		adminOK(t, err)
	}
	tooMany := map[string]string{}
	for i := range registry.MaxTrustConditions + 1 {
		tooMany[fmt.Sprint("claim", i)] = "x"
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		ns    string
		req   operations.TrustPolicyRequest
		want  registry.Kind
	}{
		{"by a publisher", pat, "acme", good, registry.Forbidden},
		{"by a reader", bob, "acme", good, registry.Forbidden},
		{"by an outsider", eve, "acme", good, registry.NotFound},
		{"by an admin of another namespace", otherAdmin, "acme", good, registry.NotFound},
		{"absent namespace", root, "nope", good, registry.NotFound},
		{"namespace path", root, "../acme", good, registry.Invalid},
		{"no conditions", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Conditions = nil }), registry.Invalid},
		{"a condition matching everything", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Conditions["repository"] = "*" }), registry.Invalid},
		{"a condition on the issuer claim", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Conditions["iss"] = "x" }), registry.Invalid},
		{"a claim name with a newline", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Conditions["ref\nx"] = "main" }), registry.Invalid},
		{"too many conditions", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Conditions = tooMany }), registry.Invalid},
		{"plain http issuer", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Issuer = "http://issuer.example.com" }), registry.Invalid},
		{"issuer with a query", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Issuer = "https://issuer.example.com/?x=1" }), registry.Invalid},
		{"issuer too long", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Issuer = "https://i.example.com/" + strings.Repeat("i", 600) }), registry.Invalid},
		{"admin scope", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Scope = "admin" }), registry.Invalid},
		{"unknown scope", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Scope = "root" }), registry.Invalid},
		{"token life too long", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.TokenTTL = 2 * time.Hour }), registry.Invalid},
		{"negative token life", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.TokenTTL = -time.Minute }), registry.Invalid},
		{"description with an escape", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Description = "\x1b]0;x\x07" }), registry.Invalid},
		{"no audience and no public URL", alice, "acme", with(func(r *operations.TrustPolicyRequest) { r.Audience = "" }), registry.Invalid},
		{"one policy too many", root, "other", good, registry.Conflict},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.CreateTrustPolicy(ctx, tc.actor, tc.ns, tc.req)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name   string
		actor  operations.Actor
		ns, id string
		want   registry.Kind
	}{
		{"by a publisher", pat, "acme", p.ID, registry.Forbidden},
		{"by an outsider", eve, "acme", p.ID, registry.NotFound},
		{"through another namespace", root, "other", p.ID, registry.NotFound},
		{"absent policy", alice, "acme", "tp_0123456789abcdef", registry.NotFound},
		{"ID path", alice, "acme", "../keys", registry.Invalid},
		{"ID upper case", alice, "acme", strings.ToUpper(p.ID), registry.Invalid},
		{"ID with NUL", alice, "acme", p.ID + "\x00", registry.Invalid},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteTrustPolicy(ctx, tc.actor, tc.ns, tc.id) })
		})
	}
	if _, err := e.ops.TrustPolicies(ctx, pat, "acme"); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a publisher lists the trust policies: %v; want Forbidden", err)
	}
}

// TestTrustPolicies: the defaults (audience the public URL, scope
// publish, 15 minutes) are applied, creation and deletion are audited.
func TestTrustPolicies(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	u, _ := url.Parse("https://trove.example.com/")
	ops := operations.New(operations.Options{Index: e.idx, Audit: audit.New(e.idx, nil), PublicURL: u})
	alice := e.user(t, "alice")
	p, err := ops.CreateTrustPolicy(ctx, alice, "acme", operations.TrustPolicyRequest{Issuer: "https://gitlab.com",
		Conditions: map[string]string{"project_path": "acme/infra", "ref": "refs/tags/v*"}})
	if err != nil || !strings.HasPrefix(p.ID, "tp_") || p.Audience != "https://trove.example.com" || p.Scope != registry.ScopePublish ||
		p.TokenTTL != registry.DefaultTrustTokenTTL {
		t.Fatalf("create: %v %+v", err, p)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTrustPolicyCreate || a.Target != p.ID || a.Namespace != "acme" || a.SourceAddr != "192.0.2.7" ||
		a.Details != "issuer https://gitlab.com, audience https://trove.example.com, conditions project_path=acme/infra, ref=refs/tags/v*, scope publish, token lifetime 15m0s" {
		t.Errorf("create audited as %+v", a)
	}
	if err := ops.DeleteTrustPolicy(ctx, alice, "acme", p.ID); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTrustPolicyDelete || a.Target != p.ID {
		t.Errorf("delete audited as %+v", a)
	}
	if _, err := ops.TrustPolicy(ctx, alice, "acme", p.ID); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("after the delete: %v", err)
	}
}
