package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/trovetest"
)

// TestMirrorUpstreamCommands drives `trove mirror upstream` against a real
// Trove: list, set (create and replace), show, remove, and the mistakes
// refused before any request.
func TestMirrorUpstreamCommands(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ok := func(stdin string, args ...string) string {
		t.Helper()
		r := runTrove(t, admin, stdin, args...)
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

	out := ok("", "mirror", "upstream", "list")
	if !strings.HasPrefix(out, "HOST ") || !strings.Contains(out, "registry.opentofu.org  */*") || !strings.Contains(out, "registry.terraform.io  */*") {
		t.Errorf("list:\n%s", out)
	}

	out = ok("", "mirror", "upstream", "set", "Mirror.Example:8443", "--allow", "hashicorp/*", "--allow", "acme/widget=~> 1.2",
		"--service-url", "https://mirror.example:8443/v1/providers/", "--upstream-ca-file", s.CAFile, "--description", "ACME's registry")
	if out != "Set mirror upstream mirror.example:8443: it allows hashicorp/*, acme/widget ~> 1.2\n" {
		t.Errorf("set printed %q", out)
	}
	out = ok("", "mirror", "upstream", "show", "mirror.example:8443")
	for _, want := range []string{
		"Host:             mirror.example:8443\n",
		"Service URL:      https://mirror.example:8443/v1/providers/\n",
		"CA certificates:  1 certificate, besides the system's\n",
		"Allow:            hashicorp/*\n                  acme/widget ~> 1.2\n",
		"Description:      ACME's registry\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	var u apispec.MirrorUpstream
	if err := json.Unmarshal([]byte(ok("", "mirror", "upstream", "show", "mirror.example:8443", "--json")), &u); err != nil ||
		u.Host != "mirror.example:8443" || len(u.Allow) != 2 || u.Allow[1].Versions != "~> 1.2" || !strings.Contains(u.CACertificates, "BEGIN CERTIFICATE") {
		t.Errorf("show --json = %+v, %v", u, err)
	}

	// set replaces the whole configuration; without --allow nothing is allowed.
	if out := ok("", "mirror", "upstream", "set", "mirror.example:8443"); !strings.Contains(out, "it allows no provider") {
		t.Errorf("set without --allow printed %q", out)
	}
	out = ok("", "mirror", "upstream", "show", "mirror.example:8443")
	if !strings.Contains(out, "Service URL:      (service discovery)") || !strings.Contains(out, "CA certificates:  the system's") ||
		!strings.Contains(out, "Allow:            nothing") {
		t.Errorf("show after a replacement:\n%s", out)
	}
	var list apispec.MirrorUpstreamList
	if err := json.Unmarshal([]byte(ok("", "mirror", "upstream", "list", "--json")), &list); err != nil || len(list.Upstreams) != 3 {
		t.Errorf("list --json = %+v, %v", list, err)
	}
	if out := ok("", "mirror", "upstream", "remove", "mirror.example:8443"); out != "Removed mirror upstream mirror.example:8443\n" {
		t.Errorf("remove printed %q", out)
	}
	fails(exitError, "mirror upstream mirror.example:8443 not found", "mirror", "upstream", "show", "mirror.example:8443")
	fails(exitError, "not found", "mirror", "upstream", "remove", "mirror.example:8443")

	// Mistakes caught before any request, and the server's refusals.
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyFile, []byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIE1r\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fails(exitUsage, `--allow: mirror rule "hashicorp": write it as namespace/type`, "mirror", "upstream", "set", "x.example", "--allow", "hashicorp")
	fails(exitUsage, "--allow: mirror rule \"acme/*\": versions \"soon\" is not a version constraint", "mirror", "upstream", "set", "x.example", "--allow", "acme/*=soon")
	fails(exitUsage, "--description: description contains the control character U+000A", "mirror", "upstream", "set", "x.example", "--description", "two\nlines")
	fails(exitUsage, "missing arguments: want HOST", "mirror", "upstream", "set")
	fails(exitError, "holds a private key", "mirror", "upstream", "set", "x.example", "--upstream-ca-file", keyFile)
	fails(exitError, "http is only allowed for a loopback host", "mirror", "upstream", "set", "x.example", "--service-url", "http://x.example/")
	fails(exitError, "is not a registry host name", "mirror", "upstream", "show", "a_b:c")

	// The group prints its subcommands.
	if r := runTrove(t, nil, "", "mirror", "upstream", "--help"); r.code != exitOK || !strings.Contains(r.stdout, "mirror upstream remove") {
		t.Errorf("mirror upstream --help: exit %d\n%s", r.code, r.stdout)
	}
	if r := runTrove(t, nil, "", "mirror", "upstream", "bogus"); r.code != exitUsage || !strings.HasPrefix(r.stderr, `trove mirror upstream: unknown subcommand "bogus"`) {
		t.Errorf("mirror upstream bogus: exit %d\n%s", r.code, r.stderr)
	}
}
