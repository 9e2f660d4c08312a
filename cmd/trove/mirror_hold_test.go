package main

import (
	"encoding/json"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/trovetest"
)

// TestMirrorHoldCommands drives `trove mirror hold` and --min-age against
// a real Trove whose upstream is down: approvals and denials are stored
// and listed, withdrawn, and mistakes are refused before any request.
func TestMirrorHoldCommands(t *testing.T) {
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
	fails := func(wantCode int, wantErr string, args ...string) {
		t.Helper()
		r := runTrove(t, admin, "", args...)
		if r.code != wantCode || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("trove %s: exit %d %q, want exit %d mentioning %q", strings.Join(args, " "), r.code, r.stderr, wantCode, wantErr)
		}
	}

	out := ok("mirror", "upstream", "set", "down.example", "--allow", "acme/*", "--min-age", "7d", "--service-url", "https://127.0.0.1:1/v1/providers/")
	if out != "Set mirror upstream down.example: it allows acme/* (min age 7d)\n" {
		t.Errorf("set printed %q", out)
	}
	fails(2, "--min-age: min age \"soon\"", "mirror", "upstream", "set", "down.example", "--allow", "acme/*", "--min-age", "soon")

	addr := "down.example/acme/widget"
	if out := ok("mirror", "hold", "approve", addr, "1.2.0", "--reason", "reviewed"); !strings.Contains(out, "Approved down.example/acme/widget 1.2.0") {
		t.Errorf("approve printed %q", out)
	}
	if out := ok("mirror", "hold", "deny", addr, ">= 1.3.0, < 1.3.2", "--reason", "compromised"); !strings.Contains(out, "Denied down.example/acme/widget >= 1.3.0, < 1.3.2") {
		t.Errorf("deny printed %q", out)
	}
	out = ok("mirror", "hold", "list", addr)
	for _, want := range []string{"Rule: acme/* (min age 7d)", "is unreachable", "DECISION", "approve   1.2.0", "deny      >= 1.3.0, < 1.3.2", "compromised"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	var p apispec.MirrorProvider
	if err := json.Unmarshal([]byte(ok("mirror", "hold", "list", addr, "--json")), &p); err != nil || len(p.Decisions) != 2 || p.Rule.MinAge != "7d" {
		t.Errorf("list --json = %+v, %v", p, err)
	}

	fails(2, "is not a provider address", "mirror", "hold", "list", "widget")
	fails(2, "is not a provider address", "mirror", "hold", "approve", "a//b", "1.0.0")
	fails(2, "is neither a version nor a version constraint", "mirror", "hold", "deny", addr, "the bad ones")
	fails(1, "an approval names one version", "mirror", "hold", "approve", addr, "~> 1.0")
	fails(1, "has no deny decision", "mirror", "hold", "undeny", addr, "9.9.9")
	fails(2, "control character", "mirror", "hold", "deny", addr, "1.0.0", "--reason", "a\nb")

	ok("mirror", "hold", "undeny", addr, ">= 1.3.0, < 1.3.2")
	ok("mirror", "hold", "unapprove", addr, "1.2.0")
	if json.Unmarshal([]byte(ok("mirror", "hold", "list", addr, "--json")), &p) != nil || len(p.Decisions) != 0 {
		t.Errorf("decisions after withdrawing both: %+v", p.Decisions)
	}
}
