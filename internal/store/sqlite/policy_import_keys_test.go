package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestPolicyImportKeysMigration takes an index with a provenance policy
// back to the schema before migration 0028 and opens it again: the policy
// is kept, without import keys, and can then be given some.
func TestPolicyImportKeysMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x := open(t, path)
	ctx := t.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := registry.ProvenancePolicy{Namespace: "acme", Repository: "acme/infra", Refs: "refs/tags/v*", UpdatedAt: time.Now(), UpdatedBy: "user:ada"}
	if err := x.PutProvenancePolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE provenance_policies DROP COLUMN import_keys`,
		`DELETE FROM schema_migrations WHERE version = 28`,
	} {
		if _, err := x.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x.Close()
	x = open(t, path)
	got, err := x.GetProvenancePolicy(ctx, "acme")
	if err != nil || got.Repository != "acme/infra" || got.Refs != "refs/tags/v*" || len(got.ImportKeys) != 0 {
		t.Fatalf("the migrated policy = %+v, %v; want it unchanged, without import keys", got, err)
	}
	p.ImportKeys = []registry.SigningKey{{KeyID: "0123456789ABCDEF", ASCIIArmor: "armor"}}
	if err := x.PutProvenancePolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, err := x.GetProvenancePolicy(ctx, "acme"); err != nil || len(got.ImportKeys) != 1 || got.ImportKeys[0].KeyID != "0123456789ABCDEF" {
		t.Errorf("after the migration: %+v, %v", got, err)
	}
}
