package postgres

import (
	"testing"

	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
)

// TestMigratePolicyImportKeys is storetest's check of migration 0028 on
// a PostgreSQL schema.
func TestMigratePolicyImportKeys(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	storetest.TestPolicyImportKeysMigration(t, func(t *testing.T) store.Index { return open(t, dsn) },
		func(t *testing.T, x store.Index, statements ...string) {
			for _, q := range statements {
				if _, err := x.(*Index).pool.Exec(t.Context(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		})
}
