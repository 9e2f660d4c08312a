package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/trovetest"
)

// apiCall sends a JSON request and decodes the answer into out (if not nil).
func apiCall(t *testing.T, s interface {
	HTTPClient() *http.Client
}, base, method, path, token, body string, out any) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, string(raw)
}

func TestUserLifecycle(t *testing.T) {
	s, _ := setup(t)
	admin := s.AdminToken
	call := func(method, path, token, body string, out any) (int, string) {
		t.Helper()
		return apiCall(t, s, s.URL, method, path, token, body, out)
	}
	const pw = "a perfectly fine password"

	// Creating users.
	// In order: the second call depends on the first.
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"name":"Alice","password":"` + pw + `"}`, 201},
		{`{"name":"alice"}`, 409},
		{`{"name":"bob","password":"short"}`, 400},
		{`{"name":"-bob-"}`, 400},
		{`{"name":"bob","extra":1}`, 400},
	} {
		if status, raw := call("POST", "/api/v1/users", admin, tc.body, nil); status != tc.want {
			t.Errorf("create user %s = %d %s, want %d", tc.body, status, raw, tc.want)
		}
	}
	var u apispec.User
	if status, raw := call("GET", "/api/v1/users/alice", admin, "", &u); status != 200 || u.Name != "alice" || !u.HasPassword || u.Admin || strings.Contains(raw, "argon2") {
		t.Fatalf("show alice = %d %s", status, raw)
	}

	// A personal token carries alice's rights: none on acme until she is a member.
	var created apispec.CreatedToken
	if status, raw := call("POST", "/api/v1/tokens", admin, `{"user":"alice","scopes":["admin"]}`, &created); status != 201 || created.Token.User != "alice" {
		t.Fatalf("personal token = %d %s", status, raw)
	}
	alice := created.Secret
	if status, _ := call("GET", "/api/v1/namespaces/acme/providers", alice, "", nil); status != 404 {
		t.Errorf("non-member reads acme: %d, want 404", status)
	}
	if status, raw := call("PUT", "/api/v1/namespaces/acme/members/alice", admin, `{"role":"publisher"}`, nil); status != 200 {
		t.Fatalf("add member = %d %s", status, raw)
	}
	if status, _ := call("GET", "/api/v1/namespaces/acme/providers", alice, "", nil); status != 200 {
		t.Errorf("publisher reads acme: %d, want 200", status)
	}
	if status, _ := call("PUT", "/api/v1/namespaces/acme/members/alice", alice, `{"role":"admin"}`, nil); status != 403 {
		t.Errorf("publisher promotes herself: %d, want 403", status)
	}
	for body, want := range map[string]int{`{"role":"owner"}`: 400, `{"role":""}`: 400} {
		if status, _ := call("PUT", "/api/v1/namespaces/acme/members/alice", admin, body, nil); status != want {
			t.Errorf("set role %s = %d, want %d", body, status, want)
		}
	}
	if status, _ := call("PUT", "/api/v1/namespaces/acme/members/nobody", admin, `{"role":"reader"}`, nil); status != 404 {
		t.Errorf("add an unknown user = %d, want 404", status)
	}

	// Alice narrows her own tokens, never widens them.
	var narrow apispec.CreatedToken
	if status, raw := call("POST", "/api/v1/tokens", alice, `{"user":"alice","scopes":["read"],"namespace":"acme","expires_at":"`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`, &narrow); status != 201 {
		t.Fatalf("alice's narrower token = %d %s", status, raw)
	}
	for body, want := range map[string]int{
		`{"user":"alice","scopes":["publish"],"namespace":"acme"}`: 403, // wider scope
		`{"user":"alice","scopes":["read"]}`:                       403, // not bound to acme
		`{"user":"alice","scopes":["read"],"namespace":"acme","expires_at":"` + time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339) + `"}`: 403, // outlives
		`{"user":"bob","scopes":["read"],"namespace":"acme"}`: 403, // another user
	} {
		if status, raw := call("POST", "/api/v1/tokens", narrow.Secret, body, nil); status != want {
			t.Errorf("create %s with alice's narrow token = %d %s, want %d", body, status, raw, want)
		}
	}
	var inherited apispec.CreatedToken
	if status, raw := call("POST", "/api/v1/tokens", narrow.Secret, `{"user":"alice","scopes":["read"],"namespace":"acme"}`, &inherited); status != 201 ||
		inherited.Token.ExpiresAt == nil || !inherited.Token.ExpiresAt.Equal(*narrow.Token.ExpiresAt) {
		t.Errorf("a token made by an expiring token = %d %s, want the same expiry %v", status, raw, narrow.Token.ExpiresAt)
	}

	// Her own tokens: list, expire (earlier only), revoke.
	var list apispec.TokenList
	if status, raw := call("GET", "/api/v1/tokens?user=alice", alice, "", &list); status != 200 || len(list.Tokens) != 3 {
		t.Fatalf("alice's tokens = %d %s", status, raw)
	}
	later := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	if status, _ := call("PATCH", "/api/v1/tokens/"+narrow.Token.ID, alice, `{"expires_at":"`+later+`"}`, nil); status != 400 {
		t.Errorf("extending a token = %d, want 400", status)
	}
	if status, raw := call("PATCH", "/api/v1/tokens/"+narrow.Token.ID, alice, `{"expires_at":"`+time.Now().Add(-time.Second).UTC().Format(time.RFC3339)+`"}`, nil); status != 200 {
		t.Errorf("expiring a token now = %d %s", status, raw)
	}
	if status, raw := call("GET", "/api/v1/whoami", narrow.Secret, "", nil); status != 401 || !strings.Contains(raw, "expired") {
		t.Errorf("expired token = %d %s, want 401 expired", status, raw)
	}
	if status, _ := call("DELETE", "/api/v1/tokens/"+inherited.Token.ID, alice, "", nil); status != 204 {
		t.Errorf("alice revokes her token = %d", status)
	}
	if status, _ := call("GET", "/api/v1/whoami", inherited.Secret, "", nil); status != 401 {
		t.Errorf("revoked token still works: %d", status)
	}

	// Passwords: her own needs the current one; admins reset.
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"password":"another fine password"}`, 403},
		{`{"password":"another fine password","current_password":"wrong password"}`, 403},
		{`{"password":"short","current_password":"` + pw + `"}`, 400},
		{`{"disabled":true}`, 403},
		{`{"password":"another fine password","current_password":"` + pw + `"}`, 200},
	} {
		if status, raw := call("PATCH", "/api/v1/users/alice", alice, c.body, nil); status != c.want {
			t.Errorf("alice PATCH %s = %d %s, want %d", c.body, status, raw, c.want)
		}
	}
	if status, _ := call("PATCH", "/api/v1/users/alice", admin, `{"password":"reset by the admin"}`, nil); status != 200 {
		t.Errorf("admin resets the password: %d", status)
	}

	// Disabling stops her tokens at once; enabling restores them.
	if status, _ := call("PATCH", "/api/v1/users/alice", admin, `{"disabled":true}`, nil); status != 200 {
		t.Fatal("disable failed")
	}
	if status, raw := call("GET", "/api/v1/whoami", alice, "", nil); status != 401 || !strings.Contains(raw, "disabled") {
		t.Errorf("token of a disabled user = %d %s", status, raw)
	}
	if status, _ := call("PATCH", "/api/v1/users/alice", admin, `{"disabled":false}`, nil); status != 200 {
		t.Fatal("enable failed")
	}
	if status, _ := call("GET", "/api/v1/whoami", alice, "", nil); status != 200 {
		t.Errorf("token after enabling = %d", status)
	}
	if status, _ := call("DELETE", "/api/v1/namespaces/acme/members/alice", admin, "", nil); status != 204 {
		t.Error("remove member failed")
	}
	if status, _ := call("GET", "/api/v1/namespaces/acme/providers", alice, "", nil); status != 404 {
		t.Errorf("removed member reads acme: %d, want 404", status)
	}

	// The audit log saw it all, with no secret in it.
	var log apispec.AuditList
	if status, raw := call("GET", "/api/v1/audit?limit=1000", admin, "", &log); status != 200 {
		t.Fatalf("audit = %d %s", status, raw)
	}
	seen := map[string]int{}
	raw, _ := json.Marshal(log)
	for _, secret := range []string{pw, "another fine password", "reset by the admin", alice, narrow.Secret, inherited.Secret} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the audit log contains a secret")
		}
	}
	for _, e := range log.Events {
		seen[e.Action]++
	}
	for action, n := range map[string]int{"user.create": 1, "token.create": 3, "membership.set": 1, "membership.delete": 1,
		"token.expire": 1, "token.revoke": 1, "user.password": 2, "user.update": 2} {
		if seen[action] != n {
			t.Errorf("audit has %d %s events, want %d (all: %v)", seen[action], action, n, seen)
		}
	}
	var filtered apispec.AuditList
	if status, _ := call("GET", "/api/v1/audit?namespace=acme&action=membership.set", admin, "", &filtered); status != 200 || len(filtered.Events) != 1 || filtered.Events[0].Target != "alice" {
		t.Errorf("filtered audit = %+v", filtered)
	}
	for _, q := range []string{"since=yesterday", "limit=0", "limit=1001", "before=-1", "namespace=-x"} {
		if status, _ := call("GET", "/api/v1/audit?"+q, admin, "", nil); status != 400 {
			t.Errorf("audit?%s = %d, want 400", q, status)
		}
	}
}

func TestNamespaceVisibility(t *testing.T) {
	s, tokens := setup(t)
	admin := s.AdminToken
	call := func(method, path, token, body string, out any) (int, string) {
		t.Helper()
		return apiCall(t, s, s.URL, method, path, token, body, out)
	}
	for body, want := range map[string]string{
		`{"name":"team-a"}`:                        "private",
		`{"name":"team-b","visibility":"private"}`: "private",
		`{"name":"team-c","visibility":"public"}`:  "public",
		`{"name":"team-d","visibility":"secret"}`:  "",
	} {
		var ns apispec.Namespace
		status, raw := call("POST", "/api/v1/namespaces", admin, body, &ns)
		switch {
		case want == "" && status != 400:
			t.Errorf("create %s = %d %s, want 400", body, status, raw)
		case want != "" && (status != 201 || ns.Visibility != want):
			t.Errorf("create %s = %d %s, want 201 and %s", body, status, raw, want)
		}
	}
	other := strings.TrimPrefix(tokens[otherAdmin], "Bearer ")
	if status, _ := call("GET", "/api/v1/namespaces/team-a", other, "", nil); status != 404 {
		t.Errorf("another namespace's admin reads a private namespace: %d, want 404", status)
	}
	var ns apispec.Namespace
	if status, raw := call("PATCH", "/api/v1/namespaces/team-a", admin, `{"visibility":"public"}`, &ns); status != 200 || ns.Visibility != "public" {
		t.Fatalf("make public = %d %s", status, raw)
	}
	if status, _ := call("GET", "/api/v1/namespaces/team-a", other, "", nil); status != 200 {
		t.Errorf("reading a public namespace: %d, want 200", status)
	}
	if status, _ := call("PATCH", "/api/v1/namespaces/team-a", admin, `{"visibility":"world"}`, nil); status != 400 {
		t.Errorf("invalid visibility: %d, want 400", status)
	}
	var list apispec.NamespaceList
	call("GET", "/api/v1/namespaces", other, "", &list)
	names := fmt.Sprint(list.Namespaces)
	if !strings.Contains(names, "team-a") || !strings.Contains(names, "team-c") || strings.Contains(names, "team-b") || strings.Contains(names, "acme") {
		t.Errorf("another namespace's admin lists %s; want the public namespaces and its own only", names)
	}
}

// TestPasswordCheckLimitedAndAudited checks that the current password
// asked for by a password change is rate limited like a login (a stolen
// token must not allow unlimited guesses) and that failures are audited
// with actor, source address and the account.
func TestPasswordCheckLimitedAndAudited(t *testing.T) {
	s := trovetest.Start(t, trovetest.Options{Login: login.Options{AccountBurst: 2, AccountEvery: time.Hour}})
	call := func(method, path, token, body string, out any) (int, string) {
		t.Helper()
		return apiCall(t, s, s.URL, method, path, token, body, out)
	}
	const pw = "a perfectly fine password"
	personal := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		if status, raw := call("POST", "/api/v1/users", s.AdminToken, `{"name":"`+name+`","password":"`+pw+`"}`, nil); status != 201 {
			t.Fatalf("create %s = %d %s", name, status, raw)
		}
		var created apispec.CreatedToken
		if status, raw := call("POST", "/api/v1/tokens", s.AdminToken, `{"user":"`+name+`","scopes":["admin"]}`, &created); status != 201 {
			t.Fatalf("token of %s = %d %s", name, status, raw)
		}
		personal[name] = created.Secret
	}
	guess := `{"password":"another fine password","current_password":"guess number one"}`
	for i := range 2 {
		if status, raw := call("PATCH", "/api/v1/users/alice", personal["alice"], guess, nil); status != 403 {
			t.Fatalf("guess %d = %d %s, want 403", i, status, raw)
		}
	}
	// The right password is refused now, without being checked.
	req, _ := http.NewRequest("PATCH", s.URL+"/api/v1/users/alice",
		strings.NewReader(`{"password":"another fine password","current_password":"`+pw+`"}`))
	req.Header.Set("Authorization", "Bearer "+personal["alice"])
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third attempt = %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The limit is per account: bob still changes his password.
	if status, raw := call("PATCH", "/api/v1/users/bob", personal["bob"], `{"password":"another fine password","current_password":"`+pw+`"}`, nil); status != 200 {
		t.Errorf("bob's password change = %d %s, want 200", status, raw)
	}
	// An admin resetting another user's password proves nothing and is
	// not limited.
	if status, raw := call("PATCH", "/api/v1/users/alice", s.AdminToken, `{"password":"reset by the admin"}`, nil); status != 200 {
		t.Errorf("admin reset = %d %s, want 200", status, raw)
	}

	var log apispec.AuditList
	if status, raw := call("GET", "/api/v1/audit?action=login.failure", s.AdminToken, "", &log); status != 200 {
		t.Fatalf("audit = %d %s", status, raw)
	}
	if len(log.Events) != 3 {
		t.Fatalf("login.failure events: %+v, want 3 (two wrong passwords, one limited)", log.Events)
	}
	for i, e := range log.Events {
		if e.Actor != "user:alice" || e.Target != "alice" || e.SourceAddr != "127.0.0.1" || !strings.Contains(e.Details, "API") {
			t.Errorf("event %d = %+v, want actor user:alice, target alice, source 127.0.0.1", i, e)
		}
		if strings.Contains(e.Details, "guess number one") || strings.Contains(e.Details, pw) {
			t.Errorf("event %d contains a password: %+v", i, e)
		}
	}
	if !strings.Contains(log.Events[0].Details, "rate limited (account)") || !strings.Contains(log.Events[1].Details, "wrong current password") {
		t.Errorf("details: %q, %q", log.Events[0].Details, log.Events[1].Details)
	}
}
