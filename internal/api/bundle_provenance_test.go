package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// provenanceSource is a Trove whose namespace acme has a Trove-managed
// key, so that its provider acme/widget 1.0.0 (two platforms) has
// provenance, with the bundle of that version exported from it.
type provenanceSource struct {
	bundleSource
	managed apispec.SigningKey
}

func newProvenanceSource(t *testing.T) provenanceSource {
	t.Helper()
	ctx := context.Background()
	s := trovetest.Start(t)
	c := adminClient(t, s)
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	managed, err := c.GenerateSigningKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := c.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Protocols: []string{"5.0"}})
	var files []client.PublishFile
	for _, f := range rel.Files {
		files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
	}
	if _, err := c.PublishProvider(ctx, "acme", "widget", "1.0.0", files); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Index.ProviderProvenance(ctx, "acme", "widget", "1.0.0"); err != nil {
		t.Fatalf("the source has no provenance: %v", err)
	}
	p := provenanceSource{bundleSource: bundleSource{s: s, rel: rel, source: s.Host + "/acme/widget"}, managed: managed}
	var buf bytes.Buffer
	if _, err := c.ExportBundle(ctx, client.BundleRequest{Providers: []string{p.source + "@1.0.0"}}, &buf); err != nil {
		t.Fatal(err)
	}
	p.bundle = buf.Bytes()
	return p
}

// mirroredProvenance reads GET RouteMirrorProvenance of the version
// acme/widget 1.0.0 of src's host from s.
func mirroredProvenance(t *testing.T, s *trovetest.Server, host, token string) (int, apispec.MirroredProvenance, []byte) {
	t.Helper()
	status, raw := apiDo(t, s, "GET", "/api/v1/mirror/providers/"+host+"/acme/widget/versions/1.0.0/provenance", token, "", nil)
	var out apispec.MirroredProvenance
	if status == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("provenance answer %s: %v", raw, err)
		}
	}
	return status, out, raw
}

// TestBundleCarriesProvenance exports a provider version with provenance
// from one Trove (format 2, the envelope a file, the namespace's managed
// key listed) and imports it into another, which serves the envelope
// with the keys, and it verifies and names every package; exporting the
// mirrored version again carries the same provenance.
func TestBundleCarriesProvenance(t *testing.T) {
	ctx := context.Background()
	src := newProvenanceSource(t)
	m, entries := readBundle(t, src.bundle)
	if m.Format != apispec.BundleFormatProvenance || len(m.Providers) != 1 {
		t.Fatalf("manifest = %+v, want format %s", m, apispec.BundleFormatProvenance)
	}
	pv := m.Providers[0].Provenance
	if pv == nil || len(pv.Keys) != 1 || pv.Keys[0].KeyID != src.managed.KeyID || pv.Keys[0].ASCIIArmor != src.managed.ASCIIArmor {
		t.Fatalf("provenance of the manifest = %+v, want the managed key %s", pv, src.managed.KeyID)
	}
	stored, _ := src.s.Index.ProviderProvenance(ctx, "acme", "widget", "1.0.0")
	if i := slices.IndexFunc(entries, func(e bundleEntry) bool { return e.name == apispec.BundleBlobPrefix+pv.Envelope }); i < 0 || !bytes.Equal(entries[i].data, stored) {
		t.Fatalf("the bundle does not hold the envelope %s as a file", pv.Envelope)
	}

	dst, c := newImporter(t)
	if _, err := c.ImportBundle(ctx, bytes.NewReader(src.bundle), -1); err != nil {
		t.Fatal(err)
	}
	host := src.s.Host
	status, got, raw := mirroredProvenance(t, dst, host, "Bearer "+dst.AdminToken)
	if status != http.StatusOK || !bytes.Equal(got.Envelope, stored) || len(got.Keys) != 1 || got.Keys[0].KeyID != src.managed.KeyID {
		t.Fatalf("GET the mirrored provenance = %d %s", status, raw)
	}
	if _, err := dst.Blobs.Stat(ctx, pv.Envelope); err == nil {
		t.Errorf("the envelope was stored as a blob; the index keeps it")
	}
	key, err := signing.ParsePublicKey(got.Keys[0].ASCIIArmor)
	if err != nil {
		t.Fatal(err)
	}
	v, err := provenance.Verify(ctx, got.Envelope, []registry.SigningKey{key}, time.Time{})
	if err != nil {
		t.Fatalf("the served provenance does not verify with the served key: %v", err)
	}
	for _, platform := range []string{"linux_amd64", "darwin_arm64"} {
		zip := src.rel.ZipName(platform)
		if err := v.Statement.CheckArchive(zip, src.rel.SHA256(zip)); err != nil {
			t.Errorf("served provenance: %v", err)
		}
	}
	if status, _, _ := mirroredProvenance(t, dst, host, "Bearer trove_nosuchtoken"); status != http.StatusUnauthorized {
		t.Errorf("GET the mirrored provenance with an invalid token = %d, want 401", status)
	}
	status, _, raw = apiDo2(t, dst, "/api/v1/mirror/providers/"+host+"/acme/widget/versions/2.0.0/provenance")
	if status != http.StatusNotFound {
		t.Errorf("GET the provenance of a version not mirrored = %d %s, want 404", status, raw)
	}

	// Imported again: nothing changes.
	if _, err := c.ImportBundle(ctx, bytes.NewReader(src.bundle), -1); err != nil {
		t.Errorf("second import: %v", err)
	}
	// The importer exports the mirrored version with the same provenance.
	var again bytes.Buffer
	if _, err := c.ExportBundle(ctx, client.BundleRequest{Providers: []string{src.source + "@1.0.0"}}, &again); err != nil {
		t.Fatal(err)
	}
	m2, entries2 := readBundle(t, again.Bytes())
	if m2.Format != apispec.BundleFormatProvenance || m2.Providers[0].Provenance == nil || m2.Providers[0].Provenance.Envelope != pv.Envelope ||
		!slices.ContainsFunc(entries2, func(e bundleEntry) bool { return e.name == apispec.BundleBlobPrefix+pv.Envelope }) {
		t.Errorf("re-export of the mirrored version: %+v", m2.Providers[0].Provenance)
	}
	third, c3 := newImporter(t)
	if _, err := c3.ImportBundle(ctx, bytes.NewReader(again.Bytes()), -1); err != nil {
		t.Fatalf("import of the re-exported bundle: %v", err)
	}
	if status, got3, raw := mirroredProvenance(t, third, host, "Bearer "+third.AdminToken); status != http.StatusOK || !bytes.Equal(got3.Envelope, stored) {
		t.Errorf("provenance after a second hop = %d %s", status, raw)
	}
}

// apiDo2 is a GET with the server's admin token that also answers the
// JSON error messages.
func apiDo2(t *testing.T, s *trovetest.Server, path string) (int, string, []byte) {
	t.Helper()
	status, raw := apiDo(t, s, "GET", path, "Bearer "+s.AdminToken, "", nil)
	return status, string(raw), raw
}

// signedBy returns an envelope of statement st signed by key.
func signedBy(t *testing.T, key *signingtest.Key, st provenance.Statement) []byte {
	t.Helper()
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := provenance.Sign(context.Background(), st, func(_ context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return pub, key.Sign(data), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestBundleProvenanceRefused: a bundle whose provenance does not hold
// is refused with 400 naming what failed, and nothing of it is stored; a
// version stored with other provenance is a conflict.
func TestBundleProvenanceRefused(t *testing.T) {
	ctx := context.Background()
	src := newProvenanceSource(t)
	dst, c := newImporter(t)
	other := signingtest.NewKey(t, "other")
	zips := map[string]string{}
	for _, platform := range []string{"linux_amd64", "darwin_arm64"} {
		zips[src.rel.ZipName(platform)] = src.rel.SHA256(src.rel.ZipName(platform))
	}
	statement := func(archives map[string]string) provenance.Statement {
		return provenance.NewPublish(provenance.Release{Namespace: "acme", Type: "widget", Version: "1.0.0", Archives: archives}, provenance.Identity{TokenID: "tok"})
	}
	otherKeys := []apispec.BundleKey{{KeyID: other.KeyID, ASCIIArmor: other.ArmoredPublic}}
	// withEnvelope replaces the envelope file (and its digest) and, if
	// keys is not nil, the keys.
	withEnvelope := func(env []byte, keys []apispec.BundleKey) func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
		return func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			pv := m.Providers[0].Provenance
			e = slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+pv.Envelope })
			pv.Envelope = releasetest.Digest(env)
			if keys != nil {
				pv.Keys = keys
			}
			return append(e, bundleEntry{apispec.BundleBlobPrefix + pv.Envelope, env})
		}
	}
	envelopeOf := func(e []bundleEntry, m apispec.BundleManifest) []byte {
		i := slices.IndexFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+m.Providers[0].Provenance.Envelope })
		return slices.Clone(e[i].data)
	}
	missing := map[string]string{src.rel.ZipName("linux_amd64"): zips[src.rel.ZipName("linux_amd64")]}
	wrong := map[string]string{}
	for name := range zips {
		wrong[name] = strings.Repeat("ab", 32)
	}
	for _, c2 := range []struct {
		name, want string
		tamper     func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry
	}{
		{"tampered envelope", "does not verify", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			var env map[string]any
			json.Unmarshal(envelopeOf(e, *m), &env)
			env["payload"] = "eyJfdHlwZSI6IngifQ==" // {"_type":"x"}, not what was signed
			data, _ := json.Marshal(env)
			return withEnvelope(data, nil)(m, e)
		}},
		{"envelope not JSON", "not a DSSE envelope", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return withEnvelope([]byte("not json"), nil)(m, e)
		}},
		{"signed by a key not in the bundle", "does not verify", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return withEnvelope(signedBy(t, other, statement(zips)), nil)(m, e)
		}},
		{"keys of another signer", "does not verify", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Provenance.Keys = otherKeys
			return e
		}},
		{"subject missing", "names no archive", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return withEnvelope(signedBy(t, other, statement(missing)), otherKeys)(m, e)
		}},
		{"subject with a wrong digest", "the provenance records", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return withEnvelope(signedBy(t, other, statement(wrong)), otherKeys)(m, e)
		}},
		{"statement of another version", `version "1.0.1", not version 1.0.0`, func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			st := provenance.NewPublish(provenance.Release{Namespace: "acme", Type: "widget", Version: "1.0.1", Archives: zips}, provenance.Identity{TokenID: "tok"})
			return withEnvelope(signedBy(t, other, st), otherKeys)(m, e)
		}},
		{"statement of another provider", "not acme/widget", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			st := provenance.NewPublish(provenance.Release{Namespace: "acme", Type: "gadget", Version: "1.0.0", Archives: zips}, provenance.Identity{TokenID: "tok"})
			return withEnvelope(signedBy(t, other, st), otherKeys)(m, e)
		}},
		{"key listed under another ID", "is the key", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Provenance.Keys[0].KeyID = other.KeyID
			return e
		}},
		{"key not a key", "provenance", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Provenance.Keys[0].ASCIIArmor = "not a key"
			return e
		}},
		{"no keys", "1 to", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Provenance.Keys = nil
			return e
		}},
		{"envelope file missing", "lacks the file", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+m.Providers[0].Provenance.Envelope })
		}},
		{"envelope digest invalid", "invalid digest", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Provenance.Envelope = "../../etc/passwd"
			return e
		}},
		{"unknown format 3", "trove-bundle/3", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Format = "trove-bundle/3"
			return e
		}},
		{"format 1 with provenance", "cannot", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Format = apispec.BundleFormat
			return e
		}},
		{"format 2 without provenance", "no entry carries provenance", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			e = slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+m.Providers[0].Provenance.Envelope })
			m.Providers[0].Provenance = nil
			return e
		}},
	} {
		t.Run(c2.name, func(t *testing.T) {
			m, entries := readBundle(t, src.bundle)
			entries = c2.tamper(&m, entries)
			b := writeBundle(t, m, entries)
			_, err := c.ImportBundle(ctx, bytes.NewReader(b), int64(len(b)))
			if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), c2.want) {
				t.Errorf("import = %v (status %d), want 400 saying %q", err, client.StatusCode(err), c2.want)
			}
			checkNothingImported(t, dst, src.bundleSource)
			if _, _, err := dst.Index.MirroredProvenance(ctx, src.s.Host, "acme", "widget", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("MirroredProvenance after a refused import: %v", err)
			}
		})
	}

	// Imported once; then a bundle of the same version with another
	// (valid) envelope is a conflict that stores nothing.
	if _, err := c.ImportBundle(ctx, bytes.NewReader(src.bundle), -1); err != nil {
		t.Fatal(err)
	}
	before, _, _ := dst.Index.MirroredProvenance(ctx, src.s.Host, "acme", "widget", "1.0.0")
	m, entries := readBundle(t, src.bundle)
	entries = withEnvelope(signedBy(t, other, statement(zips)), otherKeys)(&m, entries)
	b := writeBundle(t, m, entries)
	if _, err := c.ImportBundle(ctx, bytes.NewReader(b), -1); client.StatusCode(err) != http.StatusConflict || !strings.Contains(err.Error(), "another provenance") {
		t.Errorf("import with another envelope = %v, want 409", err)
	}
	if after, _, err := dst.Index.MirroredProvenance(ctx, src.s.Host, "acme", "widget", "1.0.0"); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the stored provenance changed on a refused import: %v", err)
	}
}

// moduleProvenanceSource is a Trove whose namespace acme has a managed
// key and the module acme/network/aws 1.0.0 with provenance signed by it:
// a keyless build of ci.
func moduleProvenanceSource(t *testing.T, ci provenance.CI) (*trovetest.Server, []byte, []byte) {
	t.Helper()
	ctx := context.Background()
	s := trovetest.Start(t)
	c := adminClient(t, s)
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GenerateSigningKey(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	archive := moduleArchive(t, networkModule)
	digest := s.Blob(t, string(archive))
	st := provenance.NewKeyless(provenance.Release{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		Archives: map[string]string{"network-aws-1.0.0.tar.gz": digest}}, ci)
	managed := signing.NewManaged(signing.ManagedOptions{Keys: s.Index, Secret: s.SigningSecret})
	envelope, _, err := provenance.Sign(ctx, st, func(ctx context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return managed.Sign(ctx, "acme", data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Index.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		ArchiveDigest: digest, ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)), PublishedAt: time.Now(), Provenance: envelope}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := c.ExportBundle(ctx, client.BundleRequest{Modules: []string{"acme/network/aws@1.0.0"}}, &buf); err != nil {
		t.Fatal(err)
	}
	return s, envelope, buf.Bytes()
}

// TestBundleModuleProvenance: a module version's provenance travels in
// the bundle with its namespace's managed key, and the importer stores it
// with that key. A namespace with a provenance policy does not trust the
// keys a bundle carries: it admits a bundle's module only with provenance
// that verifies with one of the policy's import keys, of a build the
// policy admits; else the whole import is refused (403, with the reason
// and what to do) and nothing is stored. A tampered module envelope, or
// one about another version or module, is refused (400).
func TestBundleModuleProvenance(t *testing.T) {
	ctx := context.Background()
	ci := provenance.CI{Issuer: "https://ci.example", Repository: "acme/infra", Ref: "refs/tags/v1.0.0"}
	src, envelope, bundle := moduleProvenanceSource(t, ci)
	m, _ := readBundle(t, bundle)
	if m.Format != apispec.BundleFormatProvenance || len(m.Modules) != 1 || m.Modules[0].Provenance == nil || len(m.Modules[0].Provenance.Keys) != 1 {
		t.Fatalf("manifest = %+v", m)
	}
	managed, _, err := src.Index.ManagedSigningKey(ctx, "acme")
	if err != nil || m.Modules[0].Provenance.Keys[0].KeyID != managed.KeyID {
		t.Fatalf("the bundle's module keys %+v are not the managed key (%v)", m.Modules[0].Provenance.Keys, err)
	}
	exporter, err := signing.ParsePublicKey(managed.ASCIIArmor)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(s *trovetest.Server) bool {
		_, err := s.Index.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		return err == nil
	}
	setPolicy := func(s *trovetest.Server, repo string, keys ...registry.SigningKey) {
		if err := s.Index.PutProvenancePolicy(ctx, registry.ProvenancePolicy{Namespace: "acme", Repository: repo, Refs: "refs/tags/v*", ImportKeys: keys}); err != nil {
			t.Fatal(err)
		}
	}

	// Without a policy: imported with its provenance and keys.
	dst, c := newImporter(t)
	if _, err := c.ImportBundle(ctx, bytes.NewReader(bundle), -1); err != nil {
		t.Fatal(err)
	}
	got, err := dst.Index.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil || !bytes.Equal(got, envelope) {
		t.Fatalf("ModuleProvenance after the import = %v", err)
	}
	keys, err := dst.Index.ModuleProvenanceKeys(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil || len(keys) != 1 || keys[0].KeyID != managed.KeyID {
		t.Fatalf("ModuleProvenanceKeys after the import = %+v, %v", keys, err)
	}
	// The API answers it with the keys the bundle carried (the
	// exporting Trove's), which verify it; the client reads them.
	answer, err := c.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil || !answer.Imported || !bytes.Equal(answer.Envelope, envelope) || len(answer.Keys) != 1 || answer.Keys[0].KeyID != managed.KeyID {
		t.Fatalf("client.ModuleProvenance of the imported version = %+v, %v", answer, err)
	}
	if _, err := provenance.Verify(ctx, answer.Envelope, []registry.SigningKey{{KeyID: answer.Keys[0].KeyID, ASCIIArmor: answer.Keys[0].ASCIIArmor}}, time.Time{}); err != nil {
		t.Errorf("the imported version's provenance does not verify with the keys the API answers: %v", err)
	}
	// Exported again from the importer, it carries the stored keys.
	var again bytes.Buffer
	if _, err := c.ExportBundle(ctx, client.BundleRequest{Modules: []string{"acme/network/aws@1.0.0"}}, &again); err != nil {
		t.Fatal(err)
	}
	if m2, _ := readBundle(t, again.Bytes()); m2.Modules[0].Provenance == nil || m2.Modules[0].Provenance.Keys[0].KeyID != managed.KeyID {
		t.Errorf("re-export of the imported module: %+v", m2.Modules[0].Provenance)
	}

	// A policy the build satisfies, with the exporting Trove's key as
	// import key, admits it and keeps that key with it.
	ok, okc := newImporter(t)
	setPolicy(ok, "acme/infra", exporter)
	if _, err := okc.ImportBundle(ctx, bytes.NewReader(bundle), -1); err != nil || !stored(ok) {
		t.Fatalf("import under a policy the build satisfies, with the exporter's import key: %v", err)
	}
	if keys, err := ok.Index.ModuleProvenanceKeys(ctx, "acme", "network", "aws", "1.0.0"); err != nil || len(keys) != 1 || keys[0].KeyID != exporter.KeyID {
		t.Errorf("keys kept under a policy = %+v, %v", keys, err)
	}

	// A forger makes a key of their own and signs a statement of the
	// same archive naming the policy's repository and ref: the bundle
	// carries the forger's key, which a policy does not trust.
	forger := signingtest.NewKey(t, "forger")
	forgerKeys := []apispec.BundleKey{{KeyID: forger.KeyID, ASCIIArmor: forger.ArmoredPublic}}
	archive := map[string]string{"network-aws-1.0.0.tar.gz": m.Modules[0].Archive}
	moduleStatement := func(version string, c provenance.CI) provenance.Statement {
		return provenance.NewKeyless(provenance.Release{Namespace: "acme", Name: "network", System: "aws", Version: version, Archives: archive}, c)
	}
	// withModuleEnvelope makes a bundle whose module carries env and keys.
	withModuleEnvelope := func(env []byte, keys []apispec.BundleKey) []byte {
		m4, e4 := readBundle(t, bundle)
		pv := m4.Modules[0].Provenance
		e4 = slices.DeleteFunc(e4, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+pv.Envelope })
		pv.Envelope, pv.Keys = releasetest.Digest(env), keys
		return writeBundle(t, m4, append(e4, bundleEntry{apispec.BundleBlobPrefix + pv.Envelope, env}))
	}
	forged := withModuleEnvelope(signedBy(t, forger, moduleStatement("1.0.0", ci)), forgerKeys)
	other := signingtest.NewKey(t, "other")
	otherKey, err := signing.ParsePublicKey(other.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	m3, e3 := readBundle(t, bundle)
	e3 = slices.DeleteFunc(e3, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+m3.Modules[0].Provenance.Envelope })
	m3.Modules[0].Provenance, m3.Format = nil, apispec.BundleFormat
	plain := writeBundle(t, m3, e3)

	for _, c2 := range []struct {
		name       string
		repo       string // the policy's repository; "" for no policy
		importKeys []registry.SigningKey
		bundle     []byte
		status     int
		want       []string
	}{
		{"forged key under a policy", "acme/infra", []registry.SigningKey{exporter}, forged, http.StatusForbidden,
			[]string{"does not verify with the import keys", "not trusted"}},
		{"the exporter's key not in the policy", "acme/infra", []registry.SigningKey{otherKey}, bundle, http.StatusForbidden,
			[]string{"does not verify with the import keys"}},
		{"a policy without import keys", "acme/infra", nil, bundle, http.StatusForbidden,
			[]string{"without import keys", "--import-key"}},
		{"a policy without import keys, forged", "acme/infra", nil, forged, http.StatusForbidden,
			[]string{"without import keys"}},
		{"a policy of another repository", "acme/other", []registry.SigningKey{exporter}, bundle, http.StatusForbidden,
			[]string{"acme/infra", "provenance policy"}},
		{"no provenance under a policy", "acme/infra", []registry.SigningKey{exporter}, plain, http.StatusForbidden,
			[]string{"without provenance"}},
		{"a statement of another version", "", nil,
			withModuleEnvelope(signedBy(t, forger, moduleStatement("2.0.0", ci)), forgerKeys), http.StatusBadRequest,
			[]string{`version "2.0.0", not version 1.0.0`}},
		{"a statement of another module", "", nil,
			withModuleEnvelope(signedBy(t, forger, provenance.NewKeyless(provenance.Release{Namespace: "acme", Name: "other", System: "aws", Version: "1.0.0", Archives: archive}, ci)), forgerKeys),
			http.StatusBadRequest, []string{"not acme/network/aws"}},
		{"a provider's statement", "", nil,
			withModuleEnvelope(signedBy(t, forger, provenance.NewKeyless(provenance.Release{Namespace: "acme", Type: "network", Version: "1.0.0", Archives: archive}, ci)), forgerKeys),
			http.StatusBadRequest, []string{"is about provider acme/network"}},
		{"a statement of another version, under a policy", "acme/infra", []registry.SigningKey{forgerKeyOf(t, forger)},
			withModuleEnvelope(signedBy(t, forger, moduleStatement("2.0.0", ci)), forgerKeys), http.StatusBadRequest,
			[]string{"not version 1.0.0"}},
	} {
		t.Run(c2.name, func(t *testing.T) {
			s, sc := newImporter(t)
			if c2.repo != "" {
				setPolicy(s, c2.repo, c2.importKeys...)
			}
			_, err := sc.ImportBundle(ctx, bytes.NewReader(c2.bundle), -1)
			if client.StatusCode(err) != c2.status {
				t.Fatalf("import = %v (status %d), want %d", err, client.StatusCode(err), c2.status)
			}
			for _, w := range c2.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("import = %v, want it to say %q", err, w)
				}
			}
			if stored(s) {
				t.Errorf("a refused import stored the module")
			}
			if _, err := s.Index.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("a refused import stored provenance: %v", err)
			}
		})
	}

	// Without a policy, the forged bundle is what it was before policies
	// knew import keys: its own keys verify it (the importer vouches for
	// nothing more than the bundle says).
	free, freec := newImporter(t)
	if _, err := freec.ImportBundle(ctx, bytes.NewReader(forged), -1); err != nil || !stored(free) {
		t.Errorf("the forged bundle without a policy: %v", err)
	}

	// A tampered module envelope.
	t.Run("tampered", func(t *testing.T) {
		bad, badc := newImporter(t)
		m4, e4 := readBundle(t, bundle)
		pv := m4.Modules[0].Provenance
		i := slices.IndexFunc(e4, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+pv.Envelope })
		var env map[string]any
		json.Unmarshal(e4[i].data, &env)
		env["payload"] = "eyJfdHlwZSI6IngifQ=="
		data, _ := json.Marshal(env)
		pv.Envelope = releasetest.Digest(data)
		e4[i] = bundleEntry{apispec.BundleBlobPrefix + pv.Envelope, data}
		b := writeBundle(t, m4, e4)
		if _, err := badc.ImportBundle(ctx, bytes.NewReader(b), -1); client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "does not verify") || stored(bad) {
			t.Errorf("import = %v, want 400 saying it does not verify, and nothing stored", err)
		}
	})

	// The manifest names a module envelope the tar lacks: 400 naming it.
	t.Run("envelope file missing", func(t *testing.T) {
		bad, badc := newImporter(t)
		m5, e5 := readBundle(t, bundle)
		e5 = slices.DeleteFunc(e5, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+m5.Modules[0].Provenance.Envelope })
		b := writeBundle(t, m5, e5)
		_, err := badc.ImportBundle(ctx, bytes.NewReader(b), -1)
		if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "lacks the file") ||
			!strings.Contains(err.Error(), "the provenance of module acme/network/aws 1.0.0") || stored(bad) {
			t.Errorf("import without the module's envelope = %v, want 400 naming it, nothing stored", err)
		}
	})
}

// forgerKeyOf parses a test key's public half.
func forgerKeyOf(t *testing.T, k *signingtest.Key) registry.SigningKey {
	t.Helper()
	pub, err := signing.ParsePublicKey(k.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
