package sqlite

import (
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestNamespaceDefaultIsPrivate inserts namespaces without a visibility,
// through the index's own connection and through another one: the
// schema's default makes them private. A namespace that existed before
// the migration keeps its visibility.
func TestNamespaceDefaultIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "private_by_default")
	if _, err := db.ExecContext(ctx, `INSERT INTO namespaces (name, description, created_at) VALUES ('before', '', 1)`); err != nil {
		t.Fatal(err)
	}
	x := open(t, path) // applies the rest; db keeps its connection and cached schema
	if _, err := db.ExecContext(ctx, `INSERT INTO namespaces (name, description, created_at) VALUES ('other-connection', '', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := x.w.ExecContext(ctx, `INSERT INTO namespaces (name, description, created_at) VALUES ('own-connection', '', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, want := range map[string]registry.Visibility{
		"before": registry.VisibilityPublic, "other-connection": registry.VisibilityPrivate, "own-connection": registry.VisibilityPrivate,
	} {
		ns, err := x.GetNamespace(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ns.Visibility != want {
			t.Errorf("namespace %s inserted without a visibility is %q, want %q", name, ns.Visibility, want)
		}
	}
	var check string
	if err := x.w.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}
