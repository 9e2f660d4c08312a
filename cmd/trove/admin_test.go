package main

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/trovetest"
)

// TestAdminTokenWhileServing mints a token in the index of a running
// server, which accepts it at once.
func TestAdminTokenWhileServing(t *testing.T) {
	s := trovetest.Start(t)
	home := t.TempDir()
	r := runTrove(t, map[string]string{"HOME": home}, "", "admin", "token", "--data-dir", s.DataDir,
		"--description", "recovery", "--expires", "1h")
	if r.code != exitOK {
		t.Fatalf("trove admin token: exit %d\n%s", r.code, r.stderr)
	}
	secret := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(secret, "trove_") || strings.Contains(secret, "\n") {
		t.Fatalf("trove admin token printed %q, want one token", r.stdout)
	}
	if !strings.Contains(r.stderr, "shown only once") || strings.Contains(r.stderr, secret) {
		t.Errorf("stderr: %q", r.stderr)
	}
	client := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": secret, "TROVE_CA_FILE": s.CAFile, "HOME": home}
	if r := runTrove(t, client, "", "namespace", "create", "minted"); r.code != exitOK {
		t.Fatalf("the minted token is refused: exit %d\n%s", r.code, r.stderr)
	}

	tokens, err := s.Index.ListTokens(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var minted registry.Token
	for _, tok := range tokens {
		if tok.Description == "recovery" {
			minted = tok
		}
	}
	if !minted.Global() || len(minted.Scopes) != 1 || minted.Scopes[0] != registry.ScopeAdmin || minted.ExpiresAt.IsZero() || minted.User != "" {
		t.Errorf("minted token %+v, want a global admin service token that expires", minted)
	}
	events, err := s.Index.ListAudit(t.Context(), registry.AuditFilter{Action: registry.AuditTokenCreate})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Actor != localAdminActor || events[0].Target != minted.ID || !strings.Contains(events[0].Details, "on host ") {
		t.Errorf("audit events %+v, want one token.create by %s of %s", events, localAdminActor, minted.ID)
	}
}

func TestAdminTokenUsage(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--expires", "-1h"}, "--expires must be positive, got -1h\n"},
		{[]string{"--expires", "soon"}, `--expires: want a duration such as 24h, 90m or 30s, got "soon"`},
		{[]string{"now"}, `unexpected argument "now"`},
		{[]string{"--index-backend", "postgres"}, "needs --postgres-dsn"},
		{[]string{"--description", "a\x1b[2Jb"}, "--description: description contains the control character U+001B"},
		{[]string{"--description", "two\nlines"}, "control character U+000A"},
		{[]string{"--description", strings.Repeat("d", 2000)}, "--description: description is too long: 2000 bytes, the limit is 1024"},
	} {
		// (Usage errors come before the index is looked for.)
		r := runTrove(t, map[string]string{"HOME": home}, "", append([]string{"admin", "token", "--data-dir", t.TempDir()}, tc.args...)...)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "trove admin token: ") || !strings.Contains(r.stderr, tc.want) ||
			!strings.Contains(r.stderr, "Usage: trove admin token") {
			t.Errorf("admin token %v: exit %d, stderr %q; want exit 2 with %q and the usage", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r := runTrove(t, map[string]string{"HOME": home}, "", "admin", "token", "--data-dir", t.TempDir())
	if r.code != exitError || !strings.Contains(r.stderr, "no index at") {
		t.Errorf("admin token on an empty data directory: exit %d, stderr %q; want exit 1 with \"no index at\"", r.code, r.stderr)
	}
	r = runTrove(t, map[string]string{"HOME": home}, "", "admin", "token", "--help")
	for _, want := range []string{"--description", "--expires", "--postgres-dsn", "[$TROVE_DATA_DIR]"} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("admin token --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "TROVE_DESCRIPTION") || strings.Contains(r.stdout, "TROVE_EXPIRES") {
		t.Errorf("admin token --help names an environment variable for a command-line-only flag:\n%s", r.stdout)
	}
}

// TestAdminTokenPostgres mints a token in a PostgreSQL index: refused
// before `trove migrate` (the command never migrates), created after.
func TestAdminTokenPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	env := map[string]string{"HOME": t.TempDir(), "TROVE_INDEX_BACKEND": "postgres", "TROVE_POSTGRES_DSN": dsn}
	if r := runTrove(t, env, "", "admin", "token"); r.code != exitError || !strings.Contains(r.stderr, "trove migrate") {
		t.Errorf("admin token on an empty database: exit %d, stderr %q; want advice to run trove migrate", r.code, r.stderr)
	}
	if r := runTrove(t, env, "", "migrate"); r.code != exitOK {
		t.Fatalf("trove migrate: exit %d\n%s", r.code, r.stderr)
	}
	r := runTrove(t, env, "", "admin", "token", "--description", "pg recovery")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "trove_") {
		t.Fatalf("admin token: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	idx, err := postgres.Open(t.Context(), dsn, postgres.WithMigrations(false))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	tokens, err := idx.ListTokens(t.Context(), "")
	if err != nil || len(tokens) != 1 || tokens[0].Description != "pg recovery" || !tokens[0].Global() {
		t.Errorf("tokens %+v, %v; want the minted global token", tokens, err)
	}
	events, err := idx.ListAudit(t.Context(), registry.AuditFilter{Actor: localAdminActor})
	if err != nil || len(events) != 1 || events[0].Action != registry.AuditTokenCreate {
		t.Errorf("audit %+v, %v; want one token.create by %s", events, err, localAdminActor)
	}
}
