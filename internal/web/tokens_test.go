package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
)

// sessionOf returns the session cookie's value the browser holds.
func (b *browser) sessionOf() string {
	u, _ := url.Parse(b.e.srv.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "__Host-trove-session" {
			return c.Value
		}
	}
	return ""
}

// withCookie returns a browser that holds value as its session cookie.
func (e *env) withCookie(t *testing.T, value string) *browser {
	b := e.browser(t)
	u, _ := url.Parse(e.srv.URL)
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "__Host-trove-session", Value: value, Path: "/", Secure: true}})
	return b
}

// tokenCount counts a user's tokens, sessions included.
func (e *env) tokenCount(t *testing.T, user string) int {
	t.Helper()
	ts, err := e.admin.ListUserTokens(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return len(ts)
}

// TestTokenFormRefusals posts hostile token forms, CSRF token included,
// as the page does: each is answered on the page with the rule it
// breaks, and no token is stored.
func TestTokenFormRefusals(t *testing.T) {
	e := start(t)
	bob := e.browser(t)
	if p := bob.signIn("bob", password); p.status != http.StatusSeeOther {
		t.Fatalf("bob signs in: %d", p.status)
	}
	page := bob.get("/settings/tokens")
	token := csrf(t, page)
	before := e.tokenCount(t, "bob")
	form := func(description, access, days, namespaces string) url.Values {
		return url.Values{"csrf": {token}, "description": {description}, "access": {access}, "days": {days}, "namespaces": {namespaces}}
	}
	cases := []struct {
		name    string
		form    url.Values
		status  int
		message string
	}{
		{"longer than a sign-in gives", form("x", "read", "365", ""), 400, "Choose one of the offered lifetimes."},
		{"an expiry in the past", form("x", "read", "-1", ""), 400, "Choose one of the offered lifetimes."},
		{"no expiry", form("x", "read", "0", ""), 400, "Choose one of the offered lifetimes."},
		{"an absurd lifetime", form("x", "read", "99999999999999999999", ""), 400, "Choose one of the offered lifetimes."},
		{"an unknown access", form("x", "root", "1", ""), 400, "root"},
		{"another user's private namespace", form("x", "read", "1", "secret"), 404, "namespace &#34;secret&#34; not found"},
		{"a namespace that does not exist", form("x", "read", "1", "nosuch"), 404, "nosuch"},
		{"a bad namespace name", form("x", "read", "1", "../etc"), 400, ""},
		{"posing as a web session", form("web session", "read", "1", ""), 400, "kept for web sessions"},
		{"a long description", form(strings.Repeat("x", registry.MaxDescriptionLength+1), "read", "1", ""), 400, "description is too long"},
		{"a newline the API refuses", form("ab\n", "read", "1", ""), 400, "control character"},
		{"no CSRF token", url.Values{"description": {"x"}, "access": {"read"}, "days": {"1"}}, 403, "Reload the page"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := bob.post("/settings/tokens", tc.form)
			if p.status != tc.status || !strings.Contains(p.body, tc.message) {
				t.Errorf("= %d, want %d saying %q:\n%s", p.status, tc.status, tc.message, p.body)
			}
		})
	}
	host := strings.TrimPrefix(e.srv.URL, "https://")
	for _, origin := range []string{"https://evil.example", "http://" + host, "null", "https://" + host + ".evil.example", "::"} {
		if p := bob.post("/settings/tokens", form("x", "read", "1", ""), "Origin", origin); p.status != http.StatusForbidden {
			t.Errorf("a form from origin %q = %d, want 403", origin, p.status)
		}
	}
	if n := e.tokenCount(t, "bob"); n != before {
		t.Errorf("the refused forms stored %d tokens", n-before)
	}
}

// TestSessionOnlyFromSignIn: the cookie opens pages only with a session
// a sign-in made; a bearer token in it, however it was made, opens
// nothing and mints nothing, and a session is no bearer token.
func TestSessionOnlyFromSignIn(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	// The probe's token: alice's, read-only, expiring in 2 hours.
	probe, err := e.admin.CreateToken(ctx, apispec.CreateTokenRequest{User: "alice", Scopes: []string{"read"}, ExpiresAt: client.ExpiresIn(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	allRights, err := e.admin.CreateToken(ctx, apispec.CreateTokenRequest{User: "alice", Scopes: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	alice := e.browser(t)
	alice.signIn("alice", password)
	realCSRF := csrf(t, alice.get("/settings/tokens"))

	// An expired session and a revoked one.
	user, err := e.srv.Index.GetUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var expiredSession, revokedSession string
	for _, s := range []*string{&expiredSession, &revokedSession} {
		now := time.Now()
		tok, secret, err := auth.Issue(auth.SignInParent(user, time.Hour, now), auth.Request{User: "alice",
			Scopes: []registry.Scope{registry.ScopeAdmin}, ExpiresAt: now.Add(time.Hour), Session: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.srv.Index.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if s == &expiredSession {
			err = e.srv.Index.ExpireToken(ctx, tok.ID, now.Add(-time.Second))
		} else {
			err = e.admin.RevokeToken(ctx, tok.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		*s = secret
	}
	// A session revoked through its own sign-out.
	signedOut := e.browser(t)
	signedOut.signIn("alice", password)
	signedOutSession := signedOut.sessionOf()
	if p := signedOut.post("/sign-out", url.Values{"csrf": {csrf(t, signedOut.get("/settings/tokens"))}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}

	before := e.tokenCount(t, "alice")
	for name, cookie := range map[string]string{
		"a personal read token expiring in 2 hours": probe.Secret,
		"a personal token with all rights":          allRights.Secret,
		"the global admin token":                    e.srv.AdminToken,
		"an expired session":                        expiredSession,
		"a revoked session":                         revokedSession,
		"a signed-out session":                      signedOutSession,
		"a made-up session":                         auth.SessionPrefix + strings.Repeat("A", 43),
	} {
		t.Run(name, func(t *testing.T) {
			b := e.withCookie(t, cookie)
			p := b.get("/settings/tokens")
			if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/sign-in") {
				t.Errorf("the tokens page = %d (Location %q), want the sign-in page", p.status, p.header.Get("Location"))
			}
			if c := strings.Join(p.header.Values("Set-Cookie"), "; "); !strings.Contains(c, "__Host-trove-session=;") {
				t.Errorf("the cookie was not dropped: %q", c)
			}
			b = e.withCookie(t, cookie)
			if p := b.post("/settings/tokens", url.Values{"csrf": {realCSRF}, "description": {"probe"}, "access": {"read"}, "days": {"30"}}); p.status != http.StatusUnauthorized {
				t.Errorf("the token form = %d, want 401:\n%s", p.status, p.body)
			}
			if p := b.get("/namespaces/secret/settings"); p.status != http.StatusSeeOther {
				t.Errorf("a namespace's settings = %d, want the sign-in page", p.status)
			}
		})
	}
	if n := e.tokenCount(t, "alice"); n != before {
		t.Errorf("the cookies minted %d tokens", n-before)
	}

	// A session's secret is no bearer token: not on the API, not on the
	// protocols.
	session := alice.sessionOf()
	if !strings.HasPrefix(session, auth.SessionPrefix) {
		t.Fatalf("the session cookie %.14s... lacks the session prefix", session)
	}
	c, err := client.New(e.srv.URL, session, client.WithCAFile(e.srv.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WhoAmI(ctx); !client.IsUnauthenticated(err) || !strings.Contains(err.Error(), "no API token") {
		t.Errorf("the session as a bearer token on the API: %v, want 401", err)
	}
	if _, err := c.CreateToken(ctx, apispec.CreateTokenRequest{User: "alice", Scopes: []string{"read"}}); !client.IsUnauthenticated(err) {
		t.Errorf("the session minting through the API: %v, want 401", err)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/modules/secret", nil)
	req.Header.Set("Authorization", "Bearer "+session)
	resp, err := e.srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session as a bearer token on the protocols = %d, want 401", resp.StatusCode)
	}
	// The real session still works, and mints what a sign-in does.
	p := alice.post("/settings/tokens", url.Values{"csrf": {realCSRF}, "description": {"ci"}, "access": {"read"}, "days": {"30"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, auth.TokenPrefix) {
		t.Errorf("the session's token form = %d\n%s", p.status, p.body)
	}
}
