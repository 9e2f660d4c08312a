package main

import (
	"encoding/json"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// writeSignedDist writes a goreleaser-like dist directory of a signed
// release of typ at version for the platforms, with a manifest.
func writeSignedDist(t *testing.T, key *signingtest.Key, typ, version string, platforms ...string) string {
	t.Helper()
	dir := t.TempDir()
	releasetest.Build(t, key, releasetest.Spec{Type: typ, Version: version, Platforms: platforms, Protocols: []string{"5.0"}}).WriteDir(t, dir)
	return dir
}

// TestAgainstTrove drives a real in-process Trove through the command line:
// the publishing set-up of docs/publishing.md, then a publish and its retry.
func TestAgainstTrove(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ok := func(environ map[string]string, stdin string, args ...string) string {
		t.Helper()
		r := runTrove(t, environ, stdin, args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}

	ok(admin, "", "namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	if out := ok(admin, key.ArmoredPublic, "key", "add", "acme", "--file", "-"); !strings.Contains(out, key.KeyID) || !strings.Contains(out, key.Fingerprint) {
		t.Errorf("key add printed %q, want the key ID and fingerprint", out)
	}
	secret := strings.TrimSpace(ok(admin, "", "token", "create", "--namespace", "acme", "--scope", "publish"))
	publisher := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": secret, "TROVE_CA_FILE": s.CAFile}

	dist := writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64", "darwin_arm64")
	out := ok(publisher, "", "publish", "--namespace", "acme", dist)
	if !strings.HasPrefix(out, "Published acme/foo 1.2.0 for ") || !strings.Contains(out, "linux_amd64") || !strings.Contains(out, "darwin_arm64") {
		t.Errorf("publish printed %q", out)
	}
	if out := ok(publisher, "", "publish", dist, "--namespace", "acme"); out != "acme/foo 1.2.0 was already published with identical content; nothing changed\n" {
		t.Errorf("second publish printed %q", out)
	}

	var v apispec.ProviderVersion
	if err := json.Unmarshal([]byte(ok(admin, "", "provider", "show", "acme/foo", "1.2.0", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.KeyID != key.KeyID || len(v.Platforms) != 2 {
		t.Errorf("provider show --json = %+v", v)
	}

	r := runTrove(t, publisher, "", "namespace", "delete", "acme")
	if r.code != exitError || !strings.HasPrefix(r.stderr, "trove: ") {
		t.Errorf("namespace delete with a publish token = %d %q, want exit 1 with the server's message", r.code, r.stderr)
	}

	// A token bound to two namespaces, listed under each with both.
	ok(admin, "", "namespace", "create", "acme-labs")
	r = runTrove(t, admin, "", "token", "create", "--namespace", "acme", "--namespace", "Acme-Labs", "--scope", "read", "--description", "two")
	if r.code != exitOK || !strings.Contains(r.stderr, "read on namespaces acme, acme-labs") {
		t.Fatalf("token create for two namespaces = %d %q", r.code, r.stderr)
	}
	for _, ns := range []string{"acme", "acme-labs"} {
		if out := ok(admin, "", "token", "list", "--namespace", ns); !strings.Contains(out, " acme,acme-labs ") {
			t.Errorf("token list --namespace %s printed %q, want the token bound to acme,acme-labs", ns, out)
		}
	}
	r = runTrove(t, admin, "", "token", "create", "--namespace", "acme,nope", "--scope", "read")
	if r.code != exitError || !strings.Contains(r.stderr, "nope") {
		t.Errorf("token create for a missing namespace = %d %q, want exit 1 naming it", r.code, r.stderr)
	}
}
