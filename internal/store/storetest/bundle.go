package storetest

import (
	"reflect"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// heldVersion returns mirroredVersion with every package held.
func heldVersion(host, ns, typ, version string, n int) registry.MirroredVersion {
	v := mirroredVersion(host, ns, typ, version, n, t0)
	for i := range v.Platforms {
		v.Platforms[i].Size = int64(1<<20 + i)
		v.Platforms[i].H1 = testH1(v.Platforms[i].SHA256)
	}
	return v
}

// checkNothingImported fails unless none of providers and modules is
// stored.
func checkNothingImported(t *testing.T, x store.Index, providers []registry.MirroredVersion, modules []registry.ModuleVersion) {
	t.Helper()
	ctx := t.Context()
	for _, v := range providers {
		_, err := x.GetMirroredVersion(ctx, v.Host, v.Namespace, v.Type, v.Version)
		wantKind(t, err, registry.NotFound, "GetMirroredVersion "+v.Host+"/"+v.Namespace+"/"+v.Type+" "+v.Version+" after a failed import")
	}
	for _, v := range modules {
		_, err := x.GetModuleVersion(ctx, v.Namespace, v.Name, v.System, v.Version)
		wantKind(t, err, registry.NotFound, "GetModuleVersion "+v.Namespace+"/"+v.Name+" "+v.Version+" after a failed import")
		if _, n, err := x.ListModules(ctx, registry.ModuleFilter{Namespace: v.Namespace, Query: v.Name}); err != nil || n != 0 {
			t.Errorf("ListModules after a failed import: %d modules, error %v; want none", n, err)
		}
	}
}

// testBundles checks the sentences of store.Bundles.
func testBundles(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("RoundTrip", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		a := heldVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1)
		b := heldVersion("registry.internal.test:8443", "team", "dns", "1.0.0-rc.1", 2)
		b.SigningKey.ExpiresAt = b.SigningKey.ExpiresAt.AddDate(-10, 0, 0) // expired since: kept as it is
		m := testModuleVersion("acme", "network", "aws", "1.2.0", t0.In(east))
		got, err := x.ImportBundle(ctx, []registry.MirroredVersion{a, b}, []registry.ModuleVersion{m})
		mustOK(t, err, "ImportBundle")
		want := store.BundleImport{Providers: []int{3, 3}, Modules: []bool{true}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ImportBundle = %+v, want %+v", got, want)
		}
		for _, v := range []registry.MirroredVersion{a, b} {
			stored, err := x.GetMirroredVersion(ctx, v.Host, v.Namespace, v.Type, v.Version)
			mustOK(t, err, "GetMirroredVersion")
			checkEqual(t, "imported version "+v.Host, stored, v, normMirrored)
		}
		p, pl, err := x.FindMirroredPackage(ctx, b.Platforms[1].SHA256)
		mustOK(t, err, "FindMirroredPackage")
		if p.Host != b.Host || pl != b.Platforms[1] {
			t.Errorf("FindMirroredPackage = %s %+v, want %s %+v", p.Host, pl, b.Host, b.Platforms[1])
		}
		stored, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "imported module version", stored, m, normModuleVersion)
		mods, n, err := x.ListModules(ctx, registry.ModuleFilter{Namespace: "acme"})
		mustOK(t, err, "ListModules")
		if n != 1 || len(mods) != 1 || mods[0].LatestVersion != "1.2.0" || mods[0].VersionCount != 1 || mods[0].Description != m.Description {
			t.Errorf("ListModules after an import = %d %+v, want the module with 1.2.0 as its latest and only version", n, mods)
		}

		// The same bundle again changes nothing.
		got, err = x.ImportBundle(ctx, []registry.MirroredVersion{a, b}, []registry.ModuleVersion{m})
		mustOK(t, err, "ImportBundle again")
		want = store.BundleImport{Providers: []int{0, 0}, Modules: []bool{false}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ImportBundle again = %+v, want %+v", got, want)
		}
		stored, err = x.GetModuleVersion(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "module version after a second import", stored, m, normModuleVersion)
	})
	t.Run("Provenance", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
		keys := []registry.SigningKey{{Namespace: "hashicorp", KeyID: "0123456789ABCDEF", ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nA\n"}}
		plain := heldVersion(terraformRegistry, "hashicorp", "aws", "5.0.0", 1)
		a := heldVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1)
		a.Provenance, a.ProvenanceKeys = envelope, keys
		_, err := x.ImportBundle(ctx, []registry.MirroredVersion{plain, a}, nil)
		mustOK(t, err, "ImportBundle with provenance")
		got, gotKeys, err := x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "MirroredProvenance")
		if string(got) != string(envelope) || len(gotKeys) != 1 || gotKeys[0].KeyID != keys[0].KeyID || gotKeys[0].ASCIIArmor != keys[0].ASCIIArmor {
			t.Errorf("MirroredProvenance = %q %+v, want %q %+v", got, gotKeys, envelope, keys)
		}
		stored, err := x.GetMirroredVersion(ctx, a.Host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		if stored.Provenance != nil || stored.ProvenanceKeys != nil {
			t.Errorf("GetMirroredVersion returned the provenance; reads leave it to MirroredProvenance")
		}
		if !stored.HasProvenance {
			t.Errorf("GetMirroredVersion of a version with provenance: HasProvenance false")
		}
		list, err := x.ListMirroredVersions(ctx, a.Host, "hashicorp", "aws")
		mustOK(t, err, "ListMirroredVersions")
		has := map[string]bool{}
		for _, v := range list {
			has[v.Version] = v.HasProvenance
		}
		if want := map[string]bool{"5.0.0": false, "5.1.0": true}; !reflect.DeepEqual(has, want) {
			t.Errorf("ListMirroredVersions: HasProvenance by version = %v, want %v", has, want)
		}
		_, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.0.0")
		wantKind(t, err, registry.NotFound, "MirroredProvenance of a version imported without one")
		_, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "9.9.9")
		wantKind(t, err, registry.NotFound, "MirroredProvenance of a missing version")

		// The same again: kept. Another envelope: Conflict, nothing
		// stored, not even the other version of the bundle.
		_, err = x.ImportBundle(ctx, []registry.MirroredVersion{a}, nil)
		mustOK(t, err, "ImportBundle with the same provenance")
		b := heldVersion(terraformRegistry, "hashicorp", "aws", "5.2.0", 1)
		other := a
		other.Provenance = []byte(`{"other":true}`)
		_, err = x.ImportBundle(ctx, []registry.MirroredVersion{b, other}, nil)
		wantKind(t, err, registry.Conflict, "ImportBundle with another provenance")
		checkNothingImported(t, x, []registry.MirroredVersion{b}, nil)
		got, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "MirroredProvenance after the conflict")
		if string(got) != string(envelope) {
			t.Errorf("the provenance changed on a refused import: %q", got)
		}
		// A version imported without provenance gains it from a later bundle.
		withProv := plain
		withProv.Provenance, withProv.ProvenanceKeys = envelope, keys
		_, err = x.ImportBundle(ctx, []registry.MirroredVersion{withProv}, nil)
		mustOK(t, err, "ImportBundle adding provenance")
		_, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.0.0")
		mustOK(t, err, "MirroredProvenance of a version that gained it")
		// Provenance without keys is invalid.
		nokeys := heldVersion(terraformRegistry, "hashicorp", "aws", "5.3.0", 1)
		nokeys.Provenance = envelope
		_, err = x.ImportBundle(ctx, []registry.MirroredVersion{nokeys}, nil)
		wantKind(t, err, registry.Invalid, "ImportBundle of provenance without keys")
	})
	t.Run("ModuleProvenance", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
		keys := []registry.SigningKey{{Namespace: "acme", KeyID: "0123456789ABCDEF", ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nA\n"}}
		m := testModuleVersion("acme", "network", "aws", "1.2.0", t0)
		m.Provenance, m.ProvenanceKeys = envelope, keys
		_, err := x.ImportBundle(ctx, nil, []registry.ModuleVersion{m})
		mustOK(t, err, "ImportBundle of a module with provenance")
		got, err := x.ModuleProvenance(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "ModuleProvenance")
		gotKeys, err := x.ModuleProvenanceKeys(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "ModuleProvenanceKeys")
		if string(got) != string(envelope) || len(gotKeys) != 1 || gotKeys[0].KeyID != keys[0].KeyID || gotKeys[0].ASCIIArmor != keys[0].ASCIIArmor {
			t.Errorf("module provenance = %q %+v", got, gotKeys)
		}
		_, err = x.ImportBundle(ctx, nil, []registry.ModuleVersion{m})
		mustOK(t, err, "ImportBundle of the same module again")
		other := m
		other.Provenance = []byte(`{"other":true}`)
		n := testModuleVersion("acme", "network", "aws", "1.3.0", t0)
		_, err = x.ImportBundle(ctx, nil, []registry.ModuleVersion{n, other})
		wantKind(t, err, registry.Conflict, "ImportBundle of a module with another provenance")
		checkNothingImported(t, x, nil, nil)
		_, err = x.GetModuleVersion(ctx, "acme", "network", "aws", "1.3.0")
		wantKind(t, err, registry.NotFound, "the other module version of a refused import")
		plain := testModuleVersion("acme", "plain", "aws", "1.0.0", t0)
		_, err = x.ImportBundle(ctx, nil, []registry.ModuleVersion{plain})
		mustOK(t, err, "ImportBundle of a module without provenance")
		_, err = x.ModuleProvenanceKeys(ctx, "acme", "plain", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenanceKeys of a module imported without provenance")
		plain.Provenance, plain.ProvenanceKeys = envelope, keys
		_, err = x.ImportBundle(ctx, nil, []registry.ModuleVersion{plain})
		wantKind(t, err, registry.Conflict, "ImportBundle adding provenance to a module stored without")
	})
	// trove store copy writes imported provenance through
	// PutMirroredVersion and CreateModuleVersion, with its keys.
	t.Run("CopiedProvenance", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
		keys := []registry.SigningKey{{Namespace: "acme", KeyID: "0123456789ABCDEF", ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nA\n"}}

		m := testModuleVersion("acme", "network", "aws", "1.2.0", t0)
		m.Provenance, m.ProvenanceKeys = envelope, keys
		mustOK(t, x.CreateModuleVersion(ctx, m), "CreateModuleVersion with provenance keys")
		gotKeys, err := x.ModuleProvenanceKeys(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "ModuleProvenanceKeys")
		if len(gotKeys) != 1 || gotKeys[0].KeyID != keys[0].KeyID || gotKeys[0].ASCIIArmor != keys[0].ASCIIArmor {
			t.Errorf("ModuleProvenanceKeys = %+v, want %+v", gotKeys, keys)
		}
		own := testModuleVersion("acme", "network", "aws", "1.3.0", t0)
		own.Provenance = envelope
		mustOK(t, x.CreateModuleVersion(ctx, own), "CreateModuleVersion with provenance, no keys")
		_, err = x.ModuleProvenanceKeys(ctx, "acme", "network", "aws", "1.3.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenanceKeys of a version published here")
		bad := testModuleVersion("acme", "network", "aws", "1.4.0", t0)
		bad.ProvenanceKeys = keys
		wantKind(t, x.CreateModuleVersion(ctx, bad), registry.Invalid, "CreateModuleVersion with keys and no provenance")
		_, err = x.GetModuleVersion(ctx, "acme", "network", "aws", "1.4.0")
		wantKind(t, err, registry.NotFound, "the refused module version")

		a := mirroredVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1, t0)
		a.Provenance, a.ProvenanceKeys = envelope, keys
		_, err = x.PutMirroredVersion(ctx, a)
		mustOK(t, err, "PutMirroredVersion with provenance")
		got, gotKeys, err := x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "MirroredProvenance")
		if string(got) != string(envelope) || len(gotKeys) != 1 || gotKeys[0].ASCIIArmor != keys[0].ASCIIArmor {
			t.Errorf("MirroredProvenance = %q %+v, want %q %+v", got, gotKeys, envelope, keys)
		}
		_, err = x.PutMirroredVersion(ctx, a)
		mustOK(t, err, "PutMirroredVersion with the same provenance again")
		other := a
		other.Provenance = []byte(`{"other":true}`)
		_, err = x.PutMirroredVersion(ctx, other)
		wantKind(t, err, registry.Conflict, "PutMirroredVersion with another provenance")
		got, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "MirroredProvenance after the conflict")
		if string(got) != string(envelope) {
			t.Errorf("the provenance changed on a refused put: %q", got)
		}
		// A version stored without provenance gains it; another release
		// of the same version does not.
		plain := mirroredVersion(terraformRegistry, "hashicorp", "aws", "5.0.0", 1, t0)
		_, err = x.PutMirroredVersion(ctx, plain)
		mustOK(t, err, "PutMirroredVersion without provenance")
		otherRelease := plain
		otherRelease.SHASumsDigest = a.SHASumsDigest
		otherRelease.Provenance, otherRelease.ProvenanceKeys = envelope, keys
		_, err = x.PutMirroredVersion(ctx, otherRelease)
		wantKind(t, err, registry.Conflict, "PutMirroredVersion adding provenance to another release")
		plain.Provenance, plain.ProvenanceKeys = envelope, keys
		_, err = x.PutMirroredVersion(ctx, plain)
		mustOK(t, err, "PutMirroredVersion adding provenance")
		_, _, err = x.MirroredProvenance(ctx, a.Host, "hashicorp", "aws", "5.0.0")
		mustOK(t, err, "MirroredProvenance of a version that gained it")
		nokeys := mirroredVersion(terraformRegistry, "hashicorp", "aws", "5.3.0", 1, t0)
		nokeys.Provenance = envelope
		_, err = x.PutMirroredVersion(ctx, nokeys)
		wantKind(t, err, registry.Invalid, "PutMirroredVersion of provenance without keys")
	})
	t.Run("CompletesAStoredVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		// The mirror fetched the version and one package of it; the bundle
		// brings the others and one platform more of the same SHA256SUMS.
		fetched := mirroredVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1, t0)
		fetched.Platforms = fetched.Platforms[:2]
		_, err := x.PutMirroredVersion(ctx, fetched)
		mustOK(t, err, "PutMirroredVersion")
		bundled := heldVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1)
		mustOK(t, x.SetMirroredPackage(ctx, terraformRegistry, "hashicorp", "aws", "5.1.0", "linux", "amd64",
			bundled.Platforms[0].Size, bundled.Platforms[0].H1), "SetMirroredPackage")
		bundled.SigningKey = testKey("hashicorp", 9) // the stored one is kept
		bundled.SHASumsSignatureDigest = digestOf("another signature")
		got, err := x.ImportBundle(ctx, []registry.MirroredVersion{bundled}, nil)
		mustOK(t, err, "ImportBundle")
		if want := (store.BundleImport{Providers: []int{2}, Modules: []bool{}}); !reflect.DeepEqual(got.Providers, want.Providers) || len(got.Modules) != 0 {
			t.Errorf("ImportBundle = %+v, want %+v", got, want)
		}
		stored, err := x.GetMirroredVersion(ctx, terraformRegistry, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		want := bundled
		want.SigningKey, want.SHASumsSignatureDigest = fetched.SigningKey, fetched.SHASumsSignatureDigest
		checkEqual(t, "completed version", stored, want, normMirrored)
	})
	t.Run("AllOrNothing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		taken := testModuleVersion("acme", "vpc", "aws", "2.0.0", t0)
		mustOK(t, x.CreateModuleVersion(ctx, taken), "CreateModuleVersion")
		providers := []registry.MirroredVersion{
			heldVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1),
			heldVersion(opentofuRegistry, "hashicorp", "aws", "5.1.0", 1),
		}
		modules := []registry.ModuleVersion{testModuleVersion("acme", "network", "aws", "1.0.0", t0)}

		// A conflict on the last item leaves nothing of the others.
		other := taken
		other.ArchiveDigest = digestOf("another archive")
		_, err := x.ImportBundle(ctx, providers, append(modules, other))
		wantKind(t, err, registry.Conflict, "ImportBundle with a module version stored with another archive")
		checkNothingImported(t, x, providers, modules)

		// So does a version equal to a stored one but for build metadata.
		build := taken
		build.Version = "2.0.0+build.1"
		_, err = x.ImportBundle(ctx, providers, append(modules, build))
		wantKind(t, err, registry.Conflict, "ImportBundle with a module version of the same precedence as a stored one")
		checkNothingImported(t, x, providers, modules)

		// And a module of a namespace that does not exist.
		lost := testModuleVersion("nowhere", "network", "aws", "1.0.0", t0)
		_, err = x.ImportBundle(ctx, providers, append(modules, lost))
		wantKind(t, err, registry.NotFound, "ImportBundle with a module of a missing namespace")
		checkNothingImported(t, x, providers, modules)

		// And a mirrored version stored with another SHA256SUMS.
		x2 := newIndex(t)
		createNamespaces(t, x2, "acme")
		fetched := heldVersion(opentofuRegistry, "hashicorp", "google", "6.0.0", 3)
		_, err = x2.PutMirroredVersion(ctx, fetched)
		mustOK(t, err, "PutMirroredVersion")
		changed := fetched
		changed.SHASumsDigest = digestOf("another SHA256SUMS")
		_, err = x2.ImportBundle(ctx, append(providers[:2:2], changed), modules)
		wantKind(t, err, registry.Conflict, "ImportBundle with a version stored with another SHA256SUMS")
		checkNothingImported(t, x2, providers, modules)

		// And a package stored with another digest, or held with another hash.
		digest := fetched
		digest.Platforms = append(digest.Platforms[:0:0], fetched.Platforms...)
		digest.Platforms[2].SHA256 = digestOf("another package")
		_, err = x2.ImportBundle(ctx, append(providers[:2:2], digest), modules)
		wantKind(t, err, registry.Conflict, "ImportBundle with a package stored with another digest")
		checkNothingImported(t, x2, providers, modules)
		mustOK(t, x2.SetMirroredPackage(ctx, fetched.Host, "hashicorp", "google", "6.0.0", "windows", "386",
			fetched.Platforms[2].Size, fetched.Platforms[2].H1), "SetMirroredPackage")
		hash := fetched
		hash.Platforms = append(hash.Platforms[:0:0], fetched.Platforms...)
		hash.Platforms[2].H1 = testH1("another hash")
		_, err = x2.ImportBundle(ctx, append(providers[:2:2], hash), modules)
		wantKind(t, err, registry.Conflict, "ImportBundle with a package held with another hash")
		checkNothingImported(t, x2, providers, modules)

		// And a mirrored version equal to a held one but for build
		// metadata, or to another of the same bundle; the held version
		// itself again is no clash.
		twin := heldVersion(opentofuRegistry, "hashicorp", "google", "6.0.0+b", 1)
		twin.SHASumsDigest = digestOf("the twin's SHA256SUMS")
		_, err = x2.ImportBundle(ctx, append(providers[:2:2], twin), modules)
		wantKind(t, err, registry.Conflict, "ImportBundle with a mirrored version of the same precedence as a held one")
		checkNothingImported(t, x2, append(providers[:2:2], twin), modules)
		pair := []registry.MirroredVersion{heldVersion(opentofuRegistry, "hashicorp", "null", "3.0.0+a", 1), heldVersion(opentofuRegistry, "hashicorp", "null", "3.0.0+b", 1)}
		pair[1].SHASumsDigest = digestOf("the second twin's SHA256SUMS")
		_, err = x2.ImportBundle(ctx, append(providers[:2:2], pair...), modules)
		wantKind(t, err, registry.Conflict, "ImportBundle with two versions of the same precedence")
		checkNothingImported(t, x2, append(providers[:2:2], pair...), modules)
		_, err = x2.ImportBundle(ctx, []registry.MirroredVersion{fetched, heldVersion(opentofuRegistry, "hashicorp", "google", "6.0.1", 1)}, nil)
		mustOK(t, err, "ImportBundle of the held version again, beside a new one")
	})
	t.Run("Invalid", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		good := heldVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1)
		modules := []registry.ModuleVersion{testModuleVersion("acme", "network", "aws", "1.0.0", t0)}
		notHeld := heldVersion(terraformRegistry, "hashicorp", "dns", "1.0.0", 1)
		notHeld.Platforms[1].H1 = ""
		none := heldVersion(terraformRegistry, "hashicorp", "tls", "1.0.0", 1)
		none.Platforms = nil
		badVersion := heldVersion(terraformRegistry, "hashicorp", "null", "1.0.0", 1)
		badVersion.Version = "v1.0.0"
		for name, bad := range map[string]registry.MirroredVersion{"a package not held": notHeld, "no platforms": none, "an invalid version": badVersion} {
			_, err := x.ImportBundle(ctx, []registry.MirroredVersion{good, bad}, modules)
			wantKind(t, err, registry.Invalid, "ImportBundle with "+name)
			checkNothingImported(t, x, []registry.MirroredVersion{good}, modules)
		}
	})
}
