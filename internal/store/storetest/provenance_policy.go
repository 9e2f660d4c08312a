package storetest

import (
	"fmt"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testProvenancePolicies checks the namespaces' provenance policies.
func testProvenancePolicies(t *testing.T, newIndex func(*testing.T) store.Index) {
	x, ctx := newIndex(t), t.Context()
	createNamespaces(t, x, "acme", "other")
	_, err := x.GetProvenancePolicy(ctx, "acme")
	wantKind(t, err, registry.NotFound, "GetProvenancePolicy of a namespace without one")
	p := registry.ProvenancePolicy{Namespace: "acme", Repository: "acme/infra", Refs: "refs/tags/v*", UpdatedAt: t0, UpdatedBy: "user:ada"}
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy")
	got, err := x.GetProvenancePolicy(ctx, "acme")
	mustOK(t, err, "GetProvenancePolicy")
	if got.Repository != p.Repository || got.Refs != p.Refs || got.Issuer != "" || !got.UpdatedAt.Equal(t0) || got.UpdatedBy != "user:ada" {
		t.Errorf("GetProvenancePolicy = %+v, want %+v", got, p)
	}
	p.Issuer, p.Refs = "https://ci.example.test", ""
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy again (replace)")
	if got, _ := x.GetProvenancePolicy(ctx, "acme"); got.Issuer != p.Issuer || got.Refs != "" {
		t.Errorf("the replaced policy reads %+v", got)
	}
	key := registry.SigningKey{KeyID: "0123456789ABCDEF", Fingerprint: "AAAA0123456789ABCDEF0123456789ABCDEF0123", ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n..."}
	key2 := registry.SigningKey{KeyID: "FEDCBA9876543210", ASCIIArmor: "armor 2"}
	p.ImportKeys = []registry.SigningKey{key, key2}
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy with import keys")
	got, err = x.GetProvenancePolicy(ctx, "acme")
	mustOK(t, err, "GetProvenancePolicy with import keys")
	if len(got.ImportKeys) != 2 || got.ImportKeys[0].KeyID != key.KeyID || got.ImportKeys[0].Fingerprint != key.Fingerprint ||
		got.ImportKeys[0].ASCIIArmor != key.ASCIIArmor || got.ImportKeys[1].KeyID != key2.KeyID || got.ImportKeys[1].ASCIIArmor != key2.ASCIIArmor {
		t.Errorf("import keys read back as %+v", got.ImportKeys)
	}
	p.ImportKeys = nil
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy without import keys (replace)")
	if got, _ := x.GetProvenancePolicy(ctx, "acme"); len(got.ImportKeys) != 0 {
		t.Errorf("import keys after a replace without them: %+v", got.ImportKeys)
	}
	tooMany := make([]registry.SigningKey, registry.MaxPolicyImportKeys+1)
	for i := range tooMany {
		tooMany[i] = registry.SigningKey{KeyID: fmt.Sprintf("%016X", i), ASCIIArmor: "a"}
	}
	for name, bad := range map[string]registry.ProvenancePolicy{
		"too many import keys":        {Namespace: "other", Repository: "acme/infra", ImportKeys: tooMany, UpdatedAt: t0},
		"an import key twice":         {Namespace: "other", Repository: "acme/infra", ImportKeys: []registry.SigningKey{key, key}, UpdatedAt: t0},
		"an import key without armor": {Namespace: "other", Repository: "acme/infra", ImportKeys: []registry.SigningKey{{KeyID: key.KeyID}}, UpdatedAt: t0},
		"an import key with a bad ID": {Namespace: "other", Repository: "acme/infra", ImportKeys: []registry.SigningKey{{KeyID: "'; DROP", ASCIIArmor: "a"}}, UpdatedAt: t0},
		"no repository":               {Namespace: "other", UpdatedAt: t0},
		"bad pattern":                 {Namespace: "other", Repository: "acme/infra", Refs: "refs/[", UpdatedAt: t0},
		"http issuer":                 {Namespace: "other", Repository: "acme/infra", Issuer: "http://ci.example.test", UpdatedAt: t0},
		"control character":           {Namespace: "other", Repository: "acme/\x1binfra", UpdatedAt: t0},
	} {
		wantKind(t, x.PutProvenancePolicy(ctx, bad), registry.Invalid, "PutProvenancePolicy with "+name)
	}
	_, err = x.GetProvenancePolicy(ctx, "other")
	wantKind(t, err, registry.NotFound, "GetProvenancePolicy after refused puts")
	wantKind(t, x.PutProvenancePolicy(ctx, registry.ProvenancePolicy{Namespace: "nobody", Repository: "a/b", UpdatedAt: t0}), registry.NotFound,
		"PutProvenancePolicy of a missing namespace")
	mustOK(t, x.DeleteProvenancePolicy(ctx, "acme"), "DeleteProvenancePolicy")
	wantKind(t, x.DeleteProvenancePolicy(ctx, "acme"), registry.NotFound, "DeleteProvenancePolicy again")
}

// TestPolicyImportKeysMigration checks migration 0028 (the import keys of
// provenance policies) on a backend: an index with a provenance policy,
// taken back to the schema before 0028 and opened again, keeps the
// policy without import keys, and can then give it some. open opens the
// test's index (the same database on every call, migrated to the current
// schema); rollBack runs statements on x's database as they are and is
// done with x (a backend that must close it before opening again does).
func TestPolicyImportKeysMigration(t *testing.T, open func(*testing.T) store.Index, rollBack func(t *testing.T, x store.Index, statements ...string)) {
	x, ctx := open(t), t.Context()
	createNamespaces(t, x, "acme")
	p := registry.ProvenancePolicy{Namespace: "acme", Repository: "acme/infra", Refs: "refs/tags/v*", UpdatedAt: t0, UpdatedBy: "user:ada"}
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy")
	rollBack(t, x, `ALTER TABLE provenance_policies DROP COLUMN import_keys`, `DELETE FROM schema_migrations WHERE version = 28`)
	x = open(t) // migrates to the current version
	got, err := x.GetProvenancePolicy(ctx, "acme")
	if err != nil || got.Repository != "acme/infra" || got.Refs != "refs/tags/v*" || len(got.ImportKeys) != 0 {
		t.Fatalf("the migrated policy = %+v, %v; want it unchanged, without import keys", got, err)
	}
	p.ImportKeys = []registry.SigningKey{{KeyID: "0123456789ABCDEF", ASCIIArmor: "armor"}}
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy with import keys after the migration")
	if got, err := x.GetProvenancePolicy(ctx, "acme"); err != nil || len(got.ImportKeys) != 1 || got.ImportKeys[0].KeyID != "0123456789ABCDEF" {
		t.Errorf("after the migration: %+v, %v", got, err)
	}
}
