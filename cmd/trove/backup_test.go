package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupCommandLine checks the command lines of backup and restore
// that never reach a store: usage errors exit 2, refusals exit 1 with
// what to do instead.
func TestBackupCommandLine(t *testing.T) {
	home := t.TempDir()
	data := filepath.Join(home, "data")
	if r := runTrove(t, map[string]string{"HOME": home}, "", "migrate", "--data-dir", data); r.code != exitOK {
		t.Fatalf("trove migrate: %d %s", r.code, r.stderr)
	}
	tests := map[string]struct {
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		"backup without --out": {
			args: []string{"backup", "--data-dir", data}, code: exitUsage, stderr: "--out is needed",
		},
		"backup of postgres": {
			env:  map[string]string{"TROVE_POSTGRES_DSN": "postgres://trove:hunter2@127.0.0.1:1/trove"},
			args: []string{"backup", "--index-backend", "postgres", "--out", filepath.Join(home, "b.tar")}, code: exitError, stderr: "pg_dump",
		},
		"backup of a missing data directory": {
			args: []string{"backup", "--data-dir", filepath.Join(home, "nope"), "--out", filepath.Join(home, "b.tar")}, code: exitError, stderr: "no index at",
		},
		"verify without a file": {
			args: []string{"backup", "verify"}, code: exitUsage, stderr: "missing arguments",
		},
		"verify of a missing file": {
			args: []string{"backup", "verify", filepath.Join(home, "nope.tar")}, code: exitError, stderr: "opening the backup file",
		},
		"restore without a file": {
			args: []string{"restore", "--data-dir", filepath.Join(home, "r")}, code: exitUsage, stderr: "missing arguments",
		},
		"restore of a missing file": {
			args: []string{"restore", "--data-dir", filepath.Join(home, "r"), filepath.Join(home, "nope.tar")}, code: exitError, stderr: "opening the backup file",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			for k, v := range tc.env {
				env[k] = v
			}
			r := runTrove(t, env, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("trove %s: exit %d, stderr %q; want exit %d, stderr with %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.stderr)
			}
			if strings.Contains(r.stderr, "hunter2") {
				t.Errorf("stderr shows the password: %s", r.stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, "r")); !os.IsNotExist(err) {
		t.Errorf("a refused restore created its data directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "b.tar")); !os.IsNotExist(err) {
		t.Errorf("a refused backup wrote a file: %v", err)
	}
}
