package main

import (
	"strings"
	"testing"
)

func TestParseOCIItem(t *testing.T) {
	for _, c := range []struct {
		arg, want  string // want: the repository path, or "error"
		constraint bool
	}{
		{"acme/widget", "acme/widget", true},
		{"ACME/Widget@1.2.0", "acme/widget", true},
		{"acme/widget@~> 1.2", "acme/widget", true},
		{"acme/network/aws", "acme/modules/network/aws", true},
		{"acme/widget@1.2.0", "error", false}, // pull takes no constraint
		{"acme/widget@", "error", true},
		{"acme/widget@not a constraint", "error", true},
		{"acme", "error", true},
		{"acme/a/b/c", "error", true},
		{"../widget", "error", true},
		{"acme/..", "error", true},
		{"acme/net%2fwork/aws", "error", true},
		{"acme/network/AWS", "error", true},
		{"acme//aws", "error", true},
		{"acme/wid\nget", "error", true},
	} {
		it, err := parseOCIItem(c.arg, c.constraint)
		got := it.Path()
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("parseOCIItem(%q) = %q (%v), want %q", c.arg, got, err, c.want)
		}
	}
}

func TestSplitReference(t *testing.T) {
	for _, c := range []struct{ in, host, path, ref string }{
		{"ghcr.io/acme/widget:1.0.0", "ghcr.io", "acme/widget", "1.0.0"},
		{"localhost:5000/acme/widget:1.0.0_build.1", "localhost:5000", "acme/widget", "1.0.0_build.1"},
		{"registry.example.com/a/b@sha256:" + strings.Repeat("ab", 32), "registry.example.com", "a/b", "sha256:" + strings.Repeat("ab", 32)},
		{"localhost:5000/acme/widget", "", "", ""}, // no tag
		{"acme/widget:1.0.0", "", "", ""},          // no registry host
		{"ghcr.io/acme/widget:-bad", "", "", ""},   // invalid tag
		{"ghcr.io/acme/widget:" + strings.Repeat("1", 129), "", "", ""},
		{"gh cr.io/acme/widget:1.0.0", "", "", ""},
	} {
		repo, ref, err := splitReference(c.in)
		var host, path string
		if err == nil {
			host, path, err = splitRegistry(repo)
		}
		if err != nil {
			host, path, ref = "", "", ""
		}
		if host != c.host || path != c.path || ref != c.ref {
			t.Errorf("%q: host %q path %q ref %q (%v), want %q %q %q", c.in, host, path, ref, err, c.host, c.path, c.ref)
		}
	}
}

func TestOCIUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"oci", "push", "acme/widget"}, "", "needs --to"},
		{[]string{"oci", "push", "acme/widget", "--to", "acme"}, "", "does not start with a registry host"},
		{[]string{"oci", "push", "acme", "--to", "ghcr.io/x"}, "", "want NAMESPACE/TYPE"},
		{[]string{"oci", "push", "acme/widget", "--to", "ghcr.io/x", "--password-stdin"}, "pw\n", "--password-stdin needs --username"},
		{[]string{"oci", "push", "acme/widget", "--to", "ghcr.io/x", "--username", "u"}, "", "--username needs --password-stdin"},
		{[]string{"oci", "push", "acme/widget", "--to", "ghcr.io/x", "--username", "u", "--password-stdin"}, "", "standard input holds no password"},
		{[]string{"oci", "pull", "ghcr.io/acme/widget", "acme/widget"}, "", "names no tag"},
		{[]string{"oci", "pull", "ghcr.io:1.0.0", "acme/widget"}, "", "names no repository"},
		{[]string{"oci", "pull", "ghcr.io/acme/widget:1.0.0", "acme/widget@1.0"}, "", "constraint is not allowed"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), c.args, func(string) string { return "" }, strings.NewReader(c.stdin), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("trove %s: exit %d, stderr %q; want exit %d with %q", strings.Join(c.args, " "), code, stderr.String(), exitUsage, c.want)
		}
	}
}
