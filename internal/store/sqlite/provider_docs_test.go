package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateProviderDocs opens an index of schema version 7 holding a
// provider version, migrates it to version 8 (0008_provider_docs) and
// checks the version: without documentation, which can then be set once.
func TestMigrateProviderDocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "provider_docs")
	for _, q := range []string{
		`INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', 1, 'private')`,
		`INSERT INTO signing_key_snapshots (id, digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES (1, 'd', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', 1)`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', 1)`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '["5.0"]', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `', 1, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	x := open(t, path) // applies 0008
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
	var check string
	if err := x.w.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
}
