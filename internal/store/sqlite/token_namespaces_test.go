package sqlite

import (
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/store/storetest"
)

// TestTokenNamespacesMigration binds tokens through tokens.namespace, as
// schema version 4 did, then migrates: they stay bound to their namespace
// (never global), are listed under it and go with it. A token bound
// through the column alone, as a Trove of schema version 4 writes it
// after the migration, is read the same way.
func TestTokenNamespacesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "token_namespaces")
	defer db.Close()
	insert := `INSERT INTO tokens (id, hash, namespace, scopes, description, created_at) VALUES (?, ?, ?, '["publish"]', '', 1)`
	for _, q := range [][]any{
		{`INSERT INTO namespaces (name, description, created_at) VALUES ('acme', '', 1), ('other', '', 1)`},
		{insert, "tok-acme", "h1", "acme"},
		{insert, "tok-global", "h2", nil},
	} {
		if _, err := db.ExecContext(ctx, q[0].(string), q[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	x := open(t, path) // applies the rest
	if _, err := db.ExecContext(ctx, insert, "tok-other", "h3", "other"); err != nil {
		t.Fatal(err)
	}
	var bindings int
	if err := x.r.QueryRowContext(ctx, `SELECT count(*) FROM token_namespaces WHERE token_id = 'tok-acme' AND namespace = 'acme'`).Scan(&bindings); err != nil || bindings != 1 {
		t.Errorf("bindings of tok-acme after the migration: %d, %v; want 1", bindings, err)
	}
	storetest.CheckMigratedTokenBindings(t, x)
}
