package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/storetest"
)

// TestMigrateVersionLifecycle opens an index of schema version 11 holding
// a provider version and a module version, migrates it to version 12
// (0012_version_lifecycle) and checks both: neither deprecated nor
// revoked, and both can then be.
func TestMigrateVersionLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "version_lifecycle")
	for _, q := range []string{
		`INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', 1, 'private')`,
		`INSERT INTO signing_key_snapshots (id, digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES (1, 'd', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', 1)`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', 1)`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '["5.0"]', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `', 1, 1)`,
		`INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
			VALUES ('acme', 'network', 'aws', 1, '1.0.0', 'net', 1)`,
		`INSERT INTO module_versions (namespace, name, system, version, archive_digest, archive_format, archive_size, description, origin, published_at)
			VALUES ('acme', 'network', 'aws', '1.0.0', '` + strings.Repeat("c", 64) + `', 'tar.gz', 10, 'net', '', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	x := open(t, path) // applies 0012
	v, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
	if err != nil || v.Deprecation != nil || v.Revocation != nil || v.SHASumsDigest != strings.Repeat("a", 64) {
		t.Fatalf("migrated provider version = %+v, %v; want it unchanged, neither deprecated nor revoked", v, err)
	}
	m, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil || m.Deprecation != nil || m.Revocation != nil || m.ArchiveSize != 10 {
		t.Fatalf("migrated module version = %+v, %v; want it unchanged, neither deprecated nor revoked", m, err)
	}
	now := time.Now()
	if err := x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", &registry.Deprecation{Reason: "old", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.0.0", &registry.Revocation{Reason: "broken", At: now}); err != nil {
		t.Fatal(err)
	}
	if v, err = x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); err != nil || v.Deprecation == nil || v.Deprecation.Reason != "old" {
		t.Errorf("after SetProviderDeprecation: %+v, %v", v.Deprecation, err)
	}
	if m, err = x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0"); err != nil || m.Revocation == nil || m.Revocation.Reason != "broken" {
		t.Errorf("after SetModuleRevocation: %+v, %v", m.Revocation, err)
	}
}

// TestMigrateReleasedBlobs opens an index of schema version 14 holding a
// provider version and a module version, migrates it to version 15
// (0015_released_blobs) and checks that nothing is released until the
// versions are deleted.
func TestMigrateReleasedBlobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "released_blobs")
	for _, q := range []string{
		`INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', 1, 'private')`,
		`INSERT INTO signing_key_snapshots (id, digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES (1, 'd', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', 1)`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', 1)`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '["5.0"]', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `', 1, 1)`,
		`INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
			VALUES ('acme', 'network', 'aws', 1, '1.0.0', 'net', 1)`,
		`INSERT INTO module_versions (namespace, name, system, version, archive_digest, archive_format, archive_size, description, origin, published_at)
			VALUES ('acme', 'network', 'aws', '1.0.0', '` + strings.Repeat("c", 64) + `', 'tar.gz', 10, 'net', '', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	storetest.CheckMigratedReleases(t, open(t, path)) // applies 0015
}
