package postgres

import (
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// TestNamespaceDefaultIsPrivate inserts namespaces without a visibility:
// the schema's default makes them private. A namespace inserted while
// the default was still 'public' (schema version 3) keeps its visibility.
func TestNamespaceDefaultIsPrivate(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	// Back to schema version 3: the default of migration 3, one row.
	for _, q := range []string{
		`ALTER TABLE namespaces ALTER COLUMN visibility SET DEFAULT 'public'`,
		`INSERT INTO namespaces (name, description, created_at) VALUES ('before', '', now())`,
		`DELETE FROM schema_migrations WHERE version > 3`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x = open(t, dsn) // migrates to the current version
	if _, err := x.pool.Exec(ctx, `INSERT INTO namespaces (name, description, created_at) VALUES ('after', '', now())`); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]registry.Visibility{"before": registry.VisibilityPublic, "after": registry.VisibilityPrivate} {
		ns, err := x.GetNamespace(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ns.Visibility != want {
			t.Errorf("namespace %s inserted without a visibility is %q, want %q", name, ns.Visibility, want)
		}
	}
}
