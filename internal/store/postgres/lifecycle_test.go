package postgres

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
)

// TestMigrateVersionLifecycle takes an index back to schema version 11
// with a provider version and a module version in it, migrates it to
// version 12 (0012_version_lifecycle) and checks both: neither deprecated
// nor revoked, and both can then be.
func TestMigrateVersionLifecycle(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	drop := `DROP COLUMN deprecated_at, DROP COLUMN deprecation_reason, DROP COLUMN deprecation_link, DROP COLUMN deprecated_by,
		DROP COLUMN revoked_at, DROP COLUMN revocation_reason, DROP COLUMN revoked_by`
	for _, q := range []string{
		`ALTER TABLE provider_versions ` + drop,
		`ALTER TABLE module_versions ` + drop,
		`DELETE FROM schema_migrations WHERE version > 11`,
		`INSERT INTO signing_key_snapshots (digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES ('d', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', now())`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', now())`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '{5.0}', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `',
			(SELECT id FROM signing_key_snapshots WHERE digest = 'd'), now())`,
		`INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
			VALUES ('acme', 'network', 'aws', 1, '1.0.0', 'net', now())`,
		`INSERT INTO module_versions (namespace, name, system, version, archive_digest, archive_format, archive_size, description, origin, published_at)
			VALUES ('acme', 'network', 'aws', '1.0.0', '` + strings.Repeat("c", 64) + `', 'tar.gz', 10, 'net', '', now())`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x = open(t, dsn) // migrates to the current version
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

// TestMigrateReleasedBlobs takes an index back to schema version 14 with
// a provider version and a module version in it, migrates it to version
// 15 (0015_released_blobs) and checks that nothing is released until the
// versions are deleted.
func TestMigrateReleasedBlobs(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE released_blobs`,
		`DROP INDEX provider_versions_by_shasums, provider_versions_by_signature, provider_versions_by_docs,
			mirrored_versions_by_shasums, mirrored_versions_by_signature`,
		`DELETE FROM schema_migrations WHERE version = 15`,
		`INSERT INTO signing_key_snapshots (digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			VALUES ('d', 'acme', 'acme', '0123456789ABCDEF', 'F', 'armor', now())`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES ('acme', 'cloud', 1, '1.0.0', now())`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ('acme', 'cloud', '1.0.0', '{5.0}', '` + strings.Repeat("a", 64) + `', '` + strings.Repeat("b", 64) + `',
			(SELECT id FROM signing_key_snapshots WHERE digest = 'd'), now())`,
		`INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
			VALUES ('acme', 'network', 'aws', 1, '1.0.0', 'net', now())`,
		`INSERT INTO module_versions (namespace, name, system, version, archive_digest, archive_format, archive_size, description, origin, published_at)
			VALUES ('acme', 'network', 'aws', '1.0.0', '` + strings.Repeat("c", 64) + `', 'tar.gz', 10, 'net', '', now())`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.CheckMigratedReleases(t, open(t, dsn)) // applies 0015
}
