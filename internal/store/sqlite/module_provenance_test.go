package sqlite

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestModuleProvenanceMigration takes an index with module versions back
// to the schema before migration 0026 and opens it again: the migration
// adds module_provenance, the existing versions have no provenance
// (NotFound), and a version created afterwards keeps its envelope.
func TestModuleProvenanceMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x := open(t, path)
	ctx := t.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	v := registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: strings.Repeat("a", 64), ArchiveFormat: "tar.gz", ArchiveSize: 3, PublishedAt: time.Now()}
	if err := x.CreateModuleVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE module_provenance`,
		`DELETE FROM schema_migrations WHERE version = 26`,
	} {
		if _, err := x.w.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	x.Close()
	x = open(t, path)
	if _, err := x.ModuleProvenance(ctx, "acme", "net", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a version from before the migration: ModuleProvenance = %v, want NotFound", err)
	}
	v.Version, v.Provenance = "1.1.0", []byte(`{"payloadType":"application/vnd.in-toto+json"}`)
	if err := x.CreateModuleVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	if got, err := x.ModuleProvenance(ctx, "acme", "net", "aws", "1.1.0"); err != nil || !bytes.Equal(got, v.Provenance) {
		t.Errorf("after the migration: ModuleProvenance = %q, %v", got, err)
	}
}
