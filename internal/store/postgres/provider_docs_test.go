package postgres

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// TestMigrateProviderDocs takes an index back to schema version 7 with a
// provider version in it, migrates it to version 8 (0008_provider_docs)
// and checks the version: without documentation, which can then be set
// once.
func TestMigrateProviderDocs(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Back to schema version 7, then a version as a release of that
	// schema stores it.
	for _, q := range []string{
		`ALTER TABLE provider_versions DROP COLUMN docs_digest, DROP COLUMN docs_size`,
		`DELETE FROM schema_migrations WHERE version > 7`,
		`INSERT INTO signing_key_snapshots (digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES ('d', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', now())`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', now())`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '{5.0}', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `',
			(SELECT id FROM signing_key_snapshots WHERE digest = 'd'), now())`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x = open(t, dsn) // migrates to the current version
	v, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if v.DocsDigest != "" || v.DocsSize != 0 || v.SHASumsDigest != strings.Repeat("a", 64) {
		t.Errorf("migrated version = %+v, want it unchanged and without documentation", v)
	}
	docs := strings.Repeat("c", 64)
	if _, err := x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", docs, 42); err != nil {
		t.Fatal(err)
	}
	if v, err = x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); err != nil || v.DocsDigest != docs || v.DocsSize != 42 {
		t.Errorf("after SetProviderDocs: %+v, %v", v, err)
	}
}
