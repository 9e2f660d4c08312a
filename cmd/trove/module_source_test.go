package main

import (
	"strings"
	"testing"

	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/trovetest"
)

// TestModuleSourceCommands adds a private git source with the CLI (the
// token on standard input), syncs it, lists it and removes it, and
// checks the usage errors.
func TestModuleSourceCommands(t *testing.T) {
	s := trovetest.Start(t, trovetest.Options{GitServers: true}) // the git server is on loopback
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	run := func(stdin string, args ...string) result {
		t.Helper()
		return runTrove(t, admin, stdin, args...)
	}
	if r := run("", "namespace", "create", "acme"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "infra", map[string]string{"modules/net/main.tf": "variable \"x\" {}\n", "README.md": "# infra\n"})
	gst.Git(t, repo, "tag", "net/v1.0.0")
	base := gst.HTTP(t, root, "ci", "tok3n")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"module", "source", "add", "acme/net", base + "infra"}, "NAMESPACE/NAME/SYSTEM"},
		{[]string{"module", "source", "add", "acme/net/aws", "file:///etc/passwd"}, "scheme file is not allowed"},
		{[]string{"module", "source", "add", "acme/net/aws", "ext::sh"}, "transport::address"},
		{[]string{"module", "source", "add", "acme/net/aws", base + "infra", "--password-file", "-"}, "--password-file needs --username"},
		{[]string{"module", "source", "add", "acme/net/aws", "git@h:x", "--ssh-key-file", "k"}, "--known-hosts-file"},
		{[]string{"module", "source", "add", "acme/net/aws", base + "infra", "--poll-interval", "1s"}, "--poll-interval"},
	} {
		if r := run("", tc.args...); r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("trove %s: exit %d, stderr %q; want usage error with %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}

	r := run("tok3n\n", "module", "source", "add", "acme/net/aws", base+"infra", "--subdir", "modules/net", "--tag-prefix", "net/",
		"--username", "ci", "--password-file", "-", "--poll-interval", "never")
	if r.code != exitOK || !strings.Contains(r.stdout, "secret gitsec_") || !strings.Contains(r.stdout, "/api/v1/git-hooks/acme/net/aws") {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	gst.Git(t, repo, "tag", "net/v1.1.0")
	r = run("", "module", "source", "sync", "acme/net/aws")
	if r.code != exitOK || !strings.Contains(r.stdout, "Synced acme/net/aws") {
		t.Fatalf("sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("", "module", "show", "acme/net/aws")
	if r.code != exitOK || !strings.Contains(r.stdout, "1.1.0") || !strings.Contains(r.stdout, "1.0.0") {
		t.Fatalf("show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("", "module", "source", "list", "acme")
	if r.code != exitOK || !strings.Contains(r.stdout, "modules/net") || !strings.Contains(r.stdout, "never") || strings.Contains(r.stdout, "tok3n") {
		t.Fatalf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run("", "module", "source", "remove", "acme/net/aws")
	if r.code != exitOK || !strings.Contains(r.stdout, "published versions stay") {
		t.Fatalf("remove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = run("", "module", "source", "sync", "acme/net/aws"); r.code != exitError || !strings.Contains(r.stderr, "has no git source") {
		t.Fatalf("sync after remove: exit %d\n%s", r.code, r.stderr)
	}
}
