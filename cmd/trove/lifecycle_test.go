package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestLifecycleCommandsAgainstTrove deprecates, revokes, restores and
// undeprecates a module version and a provider version with the CLI:
// what it prints, what show marks, and its usage errors.
func TestLifecycleCommandsAgainstTrove(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ok := func(args ...string) string {
		t.Helper()
		r := runTrove(t, admin, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	ok("namespace", "create", "acme")
	dir := t.TempDir()
	writeModule(t, dir, cliModule)
	ok("module", "publish", "acme/labels/null", "1.0.0", dir)
	ctx := context.Background()
	if err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: "1.0.0", Protocols: []string{"5.0"},
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ kind, address string }{{"module", "acme/labels/null"}, {"provider", "acme/cloud"}} {
		out := ok(c.kind, "deprecate", c.address, "1.0.0", "--reason", "use 2.x", "--link", "https://example.com/up")
		if want := c.kind + " " + c.address + " 1.0.0: deprecated (use 2.x https://example.com/up)\n"; out != want {
			t.Errorf("%s deprecate printed %q, want %q", c.kind, out, want)
		}
		if out := ok(c.kind, "show", c.address); !strings.Contains(out, "1.0.0 (deprecated)") {
			t.Errorf("%s show after deprecate:\n%s", c.kind, out)
		}
		if out := ok(c.kind, "revoke", c.address, "1.0.0", "--reason", "broken"); !strings.Contains(out, "revoked (broken)") {
			t.Errorf("%s revoke printed %q", c.kind, out)
		}
		if out := ok(c.kind, "show", c.address, "1.0.0"); !strings.Contains(out, "Revoked:") || !strings.Contains(out, "Deprecated:") {
			t.Errorf("%s show VERSION after revoke:\n%s", c.kind, out)
		}
		ok(c.kind, "restore", c.address, "1.0.0")
		if out := ok(c.kind, "undeprecate", c.address, "1.0.0"); !strings.Contains(out, "active (neither deprecated nor revoked)") {
			t.Errorf("%s undeprecate printed %q", c.kind, out)
		}
		for _, args := range [][]string{
			{c.kind, "deprecate", c.address, "1.0.0"},
			{c.kind, "deprecate", c.address, "1.0.0", "--reason", "x", "--link", "http://example.com"},
			{c.kind, "revoke", c.address, "1.0.0"},
			{c.kind, "revoke", c.address, "v1.0.0", "--reason", "x"},
			{c.kind, "restore", "acme", "1.0.0"},
		} {
			if r := runTrove(t, admin, "", args...); r.code != exitUsage {
				t.Errorf("trove %s: exit %d, want a usage error\n%s", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if r := runTrove(t, admin, "", c.kind, "revoke", c.address, "9.0.0", "--reason", "x"); r.code != exitError || !strings.Contains(r.stderr, "9.0.0") {
			t.Errorf("revoke of a missing version: exit %d %q", r.code, r.stderr)
		}
	}
}
