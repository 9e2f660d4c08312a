package operations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestTokensRefused: hostile token requests and actors without the right
// are refused with a clear error, and nothing is stored.
func TestTokensRefused(t *testing.T) {
	e := newEnv(t)
	alice, bob, eve := e.user(t, "alice"), e.user(t, "bob"), e.user(t, "eve")
	reader := e.service(t, registry.ScopeRead, "acme")
	root := e.user(t, "root")
	aliceToken, _, err := e.ops.CreateToken(t.Context(), alice, operations.TokenRequest{User: "alice", Scopes: []string{"read"},
		Namespaces: []string{"acme"}, ExpiresAt: e.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	in := func(d time.Duration) time.Time { return e.now.Add(d) }
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		req   operations.TokenRequest
		want  registry.Kind
	}{
		{"reader mints admin", reader, operations.TokenRequest{Scopes: []string{"admin"}, Namespaces: []string{"acme"}, ExpiresAt: in(time.Hour)}, registry.Forbidden},
		{"reader mints unbound", reader, operations.TokenRequest{Scopes: []string{"read"}, ExpiresAt: in(time.Hour)}, registry.Forbidden},
		{"outlives its parent", reader, operations.TokenRequest{Scopes: []string{"read"}, Namespaces: []string{"acme"}, ExpiresAt: in(48 * time.Hour)}, registry.Forbidden},
		{"never expires under a parent that does", reader, operations.TokenRequest{Scopes: []string{"read"}, Namespaces: []string{"acme"}}, registry.Forbidden},
		{"bob for alice", bob, operations.TokenRequest{User: "alice", Scopes: []string{"read"}, Namespaces: []string{"acme"}, ExpiresAt: in(time.Hour)}, registry.Forbidden},
		{"eve binds a private namespace", eve, operations.TokenRequest{User: "eve", Scopes: []string{"read"}, Namespaces: []string{"other"}, ExpiresAt: in(time.Hour)}, registry.NotFound},
		{"unknown scope", root, operations.TokenRequest{Scopes: []string{"superadmin"}, ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"scope with a newline", root, operations.TokenRequest{Scopes: []string{"read\nadmin"}, ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"namespace path", root, operations.TokenRequest{Scopes: []string{"read"}, Namespaces: []string{"../acme"}, ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"absent namespace", root, operations.TokenRequest{Scopes: []string{"read"}, Namespaces: []string{"nope"}, ExpiresAt: in(time.Hour)}, registry.NotFound},
		{"absent user", root, operations.TokenRequest{User: "nobody", Scopes: []string{"read"}, ExpiresAt: in(time.Hour)}, registry.NotFound},
		{"user name with a slash", root, operations.TokenRequest{User: "a/b", Scopes: []string{"read"}, ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"escape in description", root, operations.TokenRequest{Scopes: []string{"read"}, Description: "ci \x1b[31mred", ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"newline in description", root, operations.TokenRequest{Scopes: []string{"read"}, Description: "ci\nforged: line", ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"description too long", root, operations.TokenRequest{Scopes: []string{"read"}, Description: strings.Repeat("x", 100_000), ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"session description", root, operations.TokenRequest{Scopes: []string{"read"}, Description: "web session", ExpiresAt: in(time.Hour)}, registry.Invalid},
		{"expired already", root, operations.TokenRequest{Scopes: []string{"read"}, ExpiresAt: in(-time.Hour)}, registry.Invalid},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, _, err := e.ops.CreateToken(ctx, tc.actor, tc.req)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		id    string
		want  registry.Kind
	}{
		{"by a reader of its namespace", bob, aliceToken.ID, registry.Forbidden},
		{"by an outsider", eve, aliceToken.ID, registry.NotFound},
		{"by a read token of its namespace", reader, aliceToken.ID, registry.Forbidden},
		{"unknown", root, "tok_0000000000000000", registry.NotFound},
		{"hostile id", root, "tok_'; DROP TABLE tokens; --", registry.NotFound},
		{"empty id", root, "", registry.NotFound},
	} {
		t.Run("revoke/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.RevokeToken(ctx, tc.actor, tc.id)
				return err
			})
		})
		t.Run("expire/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.ExpireToken(ctx, tc.actor, tc.id, e.now.Add(time.Minute))
				return err
			})
		})
	}
	t.Run("expire/later", func(t *testing.T) {
		e.refused(t, registry.Invalid, func(ctx context.Context) error {
			_, err := e.ops.ExpireToken(ctx, alice, aliceToken.ID, e.now.Add(2*time.Hour))
			return err
		})
	})
	t.Run("expire/zero", func(t *testing.T) {
		e.refused(t, registry.Invalid, func(ctx context.Context) error {
			_, err := e.ops.ExpireToken(ctx, alice, aliceToken.ID, time.Time{})
			return err
		})
	})
	t.Run("sign out/not a session", func(t *testing.T) {
		e.refused(t, registry.Invalid, func(ctx context.Context) error { return e.ops.SignOut(ctx, alice) })
	})
	t.Run("operator token/not the operator", func(t *testing.T) {
		e.refused(t, registry.Forbidden, func(ctx context.Context) error {
			_, _, err := e.ops.OperatorToken(ctx, root, "", "on host test", 0)
			return err
		})
	})
	t.Run("operator token/escape in description", func(t *testing.T) {
		e.refused(t, registry.Invalid, func(ctx context.Context) error {
			_, _, err := e.ops.OperatorToken(ctx, operations.Actor{Operator: "local-admin"}, "\x1b]0;owned\a", "on host test", 0)
			return err
		})
	})
	t.Run("lists/by others", func(t *testing.T) {
		if _, err := e.ops.Tokens(t.Context(), bob, "", "alice"); !registry.IsKind(err, registry.Forbidden) {
			t.Errorf("bob lists alice's tokens: %v; want Forbidden", err)
		}
		if _, err := e.ops.Tokens(t.Context(), bob, "acme", ""); !registry.IsKind(err, registry.Forbidden) {
			t.Errorf("a reader lists acme's tokens: %v; want Forbidden", err)
		}
		if _, err := e.ops.Tokens(t.Context(), root, "acme", "alice"); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("both filters: %v; want Invalid", err)
		}
	})
}

// TestTokens: the writes that are allowed store the token and its audit
// entries (one per namespace, naming that one only) in one go, and a
// revoked or signed-out token stops working at once.
func TestTokens(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	tk, secret, err := e.ops.CreateToken(ctx, alice, operations.TokenRequest{User: "alice", Scopes: []string{"publish"},
		Namespaces: []string{"acme", "open"}, Description: "ci", ExpiresAt: e.now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if secret == "" || tk.User != "alice" || len(tk.Namespaces) != 2 {
		t.Fatalf("created %+v", tk)
	}
	events, err := e.idx.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditTokenCreate})
	if err != nil || len(events) != 2 {
		t.Fatalf("audit: %v %+v; want one token.create per namespace", err, events)
	}
	for _, ev := range events {
		if ev.Actor != "user:alice" || ev.SourceAddr != "192.0.2.7" || ev.Target != tk.ID ||
			!strings.HasSuffix(ev.Details, "bound to "+ev.Namespace+" and 1 other namespace") {
			t.Errorf("audit entry %+v", ev)
		}
	}
	got, err := e.ops.ExpireToken(ctx, alice, tk.ID, e.now.Add(30*time.Minute))
	if err != nil || !got.ExpiresAt.Equal(e.now.Add(30*time.Minute)) {
		t.Fatalf("expire: %v %+v", err, got)
	}
	if _, err := e.ops.RevokeToken(ctx, alice, tk.ID); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTokenRevoke || a.Target != tk.ID {
		t.Errorf("last audit entry %+v; want the revocation", a)
	}
	if _, err := e.authn.AuthenticateSession(ctx, secret); err == nil {
		t.Error("a revoked token still authenticates")
	}

	// A session opened by a sign-in, then signed out.
	u, err := e.idx.GetUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	st, cookie, err := e.ops.OpenSession(ctx, operations.Session{User: u, Life: 12 * time.Hour, Addr: "198.51.100.2:1"})
	if err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditLoginSuccess || a.Actor != "user:bob" || a.SourceAddr != "198.51.100.2" ||
		a.Details != "web session for 12 hours" {
		t.Errorf("sign-in audited as %+v", a)
	}
	p, err := e.authn.AuthenticateSession(ctx, cookie)
	if err != nil || p.Token.ID != st.ID {
		t.Fatalf("session: %v", err)
	}
	if err := e.ops.SignOut(ctx, operations.Actor{Principal: p, Addr: "198.51.100.2:1"}); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTokenRevoke || a.Details != "signed out of the web UI" {
		t.Errorf("sign-out audited as %+v", a)
	}
	if _, err := e.authn.AuthenticateSession(ctx, cookie); err == nil {
		t.Error("a signed-out session still works")
	}

	// The operator of the data directory.
	ot, _, err := e.ops.OperatorToken(ctx, operations.Actor{Operator: "local-admin"}, "", "by ops on host db1", 0)
	if err != nil || ot.Description != "created with trove admin token by ops on host db1" || !ot.Global() {
		t.Fatalf("operator token: %v %+v", err, ot)
	}
	if a := e.lastAudit(t); a.Actor != "local-admin" || a.Target != ot.ID {
		t.Errorf("operator token audited as %+v", a)
	}
}
