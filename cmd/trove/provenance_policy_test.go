package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProvenancePolicy sets a namespace's provenance policy and publishes
// from the test CI issuer (repository acme/infra, ref refs/tags/v1.0.0)
// and with the admin's token: the policy admits the pipeline it names and
// refuses every other publish, provider or module, with the reason;
// removing it accepts them again.
func TestProvenancePolicy(t *testing.T) {
	s, iss, key := keylessEnv(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ci := ciEnv(s, iss, t.TempDir())
	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	ok := func(env map[string]string, args ...string) string {
		t.Helper()
		r := runTrove(t, env, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	refused := func(env map[string]string, want string, args ...string) {
		t.Helper()
		r := runTrove(t, env, "", args...)
		if r.code != exitError || !strings.Contains(r.stderr, want) {
			t.Errorf("trove %s: exit %d, want a refusal saying %q\n%s%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
	}

	if out := ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/infra", "--refs", "refs/tags/v*"); !strings.Contains(out,
		"Provenance policy of acme: releases built from acme/infra on refs matching refs/tags/v*") {
		t.Errorf("policy set printed %q", out)
	}
	if out := ok(admin, "provenance", "policy", "show", "acme"); !strings.Contains(out, "acme/infra") || !strings.Contains(out, "by token:") {
		t.Errorf("policy show printed %q", out)
	}
	ok(ci, "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64"))
	ok(ci, "module", "publish", "acme/labels/null", "1.0.0", mod)

	const accepts = "namespace acme accepts only releases built from acme/infra on a ref matching refs/tags/v* (its provenance policy)"
	refused(admin, accepts+": this publish does not come from a CI pipeline", "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.1.0", "linux_amd64"))
	refused(admin, "this publish does not come from a CI pipeline", "module", "publish", "acme/labels/null", "1.1.0", mod)

	ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/other")
	refused(ci, "this build comes from repository acme/infra", "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64"))
	ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/infra", "--refs", "refs/heads/*")
	refused(ci, "this build's ref is refs/tags/v1.0.0", "module", "publish", "acme/labels/null", "1.2.0", mod)
	ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/infra", "--issuer", "https://ci.elsewhere.example")
	refused(ci, "this build comes from issuer "+iss.URL, "module", "publish", "acme/labels/null", "1.2.0", mod)
	if r := runTrove(t, admin, "", "provider", "show", "acme/foo"); r.code != exitOK || strings.Contains(r.stdout, "1.1.0") || strings.Contains(r.stdout, "1.2.0") {
		t.Errorf("refused publishes stored a version:\n%s", r.stdout)
	}

	// Import keys: each --import-key file is parsed before anything is
	// sent; show lists their key IDs; set without them leaves none.
	keyFile := filepath.Join(t.TempDir(), "exporting-trove.asc")
	if err := os.WriteFile(keyFile, []byte(key.ArmoredPublic), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/infra", "--import-key", keyFile); !strings.Contains(out, "bundle modules signed by import keys "+key.KeyID) {
		t.Errorf("policy set with an import key printed %q", out)
	}
	if out := ok(admin, "provenance", "policy", "show", "acme"); !strings.Contains(out, "import keys "+key.KeyID) {
		t.Errorf("policy show printed %q", out)
	}
	if out := ok(admin, "provenance", "policy", "show", "acme", "--json"); !strings.Contains(out, `"key_id": "`+key.KeyID+`"`) {
		t.Errorf("policy show --json printed %q", out)
	}
	if out := ok(admin, "provenance", "policy", "set", "acme", "--repository", "acme/infra"); !strings.Contains(out, "no import keys") {
		t.Errorf("policy set without import keys printed %q", out)
	}
	badKey := filepath.Join(t.TempDir(), "bad.asc")
	if err := os.WriteFile(badKey, []byte(key.ArmoredPrivate), 0o600); err != nil {
		t.Fatal(err)
	}

	// Bad policies are usage errors, before anything is sent.
	for _, args := range [][]string{
		{"provenance", "policy", "set", "acme"},
		{"provenance", "policy", "set", "acme", "--repository", "acme/infra", "--refs", "refs/["},
		{"provenance", "policy", "set", "acme", "--repository", "acme/infra", "--issuer", "http://ci.example"},
		{"provenance", "policy", "set", "acme", "--repository", "acme/\x1binfra"},
		{"provenance", "policy", "set", "acme", "--repository", "acme/infra", "--import-key", badKey},
	} {
		if r := runTrove(t, admin, "", args...); r.code != exitUsage {
			t.Errorf("trove %q: exit %d, want a usage error\n%s", args, r.code, r.stderr)
		}
	}

	ok(admin, "provenance", "policy", "delete", "acme")
	refused(admin, "has no provenance policy", "provenance", "policy", "show", "acme")
	ok(admin, "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.1.0", "linux_amd64"))
}
