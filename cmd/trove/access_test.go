package main

import (
	"encoding/json"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/trovetest"
)

// TestAccessCommands drives users, members, personal tokens, visibility
// and the audit log through the command line against a real Trove.
func TestAccessCommands(t *testing.T) {
	s := trovetest.Start(t)
	as := func(token string) map[string]string {
		return map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": token, "TROVE_CA_FILE": s.CAFile}
	}
	admin := as(s.AdminToken)
	ok := func(environ map[string]string, stdin string, args ...string) string {
		t.Helper()
		r := runTrove(t, environ, stdin, args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	fails := func(environ map[string]string, stdin string, wantCode int, wantErr string, args ...string) {
		t.Helper()
		r := runTrove(t, environ, stdin, args...)
		if r.code != wantCode || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("trove %s: exit %d %q, want exit %d mentioning %q", strings.Join(args, " "), r.code, r.stderr, wantCode, wantErr)
		}
	}
	const pw, newPW = "the first password", "the second password"

	if out := ok(admin, "", "namespace", "create", "acme"); !strings.Contains(out, "private") {
		t.Errorf("namespace create printed %q, want it to say private", out)
	}
	if out := ok(admin, "", "namespace", "update", "acme", "--visibility", "public"); !strings.Contains(out, "public") {
		t.Errorf("namespace update printed %q", out)
	}
	if out := ok(admin, "", "namespace", "list"); !strings.Contains(out, "VISIBILITY") || !strings.Contains(out, "public") {
		t.Errorf("namespace list:\n%s", out)
	}
	ok(admin, "", "namespace", "update", "acme", "--visibility", "private")
	fails(admin, "", exitUsage, "nothing to change", "namespace", "update", "acme")
	fails(admin, "", exitUsage, "invalid visibility", "namespace", "update", "acme", "--visibility", "hidden")

	// Users: the password comes from standard input only.
	ok(admin, pw+"\n", "user", "create", "alice", "--password-stdin")
	fails(admin, "", exitUsage, "standard input", "user", "create", "bob", "--password-stdin")
	ok(admin, "", "user", "create", "bot")
	if out := ok(admin, "", "user", "list"); !strings.Contains(out, "alice") || !strings.Contains(out, "no password") {
		t.Errorf("user list:\n%s", out)
	}
	if out := ok(admin, "", "member", "add", "acme", "alice", "--role", "publisher"); !strings.Contains(out, "publisher") {
		t.Errorf("member add printed %q", out)
	}
	fails(admin, "", exitUsage, "--role is required", "member", "add", "acme", "alice")
	if out := ok(admin, "", "member", "list", "acme"); !strings.Contains(out, "alice") || !strings.Contains(out, "publisher") {
		t.Errorf("member list:\n%s", out)
	}
	if out := ok(admin, "", "user", "show", "alice"); !strings.Contains(out, "acme") || !strings.Contains(out, "publisher") {
		t.Errorf("user show:\n%s", out)
	}

	// Personal tokens.
	aliceToken := strings.TrimSpace(ok(admin, "", "token", "create", "--user", "alice", "--scope", "admin"))
	alice := as(aliceToken)
	readToken := strings.TrimSpace(ok(alice, "", "token", "create", "--user", "alice", "--scope", "read", "--namespace", "acme"))
	var list apispec.TokenList
	if err := json.Unmarshal([]byte(ok(alice, "", "token", "list", "--user", "alice", "--json")), &list); err != nil || len(list.Tokens) != 2 {
		t.Fatalf("token list --user alice --json: %+v, %v", list, err)
	}
	fails(alice, "", exitError, "trove: ", "token", "list")
	fails(alice, "", exitUsage, "not both", "token", "list", "--user", "alice", "--namespace", "acme")
	var readID string
	for _, tk := range list.Tokens {
		if len(tk.Scopes) == 1 && tk.Scopes[0] == "read" {
			readID = tk.ID
		}
	}
	if out := ok(alice, "", "token", "expire", readID, "--in", "1h"); !strings.Contains(out, "expires") {
		t.Errorf("token expire printed %q", out)
	}
	ok(alice, "", "token", "expire", readID)
	fails(as(readToken), "", exitError, "expired", "provider", "list", "acme")

	// Passwords: her own needs the current one.
	fails(alice, newPW+"\n", exitError, "current password", "user", "passwd", "alice")
	ok(alice, pw+"\n"+newPW+"\n", "user", "passwd", "alice", "--current")
	ok(admin, "yet another password\n", "user", "passwd", "alice")

	// Disabling stops her tokens.
	ok(admin, "", "user", "disable", "alice")
	fails(alice, "", exitError, "disabled", "provider", "list", "acme")
	ok(admin, "", "user", "enable", "alice")
	ok(alice, "", "provider", "list", "acme")
	if out := ok(admin, "", "user", "admin", "bot", "true"); !strings.Contains(out, "global admin") {
		t.Errorf("user admin printed %q", out)
	}
	ok(admin, "", "member", "remove", "acme", "alice")
	fails(alice, "", exitError, "not found", "provider", "list", "acme")

	// The audit log.
	out := ok(admin, "", "audit", "--since", "1h")
	for _, action := range []string{"namespace.create", "namespace.update", "user.create", "membership.set", "membership.delete", "token.create", "token.expire", "user.password", "user.update"} {
		if !strings.Contains(out, action) {
			t.Errorf("trove audit lacks %s:\n%s", action, out)
		}
	}
	for _, secret := range []string{pw, newPW, aliceToken, readToken} {
		if strings.Contains(out, secret) {
			t.Error("trove audit shows a secret")
		}
	}
	if out := ok(admin, "", "audit", "--action", "membership.set", "--namespace", "acme"); strings.Count(out, "membership.set") != 1 {
		t.Errorf("filtered audit:\n%s", out)
	}
	fails(admin, "", exitUsage, "--since", "audit", "--since", "yesterday")
	fails(admin, "", exitUsage, "--limit", "audit", "--limit", "0")
}
