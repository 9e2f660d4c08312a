package postgres

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
)

// TestTrustPoliciesMigration goes back to schema version 7 with a
// namespace, then migrates: migration 0010 (with the gap of 8 and 9)
// adds trust policies and token IDs, which work with the namespace of
// before.
func TestTrustPoliciesMigration(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	for _, q := range []string{
		`DROP TABLE trust_policies`,
		`DROP TABLE used_token_ids`,
		`DELETE FROM schema_migrations WHERE version > 7`,
		`INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', now(), 'private')`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err := Open(ctx, dsn, WithMigrations(false))
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "trove migrate") {
		t.Errorf("Open without migrations of schema version 7: %v; want Invalid asking for trove migrate", err)
	}
	x = open(t, dsn) // migrates to the current version
	storetest.CheckMigratedTrustPolicies(t, x)
}

// TestSchemaGapIsChecked records the newest migration but not an older
// one, as a database migrated past a gap that a later release fills: a
// replica that does not migrate refuses it, naming the missing migration
// (migrating applies it: sqlstore.Pending).
func TestSchemaGapIsChecked(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	x := open(t, dsn)
	ctx := t.Context()
	for _, q := range []string{
		`DELETE FROM schema_migrations WHERE version = 7`,
	} {
		if _, err := x.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err := Open(ctx, dsn, WithMigrations(false))
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "lacks schema version 7") {
		t.Errorf("Open without migrations of a database lacking 0007: %v; want Invalid naming it", err)
	}
}
