package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEndedSessionRefusedAtOnce: a web session ended through the web UI
// (its own sign-out, or revoked in the settings from another session of
// the same user) opens no page on the very next request, although the
// pages authenticate sessions through the token cache: the revocation
// reaches the cache through the index's commit hook alone, not through a
// clear of the entrance.
func TestEndedSessionRefusedAtOnce(t *testing.T) {
	e := start(t)
	// signedIn reports whether cookie opens the home page signed in
	// now (the page offers to sign out); each call also puts the
	// session's lookup in the cache.
	signedIn := func(t *testing.T, cookie string) bool {
		t.Helper()
		p := e.withCookie(t, cookie).get("/")
		if p.status != http.StatusOK {
			t.Fatalf("the home page answers %d", p.status)
		}
		return strings.Contains(p.body, `action="/sign-out"`)
	}
	t.Run("sign-out", func(t *testing.T) {
		b := e.browser(t)
		b.signIn("alice", password)
		session := b.sessionOf()
		if !signedIn(t, session) || !signedIn(t, session) { // the second from the cache
			t.Fatal("the new session opens no page")
		}
		if p := b.post("/sign-out", url.Values{"csrf": {csrf(t, b.get("/settings/tokens"))}}); p.status != http.StatusSeeOther {
			t.Fatalf("sign-out: %d", p.status)
		}
		if signedIn(t, session) {
			t.Error("a signed-out session still opens pages")
		}
	})
	t.Run("revoked in the settings", func(t *testing.T) {
		victim, other := e.browser(t), e.browser(t)
		victim.signIn("bob", password)
		session := victim.sessionOf()
		tokens, err := e.admin.ListUserTokens(context.Background(), "bob")
		if err != nil || len(tokens) != 1 {
			t.Fatalf("bob's tokens: %+v, %v", tokens, err)
		}
		if !signedIn(t, session) || !signedIn(t, session) {
			t.Fatal("the new session opens no page")
		}
		other.signIn("bob", password)
		if p := other.post("/settings/tokens/"+tokens[0].ID+"/revoke", url.Values{"csrf": {csrf(t, other.get("/settings/tokens"))}}); p.status != http.StatusSeeOther {
			t.Fatalf("revoke: %d\n%s", p.status, p.body)
		}
		if signedIn(t, session) {
			t.Error("a session revoked in the settings still opens pages")
		}
	})
}
