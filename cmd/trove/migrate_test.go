package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

func TestMigrate(t *testing.T) {
	home := t.TempDir()
	tests := map[string]struct {
		env    map[string]string
		args   []string
		code   int
		stdout string // in stdout
		stderr string // in stderr
	}{
		"sqlite by default": {
			args: []string{"--data-dir", filepath.Join(home, "data")},
			code: exitOK, stdout: "SQLite index " + filepath.Join(home, "data", "trove.db"),
		},
		"postgres without a DSN": {
			args: []string{"--index-backend", "postgres"},
			code: exitUsage, stderr: "needs --postgres-dsn",
		},
		"postgres unreachable": {
			env:  map[string]string{"TROVE_INDEX_BACKEND": "postgres", "TROVE_POSTGRES_DSN": "postgres://trove:hunter2@127.0.0.1:1/trove"},
			code: exitError, stderr: "cannot reach PostgreSQL at 127.0.0.1:1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			for k, v := range tc.env {
				env[k] = v
			}
			r := runTrove(t, env, "", append([]string{"migrate"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("trove migrate: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
					r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
			if strings.Contains(r.stderr, "hunter2") {
				t.Errorf("stderr shows the password: %s", r.stderr)
			}
		})
	}
}

func TestMigratePostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	env := map[string]string{"HOME": t.TempDir(), "TROVE_INDEX_BACKEND": "postgres", "TROVE_POSTGRES_DSN": dsn}
	for range 2 { // the second run finds nothing to do
		r := runTrove(t, env, "", "migrate")
		want := "schema version " + strconv.Itoa(postgres.SchemaVersion())
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Fatalf("trove migrate: exit %d, stdout %q, stderr %q; want exit 0 and %q", r.code, r.stdout, r.stderr, want)
		}
	}
	idx, err := postgres.Open(t.Context(), dsn, postgres.WithMigrations(false))
	if err != nil {
		t.Fatalf("the migrated database does not open without migrations: %v", err)
	}
	idx.Close()
}
