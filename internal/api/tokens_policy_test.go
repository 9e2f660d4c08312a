package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
)

// TestCreateTokenRefusals sends hostile requests to POST /api/v1/tokens:
// each is refused with a status and a message naming the rule, and
// nothing is stored or audited.
func TestCreateTokenRefusals(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	bearer := func(p string) string { return strings.TrimPrefix(tokens[p], "Bearer ") }
	in2h := time.Now().Add(2 * time.Hour)
	// ada administers acme; her tokens here are personal ones.
	adaRead2h := mint(t, s, "", registry.ScopeRead, func(tk *registry.Token) { tk.User, tk.ExpiresAt = "ada", in2h })
	adaAcme := mint(t, s, "acme", registry.ScopeAdmin, func(tk *registry.Token) { tk.User = "ada" })
	gina2h := mint(t, s, "", registry.ScopeAdmin, func(tk *registry.Token) { tk.User, tk.ExpiresAt = "gina", in2h })
	service2h := mint(t, s, "acme", registry.ScopeAdmin, func(tk *registry.Token) { tk.ExpiresAt = in2h })
	ada, err := s.Index.GetUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	session, sessionSecret, err := auth.Issue(auth.SignInParent(ada, time.Hour, now), auth.Request{User: "ada",
		Scopes: []registry.Scope{registry.ScopeAdmin}, ExpiresAt: now.Add(time.Hour), Session: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Index.CreateToken(ctx, session); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	many := make([]string, registry.MaxTokenNamespaces+1)
	for i := range many {
		many[i] = `"acme"`
	}

	stored, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, token, body string
		status            int
		message           string
	}{
		{"longer expiry than the parent", adaRead2h, `{"user":"ada","scopes":["read"],"expires_at":"` + at(30*24*time.Hour) + `"}`, 403, "the new token cannot outlive it"},
		{"a global admin's expiring token, longer", gina2h, `{"user":"ada","scopes":["read"],"expires_at":"` + at(3*time.Hour) + `"}`, 403, "the new token cannot outlive it"},
		{"a service token, longer", service2h, `{"namespaces":["acme"],"scopes":["read"],"expires_at":"` + at(24*time.Hour) + `"}`, 403, "the new token cannot outlive it"},
		{"broader scope", adaRead2h, `{"user":"ada","scopes":["publish"]}`, 403, "grants at most read: it cannot create a token with publish"},
		{"admin scope from a read token", adaRead2h, `{"user":"ada","scopes":["read","admin"]}`, 403, "cannot create a token with admin"},
		{"other namespace", adaAcme, `{"user":"ada","scopes":["read"],"namespaces":["acme","other"]}`, 403, "cannot be bound to other"},
		{"global from a bound token", adaAcme, `{"user":"ada","scopes":["read"]}`, 403, "must be bound to some of them too"},
		{"a global admin token from a non-admin", bearer(userAdmin), `{"scopes":["admin"]}`, 403, "does not grant admin on every namespace"},
		{"a service token of a namespace not administered", bearer(userAdmin), `{"namespaces":["other"],"scopes":["read"]}`, 403, "does not grant admin on namespace other"},
		{"a personal token of another user", bearer(userAdmin), `{"user":"gina","scopes":["read"]}`, 403, "user ada cannot create tokens for user gina"},
		{"a personal token from a service token", bearer(acmeAdmin), `{"user":"ada","scopes":["read"],"namespaces":["acme"]}`, 403, "only global admins create personal tokens"},
		{"a private namespace the user cannot read", bearer(userAdmin), `{"user":"ada","scopes":["read"],"namespaces":["other"]}`, 404, `namespace \"other\" not found`},
		{"expiry in the past", bearer(globalAdmin), `{"scopes":["read"],"expires_at":"` + at(-time.Minute) + `"}`, 400, "is not in the future"},
		{"expiry at the epoch", bearer(globalAdmin), `{"scopes":["read"],"expires_at":"1970-01-01T00:00:00Z"}`, 400, "is not in the future"},
		{"absurd expiry", bearer(globalAdmin), `{"scopes":["read"],"expires_at":"9999-12-31T23:59:59Z"}`, 400, "more than 100 years ahead"},
		{"unreadable expiry", bearer(globalAdmin), `{"scopes":["read"],"expires_at":"10000-01-01T00:00:00Z"}`, 400, ""},
		{"no scope", bearer(globalAdmin), `{"scopes":[]}`, 400, "at least one scope"},
		{"unknown scope", bearer(globalAdmin), `{"scopes":["root"]}`, 400, "root"},
		{"too many namespaces", bearer(globalAdmin), `{"scopes":["read"],"namespaces":[` + strings.Join(many, ",") + `]}`, 400, "at most 100 namespaces"},
		{"posing as a web session", bearer(userAdmin), `{"user":"ada","scopes":["read"],"description":"web session"}`, 400, "kept for web sessions"},
		{"a namespace that does not exist", bearer(globalAdmin), `{"scopes":["read"],"namespaces":["nosuch"]}`, 404, "nosuch"},
		{"a user who does not exist", bearer(globalAdmin), `{"user":"nobody","scopes":["read"]}`, 404, "nobody"},
		{"a web session as a bearer token", sessionSecret, `{"user":"ada","scopes":["read"]}`, 401, "a web session's cookie is no API token"},
		{"an expired token", bearer(expired), `{"scopes":["read"],"namespaces":["acme"]}`, 401, "expired"},
		{"a revoked token", bearer(revoked), `{"scopes":["read"],"namespaces":["acme"]}`, 401, "revoked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := apiCall(t, s, s.URL, "POST", "/api/v1/tokens", tc.token, tc.body, nil)
			if status != tc.status || !strings.Contains(raw, tc.message) {
				t.Errorf("= %d %s, want %d saying %q", status, raw, tc.status, tc.message)
			}
		})
	}
	// A session cookie alone opens no API route either.
	req, _ := http.NewRequest("POST", s.URL+"/api/v1/tokens", strings.NewReader(`{"user":"ada","scopes":["read"]}`))
	req.AddCookie(&http.Cookie{Name: "__Host-trove-session", Value: sessionSecret})
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a session cookie on the API = %d, want 401", resp.StatusCode)
	}

	after, err := s.Index.ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(stored) {
		t.Errorf("the refusals stored %d tokens", len(after)-len(stored))
	}
	events, err := s.Index.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditTokenCreate})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 0 {
		t.Errorf("the refusals were audited as creations: %+v", events)
	}

	// Within the parent, the same callers succeed: the expiry is the
	// parent's when none is asked for.
	status, raw := apiCall(t, s, s.URL, "POST", "/api/v1/tokens", adaRead2h, `{"user":"ada","scopes":["read"]}`, nil)
	if status != 201 || !strings.Contains(raw, in2h.UTC().Format("2006-01-02T15:04")) {
		t.Errorf("a narrower token = %d %s, want 201 expiring with its parent", status, raw)
	}
}
