package auth

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestIssue is the token policy's table: for each parent, what it may
// mint and what it may not, with the rule the refusal names.
func TestIssue(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hour := now.Add(time.Hour)
	const signInTTL = 30 * 24 * time.Hour
	alice := registry.User{Name: "alice"}
	root := registry.User{Name: "root", Admin: true}
	roles := map[string]registry.Role{"acme": registry.RoleAdmin, "labs": registry.RoleReader}
	personal := func(u registry.User, scope registry.Scope, expires time.Time, ns ...string) Principal {
		return Principal{Token: registry.Token{ID: "tok_" + u.Name, User: u.Name, Namespaces: ns, Scopes: []registry.Scope{scope}, ExpiresAt: expires}, User: u, Roles: roles}
	}
	aliceRead2h := TokenParent(personal(alice, registry.ScopeRead, now.Add(2*time.Hour)), signInTTL, now)
	aliceAdmin := TokenParent(personal(alice, registry.ScopeAdmin, time.Time{}), signInTTL, now)
	aliceAcme := TokenParent(personal(alice, registry.ScopeAdmin, time.Time{}, "acme"), signInTTL, now)
	rootAdmin2h := TokenParent(personal(root, registry.ScopeAdmin, now.Add(2*time.Hour)), signInTTL, now)
	rootForever := TokenParent(personal(root, registry.ScopeAdmin, time.Time{}), signInTTL, now)
	service := TokenParent(Principal{Token: registry.Token{ID: "tok_svc", Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopeAdmin}}}, signInTTL, now)
	sessionP := personal(alice, registry.ScopeAdmin, now.Add(12*time.Hour))
	sessionP.Session = true
	session := TokenParent(sessionP, signInTTL, now)
	signIn := SignInParent(alice, signInTTL, now)
	policy := TrustParent(registry.TrustPolicy{ID: "tp_1", Namespace: "acme", Scope: registry.ScopePublish, TokenTTL: 15 * time.Minute}, now)
	read, publish, admin := []registry.Scope{registry.ScopeRead}, []registry.Scope{registry.ScopePublish}, []registry.Scope{registry.ScopeAdmin}

	type want struct {
		kind    registry.Kind // -1: issued
		message string        // part of the refusal, or of nothing
		expires time.Time     // of the issued token
	}
	ok := func(expires time.Time) want { return want{kind: -1, expires: expires} }
	refused := func(kind registry.Kind, message string) want { return want{kind: kind, message: message} }
	tests := []struct {
		name   string
		parent Parent
		req    Request
		want   want
	}{
		// Within the parent.
		{"a narrower token inherits its parent's expiry", aliceRead2h, Request{User: "alice", Scopes: read}, ok(now.Add(2 * time.Hour))},
		{"an earlier expiry", aliceRead2h, Request{User: "alice", Scopes: read, ExpiresAt: hour}, ok(hour)},
		{"a never-expiring parent mints a never-expiring token", aliceAdmin, Request{User: "alice", Scopes: publish}, ok(time.Time{})},
		{"a bound parent mints within its set", aliceAcme, Request{User: "alice", Scopes: read, Namespaces: []string{"ACME"}}, ok(time.Time{})},
		{"a global admin mints for another user", rootForever, Request{User: "alice", Scopes: admin}, ok(time.Time{})},
		{"a namespace admin mints a service token of it", aliceAdmin, Request{Scopes: publish, Namespaces: []string{"acme"}}, ok(time.Time{})},
		{"a service token mints a narrower one of its namespace", service, Request{Scopes: read, Namespaces: []string{"acme"}}, ok(time.Time{})},
		{"a web session mints what a sign-in does", session, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(signInTTL)}, ok(now.Add(signInTTL))},
		{"a sign-in mints a token of its user", signIn, Request{User: "alice", Scopes: admin, ExpiresAt: now.Add(signInTTL)}, ok(now.Add(signInTTL))},
		{"a sign-in mints a session", signIn, Request{User: "alice", Scopes: admin, ExpiresAt: now.Add(12 * time.Hour), Session: true}, ok(now.Add(12 * time.Hour))},
		{"a trust policy mints its scope on its namespace", policy, Request{Scopes: publish, Namespaces: []string{"acme"}}, ok(now.Add(15 * time.Minute))},
		{"the operator mints a global admin token", OperatorParent(), Request{Scopes: admin}, ok(time.Time{})},

		// Longer than the parent.
		{"longer than the parent token", aliceRead2h, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(30 * 24 * time.Hour)}, refused(registry.Forbidden, "token tok_alice expires at 2026-11-28T14:00:00Z: the new token cannot outlive it")},
		{"a global admin's expiring token mints no longer token", rootAdmin2h, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(3 * time.Hour)}, refused(registry.Forbidden, "cannot outlive it")},
		{"a global admin's expiring token gives its expiry", rootAdmin2h, Request{Scopes: read}, ok(now.Add(2 * time.Hour))},
		{"longer than a sign-in gives, from a session", session, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(signInTTL + time.Second)}, refused(registry.Forbidden, "a token created in a web session lives at most 30 days")},
		{"longer than a sign-in gives", signIn, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(signInTTL + time.Hour)}, refused(registry.Forbidden, "a sign-in gives tokens of at most 30 days")},
		{"longer than the trust policy gives", policy, Request{Scopes: publish, Namespaces: []string{"acme"}, ExpiresAt: now.Add(time.Hour)}, refused(registry.Forbidden, "trust policy tp_1 gives tokens of at most 15m0s")},

		// Broader than the parent.
		{"a broader scope", aliceRead2h, Request{User: "alice", Scopes: publish}, refused(registry.Forbidden, "token tok_alice grants at most read: it cannot create a token with publish")},
		{"admin from a read token", aliceRead2h, Request{User: "alice", Scopes: []registry.Scope{registry.ScopeRead, registry.ScopeAdmin}}, refused(registry.Forbidden, "cannot create a token with admin")},
		{"a global token from a bound one", aliceAcme, Request{User: "alice", Scopes: read}, refused(registry.Forbidden, "the new token must be bound to some of them too")},
		{"another namespace", aliceAcme, Request{User: "alice", Scopes: read, Namespaces: []string{"acme", "labs"}}, refused(registry.Forbidden, "the new token cannot be bound to labs")},
		{"another user's token from a user", aliceAdmin, Request{User: "root", Scopes: read}, refused(registry.Forbidden, "user alice cannot create tokens for user root")},
		{"a personal token from a service token", service, Request{User: "alice", Scopes: read}, refused(registry.Forbidden, "only global admins create personal tokens")},
		{"a global service token from a non-admin", aliceAdmin, Request{Scopes: admin}, refused(registry.Forbidden, "does not grant admin on every namespace")},
		{"a service token of a namespace not administered", aliceAdmin, Request{Scopes: read, Namespaces: []string{"labs"}}, refused(registry.Forbidden, "does not grant admin on namespace labs")},
		{"a sign-in mints for another user", signIn, Request{User: "root", Scopes: admin}, refused(registry.Forbidden, "a sign-in of user alice gives tokens of user alice only")},
		{"a sign-in of a disabled user", SignInParent(registry.User{Name: "off", Disabled: true}, signInTTL, now), Request{User: "off", Scopes: read}, refused(registry.Forbidden, "user off is disabled")},
		{"admin from a trust policy", policy, Request{Scopes: admin, Namespaces: []string{"acme"}}, refused(registry.Forbidden, "gives at most publish (never admin)")},
		{"another namespace from a trust policy", policy, Request{Scopes: read, Namespaces: []string{"labs"}}, refused(registry.Forbidden, "gives tokens of namespace acme only")},
		{"a personal token from a trust policy", policy, Request{User: "alice", Scopes: read, Namespaces: []string{"acme"}}, refused(registry.Forbidden, "gives service tokens only")},

		// Sessions only from a sign-in.
		{"a session from a token", aliceAdmin, Request{User: "alice", Scopes: admin, ExpiresAt: hour, Session: true}, refused(registry.Forbidden, "a web session comes only from a sign-in")},
		{"a session from a session", session, Request{User: "alice", Scopes: admin, ExpiresAt: hour, Session: true}, refused(registry.Forbidden, "a web session comes only from a sign-in")},
		{"a session from a global admin", rootForever, Request{User: "alice", Scopes: admin, ExpiresAt: hour, Session: true}, refused(registry.Forbidden, "a web session comes only from a sign-in")},
		{"a session from the operator", OperatorParent(), Request{User: "alice", Scopes: admin, ExpiresAt: hour, Session: true}, refused(registry.Forbidden, "a web session comes only from a sign-in")},
		{"a session from a trust policy", policy, Request{Scopes: publish, Namespaces: []string{"acme"}, Session: true}, refused(registry.Forbidden, "a web session comes only from a sign-in")},
		{"a narrowed session", signIn, Request{User: "alice", Scopes: read, ExpiresAt: hour, Session: true}, refused(registry.Invalid, "a web session carries all of its user's rights")},
		{"a session without expiry", signIn, Request{User: "alice", Scopes: admin, Session: true}, refused(registry.Invalid, "a web session carries all of its user's rights and an expiry")},
		{"a token posing as a session", aliceAdmin, Request{User: "alice", Scopes: read, Description: " web session "}, refused(registry.Invalid, "is kept for web sessions")},

		// Malformed, whoever asks.
		{"no scope", rootForever, Request{User: "alice"}, refused(registry.Invalid, "a token needs at least one scope")},
		{"an unknown scope", rootForever, Request{User: "alice", Scopes: []registry.Scope{"root"}}, refused(registry.Invalid, "")},
		{"an expiry in the past", rootForever, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(-time.Second)}, refused(registry.Invalid, "is not in the future")},
		{"an expiry of now", rootForever, Request{User: "alice", Scopes: read, ExpiresAt: now}, refused(registry.Invalid, "is not in the future")},
		{"an absurd expiry", rootForever, Request{User: "alice", Scopes: read, ExpiresAt: now.Add(MaxTokenLifetime + time.Second)}, refused(registry.Invalid, "more than 100 years ahead")},
		{"the year 9999", rootForever, Request{User: "alice", Scopes: read, ExpiresAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}, refused(registry.Invalid, "more than 100 years ahead")},
		{"an absurd expiry from the operator", OperatorParent(), Request{Scopes: admin, ExpiresAt: now.Add(200 * 365 * 24 * time.Hour)}, refused(registry.Invalid, "more than 100 years ahead")},
		{"a bad namespace name", rootForever, Request{Scopes: read, Namespaces: []string{"../etc"}}, refused(registry.Invalid, "")},
		{"a bad user name", rootForever, Request{User: "-x-", Scopes: read}, refused(registry.Invalid, "")},
		{"a long description", rootForever, Request{Scopes: read, Description: strings.Repeat("x", registry.MaxDescriptionLength+1)}, refused(registry.Invalid, "description is too long")},
		{"too many namespaces", rootForever, Request{Scopes: read, Namespaces: manyNamespaces(registry.MaxTokenNamespaces + 1)}, refused(registry.Invalid, "at most 100 namespaces")},
		{"no parent", Parent{}, Request{Scopes: read}, refused(registry.Internal, "")},
		{"an anonymous parent", TokenParent(Principal{}, signInTTL, now), Request{Scopes: read}, refused(registry.Unauthenticated, "")},
		{"an expired parent", TokenParent(personal(alice, registry.ScopeAdmin, now.Add(-time.Second)), signInTTL, now), Request{User: "alice", Scopes: read}, refused(registry.Unauthenticated, "expired")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, secret, err := Issue(tc.parent, tc.req, now)
			if tc.want.kind == -1 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tok.ExpiresAt.Equal(tc.want.expires) || tok.ID == "" || tok.Hash != HashToken(secret) || !tok.CreatedAt.Equal(now) {
					t.Errorf("issued %+v", tok)
				}
				prefix := TokenPrefix
				if tc.req.Session {
					prefix = SessionPrefix
					if tok.Description != SessionDescription {
						t.Errorf("a session described %q", tok.Description)
					}
				}
				if !strings.HasPrefix(secret, prefix) {
					t.Errorf("secret %.14s..., want prefix %s", secret, prefix)
				}
				return
			}
			if err == nil {
				t.Fatalf("issued %+v, want a refusal", tok)
			}
			if registry.KindOf(err) != tc.want.kind || !strings.Contains(registry.Message(err), tc.want.message) {
				t.Errorf("refusal %v (kind %v), want kind %v saying %q", err, registry.KindOf(err), tc.want.kind, tc.want.message)
			}
			if tok.ID != "" || secret != "" {
				t.Errorf("a refusal returned a token %+v", tok)
			}
		})
	}
}

func manyNamespaces(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "ns" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}

// TestIssueFixedID: login.v1 fixes a token's ID when it issues the code.
func TestIssueFixedID(t *testing.T) {
	now := time.Now()
	tok, _, err := Issue(SignInParent(registry.User{Name: "alice"}, time.Hour, now), Request{ID: "tok_0123456789abcdef", User: "alice", Scopes: []registry.Scope{registry.ScopeRead}}, now)
	if err != nil || tok.ID != "tok_0123456789abcdef" || !tok.ExpiresAt.Equal(now.Add(time.Hour).UTC()) {
		t.Fatalf("%+v, %v", tok, err)
	}
}

// TestSessionsAndBearerTokensDoNotMix: the cookie takes only a session
// made by a sign-in, the Authorization header never a session.
func TestSessionsAndBearerTokensDoNotMix(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	a := f.access.Authenticator()
	reader, err := f.idx.GetUser(ctx, "reader")
	if err != nil {
		t.Fatal(err)
	}
	open := func(life time.Duration) (registry.Token, string) {
		t.Helper()
		now := time.Now()
		tok, secret, err := Issue(SignInParent(reader, 30*24*time.Hour, now), Request{User: "reader", Scopes: []registry.Scope{registry.ScopeAdmin},
			ExpiresAt: now.Add(life), Session: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.idx.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		return tok, secret
	}
	session, secret := open(time.Hour)
	p, err := a.AuthenticateSession(ctx, secret)
	if err != nil || !p.Session || p.Token.ID != session.ID || p.User.Name != "reader" {
		t.Fatalf("a session: %+v, %v", p, err)
	}
	bearer := func(secret string) error {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+secret)
		_, err := a.Authenticate(r)
		if err == nil {
			_, err = a.AuthenticateCached(r)
		}
		return err
	}
	if err := bearer(f.tokens["reader"]); err != nil {
		t.Fatalf("a bearer token: %v", err)
	}

	// A session is no bearer token.
	if err := bearer(secret); !registry.IsKind(err, registry.Unauthenticated) || !strings.Contains(err.Error(), "no API token") {
		t.Errorf("a session as a bearer token: %v, want unauthenticated", err)
	}
	// The web UI's forms read the session afresh.
	if p, err := a.AuthenticateSessionNow(ctx, secret); err != nil || !p.Session || p.Token.ID != session.ID {
		t.Errorf("a session read afresh: %+v, %v", p, err)
	}

	// No bearer token is a session, whatever its user, scope or state;
	// nor is anything else put in the cookie.
	expired, expiredSecret := open(time.Hour)
	revoked, revokedSecret := open(time.Hour)
	if err := f.idx.ExpireToken(ctx, expired.ID, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := f.idx.RevokeToken(ctx, revoked.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	a.Invalidate()
	cookies := map[string]string{
		"a personal token":       f.tokens["reader"],
		"a service token":        f.tokens["service"],
		"an expired token":       f.tokens["expired"],
		"a revoked token":        f.tokens["revoked"],
		"an expired session":     expiredSecret,
		"a revoked session":      revokedSecret,
		"a made-up session":      SessionPrefix + strings.Repeat("A", 43),
		"a bearer-shaped header": "Bearer " + f.tokens["reader"],
		"a session, renamed":     TokenPrefix + strings.TrimPrefix(secret, SessionPrefix),
		"a huge value":           SessionPrefix + strings.Repeat("A", 4096),
		"nothing":                "",
	}
	for name, cookie := range cookies {
		if p, err := a.AuthenticateSession(ctx, cookie); !registry.IsKind(err, registry.Unauthenticated) {
			t.Errorf("%s in the cookie: %+v, %v, want unauthenticated", name, p, err)
		}
		if p, err := a.AuthenticateSessionNow(ctx, cookie); !registry.IsKind(err, registry.Unauthenticated) {
			t.Errorf("%s as a session read afresh: %+v, %v, want unauthenticated", name, p, err)
		}
	}
}
