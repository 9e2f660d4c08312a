package operations_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/webhook"
)

// corp is a valid identity provider.
func corp(name string) registry.IdentityProvider {
	return registry.IdentityProvider{Name: name, Issuer: "https://idp.example.com/realms/corp", ClientID: "trove",
		ClientSecretEnv: "TROVE_OIDC_SECRET_CORP", Scopes: []string{"profile", "groups"}}
}

// TestIdentityProvidersRefused: only global admins set and delete
// identity providers and role mappings; hostile names, issuers, secret
// variables, claims, roles and IDs are refused, as is an issuer whose
// discovery document disagrees; nothing is stored.
func TestIdentityProvidersRefused(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// The operations of the env, checking issuers as sso.CheckIssuer
	// would: refusing one whose discovery document names another.
	ops := operations.New(operations.Options{Index: e.idx, Access: auth.NewAccess(e.authn, e.idx), Audit: audit.New(e.idx, nil),
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}),
		CheckIssuer: func(_ context.Context, issuer string) (string, error) {
			if strings.Contains(issuer, "mismatch") {
				return "", registry.Errorf(registry.Invalid, "the discovery document of %s names another issuer", issuer)
			}
			return "", nil
		}})
	alice, eve, root := e.user(t, "alice"), e.user(t, "eve"), e.user(t, "root")
	nsAdmin := e.service(t, registry.ScopeAdmin, "acme")
	_, err := ops.PutIdentityProvider(ctx, root, corp("corp"))
	adminOK(t, err)
	m, err := ops.CreateRoleMapping(ctx, root, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform", Namespace: "acme", Role: registry.RolePublisher})
	adminOK(t, err)
	with := func(name string, f func(p *registry.IdentityProvider)) registry.IdentityProvider {
		p := corp(name)
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		p     registry.IdentityProvider
		want  registry.Kind
	}{
		{"by a namespace admin", alice, corp("new"), registry.Forbidden},
		{"by a namespace admin token", nsAdmin, corp("corp"), registry.Forbidden},
		{"by a user without rights", eve, corp("new"), registry.Forbidden},
		{"name path", root, corp("../corp"), registry.Invalid},
		{"name with NUL", root, corp("corp\x00"), registry.Invalid},
		{"name too long", root, corp(strings.Repeat("c", 1000)), registry.Invalid},
		{"empty name", root, corp(""), registry.Invalid},
		{"plain http issuer", root, with("new", func(p *registry.IdentityProvider) { p.Issuer = "http://idp.example.com" }), registry.Invalid},
		{"issuer with a newline", root, with("new", func(p *registry.IdentityProvider) { p.Issuer = "https://idp.example.com/\nx" }), registry.Invalid},
		{"no client", root, with("new", func(p *registry.IdentityProvider) { p.ClientID = "" }), registry.Invalid},
		{"another secret variable", root, with("corp", func(p *registry.IdentityProvider) { p.ClientSecretEnv = "TROVE_POSTGRES_DSN" }), registry.Invalid},
		{"secret variable outside Trove's", root, with("new", func(p *registry.IdentityProvider) { p.ClientSecretEnv = "AWS_SECRET_ACCESS_KEY" }), registry.Invalid},
		{"display name with an escape", root, with("new", func(p *registry.IdentityProvider) { p.DisplayName = "\x1b[2J" }), registry.Invalid},
		{"issuer its discovery disowns", root, with("new", func(p *registry.IdentityProvider) { p.Issuer = "https://mismatch.example.com" }), registry.Invalid},
		{"replacement its discovery disowns", root, with("corp", func(p *registry.IdentityProvider) { p.Issuer = "https://mismatch.example.com" }), registry.Invalid},
	} {
		t.Run("put/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := ops.PutIdentityProvider(ctx, tc.actor, tc.p)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name, provider string
		actor          operations.Actor
		want           registry.Kind
	}{
		{"by a namespace admin", "corp", alice, registry.Forbidden},
		{"absent provider", "nope", root, registry.NotFound},
		{"name path", "../corp", root, registry.Invalid},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error { return ops.DeleteIdentityProvider(ctx, tc.actor, tc.provider) })
		})
	}
	mapping := func(f func(m *registry.RoleMapping)) registry.RoleMapping {
		m := registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "ops", Namespace: "acme", Role: registry.RoleReader}
		f(&m)
		return m
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		m     registry.RoleMapping
		want  registry.Kind
	}{
		{"by a namespace admin", alice, mapping(func(*registry.RoleMapping) {}), registry.Forbidden},
		{"by a namespace admin token", nsAdmin, mapping(func(*registry.RoleMapping) {}), registry.Forbidden},
		{"absent provider", root, mapping(func(m *registry.RoleMapping) { m.Provider = "nope" }), registry.NotFound},
		{"provider path", root, mapping(func(m *registry.RoleMapping) { m.Provider = "../corp" }), registry.Invalid},
		{"absent namespace", root, mapping(func(m *registry.RoleMapping) { m.Namespace = "missing" }), registry.NotFound},
		{"namespace path", root, mapping(func(m *registry.RoleMapping) { m.Namespace = "../acme" }), registry.Invalid},
		{"namespace with NUL", root, mapping(func(m *registry.RoleMapping) { m.Namespace = "acme\x00" }), registry.Invalid},
		{"no namespace", root, mapping(func(m *registry.RoleMapping) { m.Namespace = "" }), registry.Invalid},
		{"global admin flag as reader", root, mapping(func(m *registry.RoleMapping) { m.Namespace = "*" }), registry.Invalid},
		{"unknown role", root, mapping(func(m *registry.RoleMapping) { m.Role = "owner" }), registry.Invalid},
		{"claim with a newline", root, mapping(func(m *registry.RoleMapping) { m.Claim = "groups\nx" }), registry.Invalid},
		{"no value", root, mapping(func(m *registry.RoleMapping) { m.Value = "" }), registry.Invalid},
		{"value with an escape", root, mapping(func(m *registry.RoleMapping) { m.Value = "ops\x1b[0m" }), registry.Invalid},
		{"value too long", root, mapping(func(m *registry.RoleMapping) { m.Value = strings.Repeat("v", 100_000) }), registry.Invalid},
		{"the same mapping twice", root, mapping(func(m *registry.RoleMapping) { m.Value = "platform"; m.Role = registry.RolePublisher }), registry.Conflict},
	} {
		t.Run("create mapping/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := ops.CreateRoleMapping(ctx, tc.actor, tc.m)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name, id string
		actor    operations.Actor
		want     registry.Kind
	}{
		{"by a namespace admin", strconv.FormatInt(m.ID, 10), alice, registry.Forbidden},
		{"absent mapping", "999999", root, registry.NotFound},
		{"zero", "0", root, registry.Invalid},
		{"negative", "-1", root, registry.Invalid},
		{"not a number", "one", root, registry.Invalid},
		{"overflowing", "99999999999999999999999", root, registry.Invalid},
		{"with a newline", "1\n", root, registry.Invalid},
	} {
		t.Run("delete mapping/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error { return ops.DeleteRoleMapping(ctx, tc.actor, tc.id) })
		})
	}
	if _, err := ops.IdentityProviders(ctx, alice); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a namespace admin lists the providers: %v; want Forbidden", err)
	}
	if _, err := ops.RoleMappings(ctx, nsAdmin, ""); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a namespace admin lists the mappings: %v; want Forbidden", err)
	}
	if _, err := ops.RoleMapping(ctx, alice, "1"); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a namespace admin reads a mapping: %v; want Forbidden", err)
	}
}

// TestIdentityProviders: a global admin creates, replaces and deletes a
// provider and its mappings; the audit entry says "created" or
// "replaced" as the answer does; the mapping's audit entry names its ID.
func TestIdentityProviders(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	root := e.user(t, "root")
	res, err := e.ops.PutIdentityProvider(ctx, root, corp("corp"))
	if err != nil || !res.Created || res.Provider.Name != "corp" || len(res.Warnings) != 0 {
		t.Fatalf("create: %v %+v", err, res)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditIdentityProviderPut || a.Target != "corp" || a.Actor != "user:root" ||
		a.Details != "created: issuer https://idp.example.com/realms/corp, client trove, scopes profile groups" {
		t.Errorf("create audited as %+v", a)
	}
	p := corp("corp")
	p.DisplayName = "Corp"
	res, err = e.ops.PutIdentityProvider(ctx, root, p)
	if err != nil || res.Created || res.Provider.DisplayName != "Corp" {
		t.Fatalf("replace: %v %+v", err, res)
	}
	if a := e.lastAudit(t); !strings.HasPrefix(a.Details, "replaced: ") {
		t.Errorf("replace audited as %+v", a)
	}
	m, err := e.ops.CreateRoleMapping(ctx, root, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "ops", Namespace: "*", Role: registry.RoleAdmin})
	if err != nil || m.ID <= 0 {
		t.Fatalf("mapping: %v %+v", err, m)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditRoleMappingCreate || a.Namespace != "" || a.Target == "" || a.Target != strings.TrimSpace(a.Target) ||
		a.Details != "identity provider corp: groups=ops gives admin in *" {
		t.Errorf("mapping audited as %+v", a)
	}
	m2, err := e.ops.CreateRoleMapping(ctx, root, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "dev", Namespace: "ACME", Role: registry.RoleReader})
	if err != nil || m2.Namespace != "acme" {
		t.Fatalf("mapping of ACME: %v %+v", err, m2)
	}
	if err := e.ops.DeleteRoleMapping(ctx, root, strconv.FormatInt(m2.ID, 10)); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditRoleMappingDelete || a.Namespace != "acme" || a.Target != strconv.FormatInt(m2.ID, 10) {
		t.Errorf("mapping delete audited as %+v", a)
	}
	if err := e.ops.DeleteIdentityProvider(ctx, root, "corp"); err != nil {
		t.Fatal(err)
	}
	if ms, err := e.ops.RoleMappings(ctx, root, ""); err != nil || len(ms) != 0 {
		t.Errorf("mappings after the provider's delete: %v %+v", err, ms)
	}
}

// TestIdentityProviderPutRace: of concurrent puts of a new provider
// exactly one creates it, and exactly one audit entry says "created" (the
// write's transaction decides, not a read before it).
func TestIdentityProviderPutRace(t *testing.T) {
	e := newEnv(t)
	root := e.user(t, "root")
	const n = 8
	var wg sync.WaitGroup
	created := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := e.ops.PutIdentityProvider(t.Context(), root, corp("corp"))
			created[i], errs[i] = res.Created, err
		})
	}
	wg.Wait()
	answers := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if created[i] {
			answers++
		}
	}
	events, err := e.idx.ListAudit(t.Context(), registry.AuditFilter{Action: registry.AuditIdentityProviderPut})
	if err != nil || len(events) != n {
		t.Fatalf("audit: %v, %d entries, want %d", err, len(events), n)
	}
	audited := 0
	for _, ev := range events {
		if strings.HasPrefix(ev.Details, "created: ") {
			audited++
		} else if !strings.HasPrefix(ev.Details, "replaced: ") {
			t.Errorf("audited as %q", ev.Details)
		}
	}
	if answers != 1 || audited != 1 {
		t.Errorf("%d puts answered created, %d audit entries say created; want 1 and 1", answers, audited)
	}
}
