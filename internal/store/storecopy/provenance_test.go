package storecopy

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// importedData is what importBundle stored in a source: a mirrored
// provider version and a module version an air-gap bundle brought, each
// with provenance signed by the exporting Trove's key (exporter), which
// the source holds only as the keys stored with them.
type importedData struct {
	exporter *signingtest.Key
	module   registry.ModuleVersion
	mirrored registry.MirroredVersion
	zip      string // the file name of the mirrored package
}

// importBundle stores, through the index's ImportBundle (what a bundle
// import writes once it has verified the bundle), a module version of
// namespace acme with its provenance and keys, and gives the mirrored
// version hashicorp/null 3.2.0 (stored by fill without provenance, one
// package held) its provenance with the bundle's keys.
func (d *registryData) importBundle() importedData {
	d.t.Helper()
	ctx := d.t.Context()
	exporter := signingtest.NewKey(d.t, "acme")
	pub, err := signing.ParsePublicKey(exporter.ArmoredPublic)
	must(d.t, err)
	keys := []registry.SigningKey{{Namespace: "acme", KeyID: pub.KeyID, ASCIIArmor: exporter.ArmoredPublic}}
	sign := func(st provenance.Statement) []byte {
		env, _, err := provenance.Sign(ctx, st, func(_ context.Context, data []byte) (registry.SigningKey, []byte, error) {
			return pub, exporter.Sign(data), nil
		})
		must(d.t, err)
		return env
	}
	archive := "imported module archive"
	m := registry.ModuleVersion{Namespace: "acme", Name: "dns", System: "aws", Version: "2.0.0",
		ArchiveDigest: d.putBlob(archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)),
		Description: "imported", Origin: "bundle", PublishedAt: d.now}
	m.Provenance = sign(provenance.NewKeyless(provenance.Release{Namespace: "acme", Name: "dns", System: "aws", Version: "2.0.0",
		Archives: map[string]string{"dns-aws-2.0.0.tar.gz": m.ArchiveDigest}, PublishedAt: d.now},
		provenance.CI{Issuer: "https://ci.example", Repository: "acme/dns", Ref: "refs/tags/v2.0.0"}))
	m.ProvenanceKeys = keys

	stored, err := d.s.Index.GetMirroredVersion(ctx, mirrorHost, "hashicorp", "null", "3.2.0")
	must(d.t, err)
	v := stored
	v.Platforms = v.Platforms[:0:0]
	for _, p := range stored.Platforms {
		if p.Held() {
			v.Platforms = append(v.Platforms, p)
		}
	}
	zip := v.Platforms[0].Filename
	v.Provenance = sign(provenance.NewPublish(provenance.Release{Namespace: "hashicorp", Type: "null", Version: "3.2.0",
		Archives: map[string]string{zip: v.Platforms[0].SHA256}, PublishedAt: d.now}, provenance.Identity{TokenID: "tok-up"}))
	v.ProvenanceKeys = keys
	_, err = d.s.Index.ImportBundle(ctx, []registry.MirroredVersion{v}, []registry.ModuleVersion{m})
	must(d.t, err)
	return importedData{exporter: exporter, module: m, mirrored: v, zip: zip}
}

// checkImported fails unless s verifies the provenance of the imported
// versions with the keys stored with them, as the web pages, the API and
// `trove verify` do.
func (in importedData) checkImported(t *testing.T, s Store) {
	t.Helper()
	ctx := t.Context()
	env, err := s.Index.ModuleProvenance(ctx, "acme", "dns", "aws", "2.0.0")
	must(t, err)
	keys, err := s.Index.ModuleProvenanceKeys(ctx, "acme", "dns", "aws", "2.0.0")
	if err != nil {
		t.Fatalf("the imported module's provenance keys: %v", err)
	}
	v, err := provenance.Verify(ctx, env, keys, time.Time{})
	if err != nil {
		t.Fatalf("the imported module's provenance does not verify with its stored keys: %v", err)
	}
	must(t, v.Statement.CheckArchive("dns-aws-2.0.0.tar.gz", in.module.ArchiveDigest))
	env, keys, err = s.Index.MirroredProvenance(ctx, mirrorHost, "hashicorp", "null", "3.2.0")
	if err != nil {
		t.Fatalf("the mirrored version's provenance: %v", err)
	}
	v, err = provenance.Verify(ctx, env, keys, time.Time{})
	if err != nil {
		t.Fatalf("the mirrored version's provenance does not verify with its stored keys: %v", err)
	}
	must(t, v.Statement.CheckArchive(in.zip, in.mirrored.Platforms[0].SHA256))
	// The target's own keys of namespace acme do not verify it: the keys
	// stored with the version are what makes it verify.
	own, err := s.Index.ListSigningKeys(ctx, "acme")
	must(t, err)
	if _, err := provenance.Verify(ctx, env, own, time.Time{}); err == nil {
		t.Error("the namespace's own keys verify the exporting Trove's signature")
	}
}

// TestCopyImportedProvenance: the provenance an air-gap bundle brought
// (mirrored provider, module) is copied with the keys that verify it, to
// PostgreSQL and S3 and back; a target an earlier copy left without a
// mirrored version's provenance gains it.
func TestCopyImportedProvenance(t *testing.T) {
	ctx := t.Context()
	src, _ := embedded(t)
	d := fill(t, src)
	dst, _ := embedded(t)
	if _, err := Copy(ctx, src, dst, opts); err != nil {
		t.Fatal(err)
	}
	in := d.importBundle()
	in.checkImported(t, src)

	// The target holds the mirrored version without provenance (copied
	// before the import): it gains it, with the module version.
	r, err := Copy(ctx, src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.ModuleVersions != (Count{Copied: 1, Present: 1}) || r.Updated != 1 {
		t.Errorf("copy after the import: %+v; want one module version copied and the mirrored provenance updated", r)
	}
	in.checkImported(t, dst)
	checkSame(t, src, dst)
	if again, err := Copy(ctx, src, dst, opts); err != nil || again.Updated != 0 || again.ModuleVersions.Copied != 0 {
		t.Errorf("copy again = %+v, %v; want nothing to do", again, err)
	}

	out := scaleOut(t)
	if _, err := Copy(ctx, src, out, opts); err != nil {
		t.Fatalf("embedded -> PostgreSQL+S3: %v", err)
	}
	in.checkImported(t, out)
	checkSame(t, src, out)
	back, _ := embedded(t)
	if _, err := Copy(ctx, out, back, opts); err != nil {
		t.Fatalf("PostgreSQL+S3 -> embedded: %v", err)
	}
	in.checkImported(t, back)
	checkSame(t, src, back)
}

// TestCopyRefusesImportedProvenanceWithoutKeys: a target holding an
// imported module version's provenance without its keys (as a copy by
// an earlier Trove left it) or with other keys is a conflict, nothing
// written.
func TestCopyRefusesImportedProvenanceWithoutKeys(t *testing.T) {
	ctx := t.Context()
	for _, c := range []struct {
		name string
		keys func(in importedData) []registry.SigningKey
		want string
	}{
		{"without keys", func(importedData) []registry.SigningKey { return nil }, "without the keys that verify it"},
		{"other keys", func(in importedData) []registry.SigningKey {
			k := in.module.ProvenanceKeys[0]
			k.ASCIIArmor = signingtest.NewKey(t, "acme").ArmoredPublic
			return []registry.SigningKey{k}
		}, "with other keys"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, _ := embedded(t)
			d := fill(t, src)
			other, _ := embedded(t)
			if _, err := Copy(ctx, src, other, opts); err != nil {
				t.Fatal(err)
			}
			in := d.importBundle()
			m := in.module
			m.ProvenanceKeys = c.keys(in)
			archive := "imported module archive"
			must(t, other.Blobs.Put(ctx, m.ArchiveDigest, int64(len(archive)), strings.NewReader(archive)))
			must(t, other.Index.CreateModuleVersion(ctx, m))
			_, err := Copy(ctx, src, other, opts)
			if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") != 1 {
				t.Fatalf("copy onto a target with the module's provenance %s: %v; want a Conflict of this one difference, saying %q", c.name, err, c.want)
			}
			if _, err := other.Index.GetMirroredVersion(ctx, mirrorHost, "hashicorp", "null", "3.2.0"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := other.Index.MirroredProvenance(ctx, mirrorHost, "hashicorp", "null", "3.2.0"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("the refused copy wrote the mirrored provenance: %v", err)
			}
		})
	}
}
