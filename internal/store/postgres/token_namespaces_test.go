package postgres

import (
	"slices"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
)

// TestTokenNamespacesMigration binds tokens through tokens.namespace, as
// schema version 4 did, then migrates: they stay bound to their namespace
// (never global), are listed under it and go with it. A token bound
// through the column alone, as a replica of the previous release writes
// it during a rolling upgrade, is read the same way.
func TestTokenNamespacesMigration(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	insert := `INSERT INTO tokens (id, hash, namespace, scopes, description, created_at) VALUES ($1, $2, $3, '{publish}', '', now())`
	// Back to schema version 4, with two tokens.
	for _, q := range [][]any{
		{`DROP TABLE token_namespaces`},
		{`DELETE FROM schema_migrations WHERE version > 4`},
		{`INSERT INTO namespaces (name, description, created_at) VALUES ('acme', '', now()), ('other', '', now())`},
		{insert, "tok-acme", "h1", "acme"},
		{insert, "tok-global", "h2", nil},
	} {
		if _, err := x.pool.Exec(ctx, q[0].(string), q[1:]...); err != nil {
			t.Fatalf("%s: %v", q[0], err)
		}
	}
	x = open(t, dsn) // migrates to the current version
	if _, err := x.pool.Exec(ctx, insert, "tok-other", "h3", "other"); err != nil {
		t.Fatal(err)
	}
	var bindings int
	if err := x.pool.QueryRow(ctx, `SELECT count(*) FROM token_namespaces WHERE token_id = 'tok-acme' AND namespace = 'acme'`).Scan(&bindings); err != nil || bindings != 1 {
		t.Errorf("bindings of tok-acme after the migration: %d, %v; want 1", bindings, err)
	}
	storetest.CheckMigratedTokenBindings(t, x)
}

// TestTokenSetSeenByPreviousRelease checks what a replica of the release
// before schema version 5 makes of a token bound to two namespaces: it
// reads tokens.namespace, the first of them, and deletes namespaces with
// a plain DELETE. Deleting the first deletes the token; deleting the
// other is refused, rather than leave the token bound to the first alone.
func TestTokenSetSeenByPreviousRelease(t *testing.T) {
	x := open(t, pgtest.NewSchema(t))
	ctx := t.Context()
	for _, ns := range []string{"acme", "beta", "gamma"} {
		if err := x.CreateNamespace(ctx, registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for id, set := range map[string][]string{"tok-ab": {"beta", "acme"}, "tok-bg": {"beta", "gamma"}} {
		tok := registry.Token{ID: id, Hash: "hash of " + id, Namespaces: set, Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now()}
		if err := x.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	var first string
	if err := x.pool.QueryRow(ctx, `SELECT namespace FROM tokens WHERE id = 'tok-ab'`).Scan(&first); err != nil || first != "acme" {
		t.Errorf("tokens.namespace of a token bound to beta, acme = %q, %v; want acme", first, err)
	}
	if _, err := x.pool.Exec(ctx, `DELETE FROM namespaces WHERE name = 'gamma'`); pgCode(err) != codeForeignKeyViolation {
		t.Errorf("a plain delete of gamma, the second namespace of tok-bg: %v, want a foreign key violation", err)
	}
	if _, err := x.pool.Exec(ctx, `DELETE FROM namespaces WHERE name = 'acme'`); err != nil {
		t.Fatalf("a plain delete of acme, the first namespace of tok-ab: %v", err)
	}
	if _, err := x.TokenByHash(ctx, "hash of tok-ab"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("tok-ab after a plain delete of acme: %v, want NotFound", err)
	}
	tok, err := x.TokenByHash(ctx, "hash of tok-bg")
	if err != nil || !slices.Equal(tok.Namespaces, []string{"beta", "gamma"}) {
		t.Errorf("tok-bg = %q, %v; want bound to beta, gamma", tok.Namespaces, err)
	}
}
