package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrors: hostile or missing arguments are refused before
// anything is built, with a message saying what to pass.
func TestUsageErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	for name, c := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no version":       {nil, 2, "usage: trove-release -version"},
		"extra argument":   {[]string{"-version", "1.0.0", "now"}, 2, "usage:"},
		"unknown platform": {[]string{"-version", "1.0.0", "-platforms", "windows/amd64"}, 2, "is not released"},
		"bad platform":     {[]string{"-version", "1.0.0", "-platforms", "linux"}, 2, "want os/arch"},
		"leading v":        {[]string{"-version", "v1.0.0", "-out", out}, 1, "drop the leading v"},
		"path in version":  {[]string{"-version", "1.0.0/../../etc", "-out", out}, 1, "invalid version"},
		"unknown flag":     {[]string{"-versoin", "1.0.0"}, 2, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", name, code, stderr.String(), c.code, c.want)
		}
	}
}
