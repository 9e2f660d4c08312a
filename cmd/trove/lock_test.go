package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestLockCommand publishes a provider and locks a configuration that
// requires it: the lock file names it with every platform's h1 (or the
// --platform ones), and usage mistakes are refused before asking.
func TestLockCommand(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	must := func(stdin string, args ...string) result {
		t.Helper()
		r := runTrove(t, admin, stdin, args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r
	}
	must("", "namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	must(key.ArmoredPublic, "key", "add", "acme", "--file", "-")
	for _, v := range []string{"1.2.0", "1.3.0"} {
		must("", "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", v, "linux_amd64", "darwin_arm64", "windows_amd64"))
	}

	dir := t.TempDir()
	source := s.Host + "/acme/foo"
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    foo = {
      source  = "`+source+`"
      version = "~> 1.2.0"
    }
  }
}
`), 0o644)
	r := must("", "lock", dir)
	if !strings.Contains(r.stdout, "Locked "+source+" 1.2.0 (7 hashes)") {
		t.Errorf("trove lock printed %q, want 1.2.0 with 3 h1 and 4 zh hashes", r.stdout)
	}
	lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lock), "provider \""+source+"\" {\n  version     = \"1.2.0\"\n  constraints = \"~> 1.2.0\"") || strings.Count(string(lock), `"h1:`) != 3 {
		t.Errorf("lock file:\n%s", lock)
	}

	r = must("", "lock", "--provider", source, "--platform", "darwin_arm64", "--output", "-")
	if !strings.Contains(r.stdout, `version = "1.3.0"`) || strings.Count(r.stdout, `"h1:`) != 1 {
		t.Errorf("trove lock --provider --platform --output - printed:\n%s", r.stdout)
	}
	// trove.localhost, the name the banner gives a local Trove, is this
	// Trove's own host too.
	localSource := "trove.localhost/acme/foo"
	r = must("", "lock", "--provider", localSource+"=1.2.0", "--output", "-")
	if !strings.Contains(r.stdout, "provider \""+localSource+"\" {\n  version     = \"1.2.0\"") || strings.Count(r.stdout, `"h1:`) != 3 {
		t.Errorf("trove lock --provider %s printed:\n%s", localSource, r.stdout)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lock", t.TempDir()}, exitError, "no .tf file"},
		{[]string{"lock", "--provider", "not a source"}, exitUsage, "not a source"},
		{[]string{"lock", "--provider", source, "--platform", "linux"}, exitError, "os_arch"},
	} {
		if r := runTrove(t, admin, "", c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("trove %s = %d %q, want exit %d saying %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want)
		}
	}
}
