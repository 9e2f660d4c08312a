package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// syncUpstreamHost is the host name the mirrored provider of these tests
// is addressed by: the mirror reaches it through its upstream's service
// URL only.
const syncUpstreamHost = "upstream.example"

// TestMirrorSyncCommand warms a real Trove's mirror, whose upstream is a
// second Trove, from a configuration, from --provider with
// --all-versions and from a lock file: afterwards the mirror holds every
// package asked for, a second sync reports them held, an own provider is
// reported held, and failures are listed, the rest synced, exit 1.
func TestMirrorSyncCommand(t *testing.T) {
	ctx := context.Background()
	up := trovetest.Start(t)
	upAdmin := map[string]string{"TROVE_ADDR": up.URL, "TROVE_TOKEN": up.AdminToken, "TROVE_CA_FILE": up.CAFile}
	m := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": m.URL, "TROVE_TOKEN": m.AdminToken, "TROVE_CA_FILE": m.CAFile}
	must := func(environ map[string]string, stdin string, args ...string) result {
		t.Helper()
		r := runTrove(t, environ, stdin, args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r
	}

	// The upstream publishes acme/widget 1.0.0 (two platforms) and 1.1.0
	// (three), publicly, as a public registry does.
	must(upAdmin, "", "namespace", "create", "acme", "--visibility", "public")
	key := signingtest.NewKey(t, "acme")
	must(upAdmin, key.ArmoredPublic, "key", "add", "acme", "--file", "-")
	must(upAdmin, "", "publish", "--namespace", "acme", writeSignedDist(t, key, "widget", "1.0.0", "linux_amd64", "darwin_arm64"))
	must(upAdmin, "", "publish", "--namespace", "acme", writeSignedDist(t, key, "widget", "1.1.0", "linux_amd64", "darwin_arm64", "windows_amd64"))

	// The mirror fetches acme/* of syncUpstreamHost from it, and has a
	// provider of its own.
	c, err := client.New(m.URL, m.AdminToken, client.WithCAFile(m.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(up.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutMirrorUpstream(ctx, syncUpstreamHost, apispec.PutMirrorUpstreamRequest{
		ServiceURL: up.URL + "/v1/providers/", CACertificates: string(ca), Allow: []apispec.MirrorRule{{Provider: "acme/*"}},
	}); err != nil {
		t.Fatal(err)
	}
	must(admin, "", "namespace", "create", "own")
	ownKey := signingtest.NewKey(t, "own")
	must(admin, ownKey.ArmoredPublic, "key", "add", "own", "--file", "-")
	must(admin, "", "publish", "--namespace", "own", writeSignedDist(t, ownKey, "gadget", "0.1.0", "linux_amd64"))

	widget := syncUpstreamHost + "/acme/widget"
	gadget := m.Host + "/own/gadget"
	// held reports which platforms of a mirrored widget version the
	// mirror holds ("" for none stored).
	held := func(version string) string {
		t.Helper()
		v, err := m.Index.GetMirroredVersion(ctx, syncUpstreamHost, "acme", "widget", version)
		if registry.IsKind(err, registry.NotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range v.Platforms {
			if p.Held() {
				out = append(out, p.OS+"_"+p.Arch)
			}
		}
		return strings.Join(out, " ")
	}
	wantOutput := func(r result, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(r.stdout, l+"\n") {
				t.Errorf("output lacks the line %q:\n%s", l, r.stdout)
			}
		}
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    widget = {
      source  = "`+widget+`"
      version = "~> 1.0"
    }
    gadget = {
      source = "`+gadget+`"
    }
  }
}
`), 0o644)
	r := must(admin, "", "mirror", "sync", dir)
	wantOutput(r,
		"Fetched "+widget+" 1.1.0 darwin_arm64", "Fetched "+widget+" 1.1.0 linux_amd64", "Fetched "+widget+" 1.1.0 windows_amd64",
		"Held    "+gadget+" 0.1.0 linux_amd64",
		"Synced 4 package(s): 1 held already, 3 fetched now.")
	if got := held("1.1.0"); got != "darwin_arm64 linux_amd64 windows_amd64" {
		t.Errorf("after the sync the mirror holds the 1.1.0 packages %q, want all three", got)
	}
	if got := held("1.0.0"); got != "" {
		t.Errorf("the mirror holds the 1.0.0 packages %q, but only the newest version was asked for", got)
	}
	r = must(admin, "", "mirror", "sync", dir)
	wantOutput(r, "Held    "+widget+" 1.1.0 linux_amd64", "Synced 4 package(s): 4 held already, 0 fetched now.")

	// Every allowed version, of some platforms: 1.0.0 has no windows
	// package, which --all-versions skips.
	r = must(admin, "", "mirror", "sync", "--provider", widget+"=< 2.0", "--all-versions", "--platform", "linux_amd64", "--platform", "windows_amd64")
	wantOutput(r,
		"Fetched "+widget+" 1.0.0 linux_amd64", "Held    "+widget+" 1.1.0 linux_amd64", "Held    "+widget+" 1.1.0 windows_amd64",
		"Skipped "+widget+" 1.0.0 windows_amd64: no package for windows_amd64 (it has: darwin_arm64, linux_amd64)",
		"Synced 3 package(s): 2 held already, 1 fetched now, 1 skipped.")
	if got := held("1.0.0"); got != "linux_amd64" {
		t.Errorf("the mirror holds the 1.0.0 packages %q, want linux_amd64", got)
	}

	// A lock file names exact versions.
	lockFile := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
	os.WriteFile(lockFile, []byte(`provider "`+widget+`" {
  version     = "1.0.0"
  constraints = "~> 1.0.0"
  hashes = [
    "zh:0000000000000000000000000000000000000000000000000000000000000000",
  ]
}
`), 0o644)
	r = must(admin, "", "mirror", "sync", "--lock-file", lockFile, "--json")
	if !strings.Contains(r.stdout, `"fetched": 1`) || !strings.Contains(r.stdout, `"held": 1`) || !strings.Contains(r.stdout, `"platform": "darwin_arm64"`) {
		t.Errorf("sync --lock-file --json printed:\n%s", r.stdout)
	}
	if got := held("1.0.0"); got != "darwin_arm64 linux_amd64" {
		t.Errorf("after the lock file's sync the mirror holds the 1.0.0 packages %q, want both", got)
	}

	// Failures are listed and the others synced; the exit code says so.
	r = runTrove(t, admin, "", "mirror", "sync", "--provider", syncUpstreamHost+"/acme/nothing", "--provider", widget+"=1.0.0",
		"--provider", gadget+"=>= 3.0", "--platform", "windows_amd64", "--platform", "linux_amd64")
	if r.code != exitError || !strings.Contains(r.stderr, "3 failure(s)") {
		t.Errorf("sync with failures: exit %d, stderr %q; want 1 and the count", r.code, r.stderr)
	}
	wantOutput(r, "Held    "+widget+" 1.0.0 linux_amd64", "Synced 1 package(s): 1 held already, 0 fetched now; 3 failed:",
		"  "+widget+" 1.0.0 windows_amd64: no package for windows_amd64 (it has: darwin_arm64, linux_amd64)")
	for _, want := range []string{"Failed  " + syncUpstreamHost + "/acme/nothing: ", "Failed  " + gadget + ": no version matches \">= 3.0\""} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mirror", "sync", t.TempDir()}, exitError, "no .tf file"},
		{[]string{"mirror", "sync", "--lock-file", lockFile, "--provider", widget}, exitUsage, "give one of them"},
		{[]string{"mirror", "sync", "--lock-file", lockFile, "--all-versions"}, exitUsage, "exact versions"},
		{[]string{"mirror", "sync", dir, "--provider", widget}, exitUsage, "leave it out"},
		{[]string{"mirror", "sync", "--provider", widget, "--provider", widget + "=1.0.0"}, exitUsage, "named twice"},
		{[]string{"mirror", "sync", "--provider", "not a source"}, exitUsage, "not a source"},
		{[]string{"mirror", "sync", "--platform", "linux"}, exitUsage, "os_arch"},
		{[]string{"mirror", "sync", "--lock-file", filepath.Join(dir, "main.tf")}, exitError, "locks no provider"},
	} {
		if r := runTrove(t, admin, "", c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("trove %s = %d %q, want exit %d saying %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want)
		}
	}
}
