package sqlite

import (
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/store/storetest"
)

// TestDownloadCountsMigration takes an index with provider and module
// versions back to the schema before migration 0009 and opens it again:
// the migration adds the count tables, every version counts 0, and counts
// add up from there.
func TestDownloadCountsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x := open(t, path)
	storetest.SeedDownloadsMigration(t, x)
	for _, q := range []string{
		`DROP TABLE provider_downloads`,
		`DROP TABLE module_downloads`,
		`DELETE FROM schema_migrations WHERE version = 9`,
	} {
		if _, err := x.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x.Close()
	storetest.CheckMigratedDownloads(t, open(t, path))
}
