package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestDeleteAndGCCommandsAgainstTrove deletes provider and module
// versions, whole ones too, runs trove gc and sets a retention rule with
// the CLI: what each prints and its usage errors.
func TestDeleteAndGCCommandsAgainstTrove(t *testing.T) {
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
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		ok("module", "publish", "acme/labels/null", v, dir)
		if err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"provider", "delete", "acme", "1.0.0", "--confirm"},    // not NAMESPACE/TYPE
		{"provider", "delete", "acme/cloud", "v1", "--confirm"}, // not a version
		{"module", "delete", "acme/labels", "--confirm"},        // not NAMESPACE/NAME/SYSTEM
		{"gc", "--grace", "1s"},                                 // under a minute
		{"retention", "set", "acme"},                            // keeps nothing
		{"retention", "set", "acme", "--keep-last", "1", "--pin", "~> banana"},
	} {
		if r := runTrove(t, admin, "", args...); r.code != exitUsage {
			t.Errorf("trove %s: exit %d, want a usage error\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"provider", "delete", "acme/cloud", "1.0.0"}, {"module", "delete", "acme/labels/null"}} {
		if r := runTrove(t, admin, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "--confirm") {
			t.Errorf("trove %s: exit %d %q, want a usage error asking for --confirm", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if out := ok("provider", "delete", "acme/cloud", "1.0.0", "--confirm"); out != "Deleted acme/cloud 1.0.0\n" {
		t.Errorf("provider delete printed %q", out)
	}
	if r := runTrove(t, admin, "", "provider", "delete", "acme/cloud", "1.0.0", "--confirm"); r.code != exitError || !strings.Contains(r.stderr, "1.0.0") {
		t.Errorf("delete of a deleted version: exit %d %q", r.code, r.stderr)
	}
	if out := ok("module", "delete", "acme/labels/null", "1.0.0", "--confirm"); out != "Deleted acme/labels/null 1.0.0\n" {
		t.Errorf("module delete VERSION printed %q", out)
	}
	if out := ok("retention", "set", "acme", "--keep-last", "1", "--keep-within", "30d", "--pin", ">= 1.1.0, < 1.2.0"); !strings.Contains(out,
		"Retention rule of acme: keep the last 1 versions, versions published within 30d, versions matching >= 1.1.0, < 1.2.0") {
		t.Errorf("retention set printed %q", out)
	}
	if out := ok("retention", "show", "acme"); !strings.Contains(out, "30d") || !strings.Contains(out, ">= 1.1.0, < 1.2.0") {
		t.Errorf("retention show printed:\n%s", out)
	}
	// Everything was published just now: keep_within holds it all.
	if out := ok("gc", "--dry-run"); !strings.Contains(out, "Would reclaim 0 files, 0 B in total") || strings.Contains(out, "Would delete") {
		t.Errorf("gc --dry-run printed:\n%s", out)
	}
	if out := ok("provider", "delete", "acme/cloud", "--confirm"); out != "Deleted acme/cloud (2 versions)\n" {
		t.Errorf("provider delete of the whole provider printed %q", out)
	}
	if out := ok("module", "delete", "acme/labels/null", "--confirm"); out != "Deleted acme/labels/null (2 versions)\n" {
		t.Errorf("module delete of the whole module printed %q", out)
	}
	if out := ok("gc", "--grace", "2h"); !strings.Contains(out, "Reclaimed 0 files") || !strings.Contains(out, "within the 2h0m0s grace period") {
		t.Errorf("gc printed:\n%s", out)
	}
	ok("retention", "delete", "acme")
	if r := runTrove(t, admin, "", "retention", "show", "acme"); r.code != exitError {
		t.Errorf("retention show after delete: exit %d, want an error", r.code)
	}
	ok("namespace", "delete", "acme") // empty now
}
