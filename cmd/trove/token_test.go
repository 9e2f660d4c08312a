package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

// TestTokenCreateRefusals runs hostile `trove token create` commands
// against a real Trove: each exits non-zero with the rule it breaks,
// and no token is stored.
func TestTokenCreateRefusals(t *testing.T) {
	s := trovetest.Start(t)
	ctx := context.Background()
	as := func(token string) map[string]string {
		return map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": token, "TROVE_CA_FILE": s.CAFile}
	}
	admin := as(s.AdminToken)
	ok := func(environ map[string]string, args ...string) string {
		t.Helper()
		r := runTrove(t, environ, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	acc := s.Index.(store.Access)
	for _, ns := range []string{"acme", "other"} {
		ok(admin, "namespace", "create", ns)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := acc.CreateUser(ctx, registry.User{Name: u, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := acc.SetMembership(ctx, registry.Membership{User: "alice", Namespace: "acme", Role: registry.RoleAdmin, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	alice2h := as(ok(admin, "token", "create", "--user", "alice", "--scope", "read", "--expires-in", "2h"))
	aliceAcme := as(ok(admin, "token", "create", "--user", "alice", "--scope", "admin", "--namespace", "acme"))
	user, err := acc.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	session, sessionSecret, err := auth.Issue(auth.SignInParent(user, time.Hour, now), auth.Request{User: "alice",
		Scopes: []registry.Scope{registry.ScopeAdmin}, ExpiresAt: now.Add(time.Hour), Session: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Index.CreateToken(ctx, session); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		as      map[string]string
		args    []string
		code    int
		message string
	}{
		{"longer expiry than the parent", alice2h, []string{"--user", "alice", "--scope", "read", "--expires-in", "720h"}, exitError, "the new token cannot outlive it"},
		{"broader scope", alice2h, []string{"--user", "alice", "--scope", "publish"}, exitError, "grants at most read: it cannot create a token with publish"},
		{"admin scope from a read token", alice2h, []string{"--user", "alice", "--scope", "read,admin"}, exitError, "cannot create a token with admin"},
		{"a global admin token from a non-admin", aliceAcme, []string{"--scope", "admin"}, exitError, "does not grant admin on every namespace"},
		{"other namespace", aliceAcme, []string{"--user", "alice", "--scope", "read", "--namespace", "acme,other"}, exitError, "cannot be bound to other"},
		{"global from a bound token", aliceAcme, []string{"--user", "alice", "--scope", "read"}, exitError, "must be bound to some of them too"},
		{"another user's token", alice2h, []string{"--user", "bob", "--scope", "read"}, exitError, "user alice cannot create tokens for user bob"},
		{"a service token of a namespace not administered", aliceAcme, []string{"--scope", "read", "--namespace", "other"}, exitError, "does not grant admin on namespace other"},
		{"expiry in the past", admin, []string{"--scope", "read", "--expires-in", "-1h"}, exitUsage, "--expires-in must be positive"},
		{"expiry gone on arrival", admin, []string{"--scope", "read", "--expires-in", "1ns"}, exitError, "is not in the future"},
		{"absurd duration", admin, []string{"--scope", "read", "--expires-in", "2000000h"}, exitError, "more than 100 years ahead"},
		{"an overflowing duration", admin, []string{"--scope", "read", "--expires-in", "9999999h"}, exitUsage, "expires-in"},
		{"unknown scope", admin, []string{"--scope", "root"}, exitUsage, "root"},
		{"no scope", admin, []string{"--namespace", "acme"}, exitUsage, "--scope is required"},
		{"posing as a web session", admin, []string{"--scope", "read", "--description", "web session"}, exitError, "kept for web sessions"},
		{"a web session as the token", as(sessionSecret), []string{"--user", "alice", "--scope", "read"}, exitError, "a web session's cookie is no API token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runTrove(t, tc.as, "", append([]string{"token", "create"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.message) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d saying %q", r.code, r.stdout, r.stderr, tc.code, tc.message)
			}
		})
	}
	after, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(stored) {
		t.Errorf("the refused commands stored %d tokens", len(after)-len(stored))
	}
}

// TestAdminTokenPolicy: `trove admin token` mints through the same
// policy: an absurd --expires is refused and nothing is stored.
func TestAdminTokenPolicy(t *testing.T) {
	s := trovetest.Start(t)
	ctx := context.Background()
	before, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = mintAdminToken(ctx, s.Index, adminTokenFlags{expires: 2000000 * time.Hour}, time.Now())
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "more than 100 years ahead") {
		t.Errorf("an absurd --expires: %v", err)
	}
	if _, _, err = mintAdminToken(ctx, s.Index, adminTokenFlags{description: "web session"}, time.Now()); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("an admin token described as a web session: %v", err)
	}
	after, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("refused admin tokens were stored")
	}
	secret, tok, err := mintAdminToken(ctx, s.Index, adminTokenFlags{expires: 24 * time.Hour}, time.Now())
	if err != nil || !strings.HasPrefix(secret, auth.TokenPrefix) || tok.ExpiresAt.IsZero() || tok.ExpiresAt.Nanosecond() != 0 {
		t.Errorf("an admin token for a day: %+v, %v", tok, err)
	}
}
