package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestAccessMigrationKeepsExistingNamespacesPublic builds an index at
// schema version 2 (before access control), then opens it: namespaces
// that existed keep being readable anonymously, new ones are private.
func TestAccessMigrationKeepsExistingNamespacesPublic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "access")
	if _, err := db.ExecContext(ctx, `INSERT INTO namespaces (name, description, created_at) VALUES ('legacy', '', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	x := open(t, path)
	legacy, err := x.GetNamespace(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if legacy.Visibility != registry.VisibilityPublic {
		t.Errorf("a namespace created before access control has visibility %q, want public", legacy.Visibility)
	}
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "fresh", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	fresh, err := x.GetNamespace(ctx, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Visibility != registry.VisibilityPrivate {
		t.Errorf("a namespace created without a visibility after the migration has visibility %q, want private", fresh.Visibility)
	}
}

// migratedUntil opens a new index database at path with every migration
// before the one named stop applied, as a Trove of that schema version
// left it, and returns the raw connection; the test closes it.
func migratedUntil(t *testing.T, path, stop string) *sql.DB {
	t.Helper()
	ctx := t.Context()
	db, err := sql.Open("sqlite", dsn(path, "immediate", "foreign_keys(1)"))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ms {
		if m.Name == stop {
			found = true
			break
		}
		if err := apply(ctx, db, m); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("no migration named %q", stop)
	}
	return db
}
