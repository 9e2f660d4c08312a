package sqlite

import (
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/storetest"
)

// TestPolicyImportKeysMigration is storetest's check of migration 0028
// on a SQLite file.
func TestPolicyImportKeysMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	storetest.TestPolicyImportKeysMigration(t, func(t *testing.T) store.Index { return open(t, path) },
		func(t *testing.T, x store.Index, statements ...string) {
			for _, q := range statements {
				if _, err := x.(*Index).w.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			x.Close()
		})
}
