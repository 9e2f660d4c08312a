package web_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestModulePageShowsProvenance: a module version published with a token
// into a namespace with a managed key shows its verified provenance (the
// publisher's token, the managed key, the API address); a version whose
// stored envelope does not verify says so with the reason; a version
// without provenance shows no such section.
func TestModulePageShowsProvenance(t *testing.T) {
	e, keyID, v := provenanceEnv(t)
	ctx := t.Context()
	good, err := e.srv.Index.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatalf("the token publish stored no provenance: %v", err)
	}
	for version, env := range map[string][]byte{
		"1.1.0": bytes.Replace(good, []byte(`"payload":"`), []byte(`"payload":"eyJ`), 1), // tampered
		"1.2.0": nil,                                                                     // none
	} {
		v.Version, v.Provenance, v.PublishedAt = version, env, time.Now()
		if err := e.srv.Index.CreateModuleVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	checkPages(t, e.browser(t), map[string]pageWant{
		"/modules/acme/network/aws/1.0.0": {want: []string{`id="provenance-h"`, "Published through Trove", "with token <code>", "signed by key <code>" + keyID,
			"/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0/provenance"}, not: []string{"does not verify"}},
		"/modules/acme/network/aws/1.1.0": {want: []string{`id="provenance-h"`, "The provenance stored with this version does not verify"}, not: []string{"Published through Trove"}},
		"/modules/acme/network/aws/1.2.0": {not: []string{`id="provenance-h"`}},
	})
}

// provenanceEnv starts Trove with a managed signing key for namespace
// acme (its ID returned) and module acme/network/aws 1.0.0 published with
// a token, so with provenance signed by that key (the stored version
// returned).
func provenanceEnv(t *testing.T) (*env, string, registry.ModuleVersion) {
	t.Helper()
	e := start(t)
	key, err := e.admin.GenerateSigningKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	v, err := e.srv.Index.GetModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	return e, key.KeyID, v
}

// pageWant is what a page must show (want) and must not (not).
type pageWant struct{ want, not []string }

// checkPages gets each page with b: it must be served (200) and show
// what its pageWant says.
func checkPages(t *testing.T, b *browser, pages map[string]pageWant) {
	t.Helper()
	for path, c := range pages {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		for _, w := range c.want {
			if !strings.Contains(p.body, w) {
				t.Errorf("GET %s lacks %q", path, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(p.body, w) {
				t.Errorf("GET %s has %q", path, w)
			}
		}
	}
}

// TestPagesShowProvenanceCarriedByBundle: a module version and a mirrored
// provider version an air-gap bundle brought show their provenance as
// signed by the exporting Trove and carried by the bundle, verified with
// the keys it carried (not the namespace's); a mirrored version's
// provenance that does not verify says so; the mirror's page marks the
// versions with provenance and shows the one chosen with ?version=, and a
// version it does not hold is not found.
func TestPagesShowProvenanceCarriedByBundle(t *testing.T) {
	e, _, v := provenanceEnv(t)
	ctx := t.Context()
	exporter := signingtest.NewKey(t, "acme")
	pub, err := signing.ParsePublicKey(exporter.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	keys := []registry.SigningKey{{Namespace: "acme", KeyID: pub.KeyID, ASCIIArmor: exporter.ArmoredPublic}}
	sign := func(st provenance.Statement) []byte {
		env, _, err := provenance.Sign(ctx, st, func(_ context.Context, data []byte) (registry.SigningKey, []byte, error) {
			return pub, exporter.Sign(data), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	v.Version, v.PublishedAt = "2.0.0", time.Now()
	v.Provenance = sign(provenance.NewPublish(provenance.Release{Namespace: "acme", Name: "network", System: "aws", Version: "2.0.0",
		Archives: map[string]string{"network-aws-2.0.0.tar.gz": v.ArchiveDigest}, PublishedAt: v.PublishedAt},
		provenance.Identity{User: "exporter-alice", TokenID: "tok-export"}))
	v.ProvenanceKeys = keys
	if err := e.srv.Index.CreateModuleVersion(ctx, v); err != nil {
		t.Fatal(err)
	}

	const host = "upstream.example"
	mirrored := func(version string, prov []byte) {
		t.Helper()
		zip := "terraform-provider-widget_" + version + "_linux_amd64.zip"
		mv := registry.MirroredVersion{Host: host, ProviderVersion: registry.ProviderVersion{
			Namespace: "acme", Type: "widget", Version: version, Protocols: []string{"5.0"},
			SHASumsDigest: e.srv.Blob(t, "sums "+version), SHASumsSignatureDigest: e.srv.Blob(t, "sig "+version), SigningKey: pub,
			Platforms:   []registry.Platform{{OS: "linux", Arch: "amd64", Filename: zip, SHA256: e.srv.Blob(t, "zip "+version)}},
			PublishedAt: time.Now()}}
		if prov != nil {
			if string(prov) == "sign" {
				prov = sign(provenance.NewPublish(provenance.Release{Namespace: "acme", Type: "widget", Version: version,
					Archives: map[string]string{zip: mv.Platforms[0].SHA256}, PublishedAt: mv.PublishedAt}, provenance.Identity{TokenID: "tok-up"}))
			}
			mv.Provenance, mv.ProvenanceKeys = prov, keys
		}
		if _, err := e.srv.Index.PutMirroredVersion(ctx, mv); err != nil {
			t.Fatal(err)
		}
	}
	mirrored("1.0.0", nil)
	mirrored("1.1.0", []byte("sign"))
	mirrored("1.2.0", []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"x","sig":"c2ln"}]}`))
	mirrored("1.3.0", nil)

	b := e.browser(t)
	b.signIn("bob", password)
	mirror := "/mirror/" + host + "/acme/widget"
	checkPages(t, b, map[string]pageWant{
		"/modules/acme/network/aws/2.0.0": {want: []string{`id="provenance-h"`, "Published through the exporting Trove", "<code>exporter-alice</code>",
			"signed by the exporting Trove, with key <code>" + pub.KeyID, "carried here by an air-gap bundle"}, not: []string{"of this namespace", "does not verify"}},
		"/modules/acme/network/aws/1.0.0": {want: []string{"of this namespace"}, not: []string{"exporting Trove"}},
		// The newest version with provenance is 1.2.0, whose does not verify.
		mirror: {want: []string{"Provenance of 1.2.0", "does not verify with the keys the air-gap bundle carried",
			`href="?version=1.1.0#provenance-h"`, `href="?version=1.2.0#provenance-h"`,
			"/api/v1/mirror/providers/" + host + "/acme/widget/versions/1.2.0/provenance"}, not: []string{`href="?version=1.0.0`, `href="?version=1.3.0`}},
		mirror + "?version=1.1.0": {want: []string{"Provenance of 1.1.0", "Published through the exporting Trove with token <code>tok-up</code>",
			"signed by the exporting Trove, with key <code>" + pub.KeyID}, not: []string{"does not verify"}},
		mirror + "?version=1.0.0": {not: []string{`id="provenance-h"`}},
	})
	for _, q := range []string{"9.9.9", "1.0", "<script>", "1.1.0%00", strings.Repeat("1", 300)} {
		if p := b.get(mirror + "?version=" + url.QueryEscape(q)); p.status != 404 {
			t.Errorf("GET %s?version=%q: %d, want 404", mirror, q, p.status)
		}
	}
}
