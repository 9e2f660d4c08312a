package operations_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestSignInToken: the token of a sign-in (login.v1 or device code) is
// minted under the token policy and stored with its audit entry; a
// refused grant stores nothing, and a replay revokes the token the code
// gave, at once for the token cache.
func TestSignInToken(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, err := e.idx.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	grant := func(mutate func(*operations.SignInGrant)) operations.SignInGrant {
		id, _ := auth.NewID()
		g := operations.SignInGrant{User: alice, TokenID: id, ClientID: "terraform-cli", Scopes: []registry.Scope{registry.ScopeAdmin},
			Via: "login", Addr: "203.0.113.9:5000", At: e.now}
		if mutate != nil {
			mutate(&g)
		}
		return g
	}
	g := grant(nil)
	tk, secret, err := e.ops.IssueSignInToken(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	wantExpiry := e.now.Add(30 * 24 * time.Hour)
	if tk.ID != g.TokenID || tk.User != "alice" || !tk.ExpiresAt.Equal(wantExpiry) || tk.Description != "login by terraform-cli from 203.0.113.9" {
		t.Errorf("token %+v", tk)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTokenCreate || a.Actor != "user:alice" || a.SourceAddr != "203.0.113.9" ||
		a.Details != "personal token of alice, admin, issued by login, expires "+wantExpiry.Format(time.RFC3339) {
		t.Errorf("audited as %+v", a)
	}
	// A shorter life is kept; a longer one is cut to the sign-in's.
	if short, _, err := e.ops.IssueSignInToken(ctx, grant(func(g *operations.SignInGrant) { g.Life = time.Hour })); err != nil ||
		!short.ExpiresAt.Equal(e.now.Add(time.Hour)) {
		t.Errorf("a 1-hour grant: %v %+v", err, short)
	}
	if long, _, err := e.ops.IssueSignInToken(ctx, grant(func(g *operations.SignInGrant) { g.Life = 365 * 24 * time.Hour })); err != nil ||
		!long.ExpiresAt.Equal(wantExpiry) {
		t.Errorf("a 1-year grant: %v %+v", err, long)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*operations.SignInGrant)
		want   registry.Kind
	}{
		{"a disabled user", func(g *operations.SignInGrant) { g.User.Disabled = true }, registry.Forbidden},
		{"the token ID of the code taken", func(g *operations.SignInGrant) { g.TokenID = tk.ID }, registry.Conflict},
		{"an unknown scope", func(g *operations.SignInGrant) { g.Scopes = []registry.Scope{"root"} }, registry.Invalid},
		{"no scope", func(g *operations.SignInGrant) { g.Scopes = nil }, registry.Invalid},
		{"a user that does not exist", func(g *operations.SignInGrant) { g.User = registry.User{Name: "mallory"} }, registry.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, _, err := e.ops.IssueSignInToken(ctx, grant(tc.mutate))
				return err
			})
		})
	}

	// The token works, from the cache too; a replay of its code revokes
	// it for the very next lookup.
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://trove.test/", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	if _, err := e.authn.AuthenticateCached(r); err != nil {
		t.Fatal(err)
	}
	if err := e.ops.RevokeReplayedSignIn(ctx, g, "an authorization code was presented a second time"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.authn.AuthenticateCached(r); !registry.IsKind(err, registry.Unauthenticated) {
		t.Errorf("the token of a replayed code on the next lookup: %v", err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditTokenReplay || a.Target != g.TokenID || a.SourceAddr != "203.0.113.9" {
		t.Errorf("replay audited as %+v", a)
	}
	// A replay that comes before the first exchange stored its token
	// leaves a revoked token under the ID: the exchange then fails.
	early := grant(nil)
	if err := e.ops.RevokeReplayedSignIn(ctx, early, "a device code was redeemed a second time"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.ops.IssueSignInToken(ctx, early); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("the exchange after an early replay: %v, want Conflict", err)
	}
	tokens, err := e.idx.ListUserTokens(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range tokens {
		if tok.ID == early.TokenID && (tok.RevokedAt.IsZero() || !strings.Contains(tok.Description, "never issued")) {
			t.Errorf("the token of the early replay: %+v", tok)
		}
	}
}
