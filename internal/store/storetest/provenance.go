package storetest

import (
	"bytes"
	"reflect"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testProvenance checks the provenance envelopes CreateProviderVersion
// stores with versions and ProviderProvenance reads.
func testProvenance(t *testing.T, newIndex func(*testing.T) store.Index) {
	envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
	t.Run("NoneByDefault", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		_, err := x.ProviderProvenance(ctx, "acme", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "ProviderProvenance of a version stored without one")
		_, err = x.ProviderProvenance(ctx, "acme", "cloud", "9.9.9")
		wantKind(t, err, registry.NotFound, "ProviderProvenance of a missing version")
		_, err = x.ProviderProvenance(ctx, "nobody", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "ProviderProvenance in a missing namespace")
	})
	t.Run("CreateKeepsIt", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.Provenance = envelope
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion with provenance")
		got, err := x.ProviderProvenance(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "ProviderProvenance")
		if !bytes.Equal(got, envelope) {
			t.Errorf("ProviderProvenance = %q, want %q", got, envelope)
		}
		read, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		if read.Provenance != nil {
			t.Errorf("GetProviderVersion returned the provenance (%d bytes); reads leave it to ProviderProvenance", len(read.Provenance))
		}

		// A refused create (the version exists) stores nothing.
		again := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		again.Provenance = []byte(`{"other":true}`)
		wantKind(t, x.CreateProviderVersion(ctx, again), registry.Conflict, "CreateProviderVersion of an existing version")
		got, err = x.ProviderProvenance(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "ProviderProvenance after the refused create")
		if !bytes.Equal(got, envelope) {
			t.Errorf("a refused create changed the provenance to %q", got)
		}
	})
	t.Run("ReadsMarkIt", func(t *testing.T) {
		// GetProviderVersion and ListProviderVersions say which versions
		// have an envelope (HasProvenance) without reading it.
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		want := map[string]bool{"1.0.0": true, "1.1.0": false, "2.0.0": true}
		for ver, has := range want {
			v := testVersion("acme", "cloud", ver, testKey("acme", 1), t0)
			if has {
				v.Provenance = envelope
			}
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+ver)
		}
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		got := map[string]bool{}
		for _, v := range list {
			got[v.Version] = v.HasProvenance
			if v.Provenance != nil {
				t.Errorf("ListProviderVersions returned the provenance of %s; reads leave it to ProviderProvenance", v.Version)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ListProviderVersions: HasProvenance by version = %v, want %v", got, want)
		}
		for ver, has := range want {
			v, err := x.GetProviderVersion(ctx, "acme", "cloud", ver)
			mustOK(t, err, "GetProviderVersion "+ver)
			if v.HasProvenance != has {
				t.Errorf("GetProviderVersion %s: HasProvenance %v, want %v", ver, v.HasProvenance, has)
			}
		}
	})
	t.Run("GoesWithItsVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.Provenance = envelope
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion with provenance")
		mustOK(t, x.DeleteProviderVersion(ctx, "acme", "cloud", "1.0.0"), "DeleteProviderVersion")
		_, err := x.ProviderProvenance(ctx, "acme", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "ProviderProvenance of a deleted version")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion again without provenance")
		_, err = x.ProviderProvenance(ctx, "acme", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "ProviderProvenance of a version re-created without one")
	})
	t.Run("TokenCIClaims", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		ci := registry.CIClaims{Issuer: "https://ci.example.test", Repository: "acme/widget", Ref: "refs/tags/v1.0.0",
			Workflow: "release.yml", Commit: "0123456789abcdef", RunID: "42"}
		withCI := testToken("keyless1", "acme", t0)
		withCI.CI = &ci
		mustOK(t, x.CreateToken(ctx, withCI), "CreateToken with CI claims")
		mustOK(t, x.CreateToken(ctx, testToken("plain1", "acme", t0)), "CreateToken without CI claims")
		got, ok, err := x.TokenCIClaims(ctx, "keyless1")
		mustOK(t, err, "TokenCIClaims")
		if !ok || got != ci {
			t.Errorf("TokenCIClaims = %+v, %v; want %+v", got, ok, ci)
		}
		for _, id := range []string{"plain1", "missing"} {
			_, ok, err := x.TokenCIClaims(ctx, id)
			mustOK(t, err, "TokenCIClaims "+id)
			if ok {
				t.Errorf("token %s has CI claims", id)
			}
		}
		tk, err := x.TokenByHash(ctx, withCI.Hash)
		mustOK(t, err, "TokenByHash")
		if tk.CI != nil {
			t.Error("TokenByHash returned CI claims; reads leave them to TokenCIClaims")
		}
		// A refused create (the ID is taken) stores no claims.
		again := testToken("keyless1", "acme", t0)
		again.Hash = digestOf("another secret")
		again.CI = &registry.CIClaims{Issuer: "https://evil.test"}
		if err := x.CreateToken(ctx, again); err == nil {
			t.Fatal("a second token with a taken ID was stored")
		}
		if got, _, _ := x.TokenCIClaims(ctx, "keyless1"); got != ci {
			t.Errorf("a refused create changed the claims to %+v", got)
		}
	})
}

// testModuleProvenance checks the provenance envelopes CreateModuleVersion
// stores with module versions and ModuleProvenance reads.
func testModuleProvenance(t *testing.T, newIndex func(*testing.T) store.Index) {
	envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
	t.Run("NoneByDefault", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", "1.0.0", t0)), "CreateModuleVersion")
		_, err := x.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of a version stored without one")
		_, err = x.ModuleProvenance(ctx, "acme", "network", "aws", "9.9.9")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of a missing version")
		_, err = x.ModuleProvenance(ctx, "acme", "network", "azurerm", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of another system")
		_, err = x.ModuleProvenance(ctx, "nobody", "network", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance in a missing namespace")
	})
	t.Run("CreateKeepsIt", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		v.Provenance = envelope
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion with provenance")
		got, err := x.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "ModuleProvenance")
		if !bytes.Equal(got, envelope) {
			t.Errorf("ModuleProvenance = %q, want %q", got, envelope)
		}
		read, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "GetModuleVersion")
		if read.Provenance != nil {
			t.Errorf("GetModuleVersion returned the provenance (%d bytes); reads leave it to ModuleProvenance", len(read.Provenance))
		}
		// Another module of the same name in another system has its own.
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "azurerm", "1.0.0", t0)), "CreateModuleVersion of another system")
		_, err = x.ModuleProvenance(ctx, "acme", "network", "azurerm", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of the other system's version")

		// A refused create (the version exists) stores nothing.
		again := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		again.Provenance = []byte(`{"other":true}`)
		wantKind(t, x.CreateModuleVersion(ctx, again), registry.Conflict, "CreateModuleVersion of an existing version")
		got, err = x.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "ModuleProvenance after the refused create")
		if !bytes.Equal(got, envelope) {
			t.Errorf("a refused create changed the provenance to %q", got)
		}
	})
	t.Run("GoesWithItsVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		v.Provenance = envelope
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion with provenance")
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion")
		_, err := x.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of a deleted version")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", "1.0.0", t0)), "CreateModuleVersion again without provenance")
		_, err = x.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of a version re-created without one")

		// Deleting the whole module removes its versions' envelopes too.
		v2 := testModuleVersion("acme", "network", "aws", "2.0.0", t0)
		v2.Provenance = envelope
		mustOK(t, x.CreateModuleVersion(ctx, v2), "CreateModuleVersion 2.0.0 with provenance")
		_, err = x.DeleteModule(ctx, "acme", "network", "aws")
		mustOK(t, err, "DeleteModule")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", "2.0.0", t0)), "CreateModuleVersion 2.0.0 again without provenance")
		_, err = x.ModuleProvenance(ctx, "acme", "network", "aws", "2.0.0")
		wantKind(t, err, registry.NotFound, "ModuleProvenance of a version re-created after its module was deleted")
	})
}
