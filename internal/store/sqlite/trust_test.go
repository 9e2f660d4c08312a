package sqlite

import (
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/store/storetest"
)

// TestTrustPoliciesMigration opens an index of schema version 7 holding a
// namespace: migration 0010 (with the gap of 8 and 9) adds trust policies
// and token IDs, which work with the namespace of before.
func TestTrustPoliciesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	db := migratedUntil(t, path, "trust_policies")
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', 1, 'private')`); err != nil {
		t.Fatal(err)
	}
	x := open(t, path) // applies 0010
	var applied int
	if err := x.r.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations WHERE version = 10`).Scan(&applied); err != nil || applied != 1 {
		t.Fatalf("migration 10 recorded %d times (%v), want once", applied, err)
	}
	storetest.CheckMigratedTrustPolicies(t, x)
}
