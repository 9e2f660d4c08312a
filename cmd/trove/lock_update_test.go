package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestLockUpdatesExistingFile: `trove lock` over a lock file that
// terraform init wrote on one platform keeps its pinned version while a
// newer one is published, adds the other platforms' hashes, keeps the
// other providers' blocks and the comments; --upgrade moves to the newest
// version; a pin the registry does not offer is refused and the file is
// left as it was.
func TestLockUpdatesExistingFile(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	must := func(args ...string) result {
		t.Helper()
		r := runTrove(t, admin, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r
	}
	must("namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	if r := runTrove(t, admin, key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	must("publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64", "darwin_arm64"))

	dir := t.TempDir()
	source := s.Host + "/acme/foo"
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    foo = {
      source  = "`+source+`"
      version = "~> 1.2"
    }
  }
}
`), 0o644)
	// What terraform init writes on one linux machine, plus a block of a
	// provider no longer required and a comment.
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	must("lock", dir, "--platform", "linux_amd64")
	first, _ := os.ReadFile(lockPath)
	seeded := strings.Replace(string(first), "provider \""+source+"\"", "# Reviewed by the platform team.\nprovider \""+source+"\"", 1) + `
provider "registry.terraform.io/hashicorp/random" {
  version = "3.6.0"
  hashes = [
    "h1:R5Ucn26riKIEijcsiOMBR3uOAjuOMfI1x7XvH4P6B1w=",
  ]
}
`
	if err := os.WriteFile(lockPath, []byte(seeded), 0o644); err != nil {
		t.Fatal(err)
	}
	must("publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.3.0", "linux_amd64", "darwin_arm64"))

	r := must("lock", dir)
	if !strings.Contains(r.stdout, "Kept "+source+" 1.2.0, as the lock file pins it") {
		t.Errorf("trove lock over a pin printed %q", r.stdout)
	}
	got, _ := os.ReadFile(lockPath)
	entries, err := lockfile.Parse(got, lockPath)
	if err != nil {
		t.Fatalf("updated lock file does not parse: %v\n%s", err, got)
	}
	if len(entries) != 2 || entries[0].Version != "1.2.0" || strings.Count(string(got), `"h1:`) != 3 ||
		!strings.Contains(string(got), "# Reviewed by the platform team.\nprovider \""+source+"\"") ||
		!strings.Contains(string(got), "h1:R5Ucn26riKIEijcsiOMBR3uOAjuOMfI1x7XvH4P6B1w=") {
		t.Errorf("updated lock file (want 1.2.0 kept with both platforms, the comment and the random block):\n%s", got)
	}

	r = must("lock", dir, "--upgrade")
	if !strings.Contains(r.stdout, "Upgraded "+source+" 1.2.0 -> 1.3.0") {
		t.Errorf("trove lock --upgrade printed %q", r.stdout)
	}
	got, _ = os.ReadFile(lockPath)
	if entries, err := lockfile.Parse(got, lockPath); err != nil || entries[0].Version != "1.3.0" || !strings.Contains(string(got), "# Reviewed") ||
		!strings.Contains(string(got), "hashicorp/random") {
		t.Errorf("lock file after --upgrade (%v):\n%s", err, got)
	}

	// A pin the registry no longer offers: refused, file untouched.
	pinnedGone := strings.Replace(string(got), `version     = "1.3.0"`, `version     = "1.2.9"`, 1)
	os.WriteFile(lockPath, []byte(pinnedGone), 0o644)
	r = runTrove(t, admin, "", "lock", dir)
	if r.code != exitError || !strings.Contains(r.stderr, "the lock file pins 1.2.9, which this registry no longer offers") ||
		!strings.Contains(r.stderr, "--upgrade") || !strings.Contains(r.stderr, "was left as it is") {
		t.Errorf("trove lock over a pin gone = %d %q", r.code, r.stderr)
	}
	if now, _ := os.ReadFile(lockPath); string(now) != pinnedGone {
		t.Errorf("a refused update changed the lock file:\n%s", now)
	}
	// A pin the configuration no longer allows.
	os.WriteFile(lockPath, []byte(strings.Replace(pinnedGone, `"1.2.9"`, `"1.2.0"`, 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Replace(string(must2(t, filepath.Join(dir, "main.tf"))), "~> 1.2", "~> 1.3", 1)), 0o644)
	if r := runTrove(t, admin, "", "lock", dir); r.code != exitError || !strings.Contains(r.stderr, `constraint "~> 1.3" does not allow`) {
		t.Errorf("trove lock over a pin the constraint excludes = %d %q", r.code, r.stderr)
	}
	// A file that is not a lock file is not overwritten.
	os.WriteFile(lockPath, []byte("provider \"x\" {"), 0o644)
	if r := runTrove(t, admin, "", "lock", dir, "--upgrade"); r.code != exitError || !strings.Contains(r.stderr, "is not a lock file trove lock can update") {
		t.Errorf("trove lock over garbage = %d %q", r.code, r.stderr)
	}
}

func must2(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
