package sqlite

import (
	"path/filepath"
	"slices"
	"testing"

	"trove.dev/trove/internal/registry"
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
	for hash, want := range map[string][]string{"h1": {"acme"}, "h2": nil, "h3": {"other"}} {
		tok, err := x.TokenByHash(ctx, hash)
		if err != nil || !slices.Equal(tok.Namespaces, want) {
			t.Errorf("token %s: namespaces %q, %v; want %q", tok.ID, tok.Namespaces, err, want)
		}
	}
	var bindings int
	if err := x.r.QueryRowContext(ctx, `SELECT count(*) FROM token_namespaces WHERE token_id = 'tok-acme' AND namespace = 'acme'`).Scan(&bindings); err != nil || bindings != 1 {
		t.Errorf("bindings of tok-acme after the migration: %d, %v; want 1", bindings, err)
	}
	for _, ns := range []string{"acme", "other"} {
		toks, err := x.ListTokens(ctx, ns)
		if err != nil || len(toks) != 1 || toks[0].Namespaces[0] != ns {
			t.Errorf("ListTokens(%s) = %+v, %v; want its one token", ns, toks, err)
		}
		if err := x.DeleteNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := x.CountTokens(ctx); err != nil || n != 1 {
		t.Errorf("CountTokens after deleting both namespaces = %d, %v; want 1 (the global token)", n, err)
	}
	if _, err := x.TokenByHash(ctx, "h2"); err != nil {
		t.Errorf("the global token: %v", err)
	}
	if _, err := x.TokenByHash(ctx, "h1"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the token of the deleted namespace: %v, want NotFound", err)
	}
}
