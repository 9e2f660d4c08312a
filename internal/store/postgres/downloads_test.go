package postgres

import (
	"testing"

	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
)

// TestDownloadCountsMigration takes an index with provider and module
// versions back to the schema before migration 0009 and opens it again:
// the migration adds the count tables, every version counts 0, and counts
// add up from there.
func TestDownloadCountsMigration(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	storetest.SeedDownloadsMigration(t, x)
	for _, q := range []string{
		`DROP TABLE provider_downloads`,
		`DROP TABLE module_downloads`,
		`DELETE FROM schema_migrations WHERE version = 9`,
	} {
		if _, err := x.pool.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.CheckMigratedDownloads(t, open(t, dsn)) // migrates to the current version
}
