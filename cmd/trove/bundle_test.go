package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestBundleCommands exports a provider and a module from one Trove with
// trove bundle export and imports them into another with trove bundle
// import; usage mistakes are refused before asking, and a damaged bundle
// is refused with the server's reason.
func TestBundleCommands(t *testing.T) {
	src := trovetest.Start(t)
	dst := trovetest.Start(t)
	envOf := func(s *trovetest.Server) map[string]string {
		return map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	}
	run := func(s *trovetest.Server, want int, args ...string) result {
		t.Helper()
		r := runTrove(t, envOf(s), "", args...)
		if r.code != want {
			t.Fatalf("trove %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, want, r.stderr)
		}
		return r
	}
	run(src, exitOK, "namespace", "create", "acme")
	run(dst, exitOK, "namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	if r := runTrove(t, envOf(src), key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	run(src, exitOK, "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64", "darwin_arm64"))
	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	run(src, exitOK, "module", "publish", "acme/labels/null", "1.0.0", mod)

	out := filepath.Join(t.TempDir(), "acme.tar")
	provider := src.Host + "/acme/foo@1.2.0"
	r := run(src, exitOK, "bundle", "export", "--output", out, "--provider", provider, "--module", "acme/labels/null@1.0.0", "--platform", "linux_amd64")
	if !strings.Contains(r.stdout, "Wrote "+out) {
		t.Errorf("bundle export printed %q", r.stdout)
	}
	r = run(dst, exitOK, "bundle", "import", out)
	for _, want := range []string{"Provider " + src.Host + "/acme/foo 1.2.0: 1 package(s) added", "Module acme/labels/null 1.0.0: imported", "Imported 1 provider and 1 module version(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bundle import printed %q, want %q", r.stdout, want)
		}
	}
	if r = run(dst, exitOK, "bundle", "import", out); !strings.Contains(r.stdout, "held already") || !strings.Contains(r.stdout, "present already") {
		t.Errorf("a second bundle import printed %q", r.stdout)
	}

	// A damaged bundle: the last byte of the last file changed.
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	i := len(data) - 1024 - 1 // before tar's two zero blocks ...
	for i > 0 && data[i] == 0 {
		i-- // ... and the padding of the last file
	}
	data[i] ^= 0xff
	damaged := filepath.Join(t.TempDir(), "damaged.tar")
	os.WriteFile(damaged, data, 0o644)
	if r := run(dst, exitError, "bundle", "import", damaged); !strings.Contains(r.stderr, "holds content of digest") {
		t.Errorf("import of a damaged bundle: %q", r.stderr)
	}

	for _, args := range [][]string{
		{"bundle", "export", "--provider", provider},
		{"bundle", "export", "--output", out},
		{"bundle", "export", "--output", out, "--provider", src.Host + "/acme/foo"},
		{"bundle", "export", "--output", out, "--module", "acme/labels@1.0.0"},
		{"bundle", "import"},
	} {
		run(src, exitUsage, args...)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("a refused export removed the earlier bundle: %v", err)
	}
}
