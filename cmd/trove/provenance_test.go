package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestKeylessPublishWritesProvenance publishes from the test CI issuer
// with the real trove binary into a namespace with a managed key: the
// provenance the API serves is a DSSE envelope the library's verifier
// accepts with the managed key, its statement names the archive with its
// digest and the token's claims, and a tampered copy is refused.
func TestKeylessPublishWritesProvenance(t *testing.T) {
	s, iss, key := keylessEnv(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	if r := runTrove(t, admin, "", "key", "generate", "acme"); r.code != exitOK {
		t.Fatalf("trove key generate: exit %d\n%s", r.code, r.stderr)
	}
	env := ciEnv(s, iss, t.TempDir())
	dist := writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64")
	if r := runTrove(t, env, "", "publish", "--namespace", "acme", dist); r.code != exitOK {
		t.Fatalf("keyless provider publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A publish with the admin's token names the token instead.
	if r := runTrove(t, admin, "", "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.1.0", "linux_amd64")); r.code != exitOK {
		t.Fatalf("token provider publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	api, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := api.ListSigningKeys(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var managed []registry.SigningKey
	var managedArmor string
	for _, k := range keys {
		if k.Fingerprint != key.Fingerprint {
			managedArmor = k.ASCIIArmor
			pub, err := signing.ParsePublicKey(k.ASCIIArmor)
			if err != nil {
				t.Fatal(err)
			}
			managed = append(managed, pub)
		}
	}
	if len(managed) != 1 {
		t.Fatalf("want one managed key besides the publisher's, got %d keys", len(keys))
	}
	v, err := api.GetProviderVersion(t.Context(), "acme", "foo", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}

	envelope := getProvenance(t, s, "acme", "foo", "1.0.0")
	// The standard DSSE verifier, with the managed key.
	var e dsse.Envelope
	if err := json.Unmarshal(envelope, &e); err != nil {
		t.Fatal(err)
	}
	ev, err := dsse.NewEnvelopeVerifier(provenance.Verifier{Key: managed[0]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Verify(t.Context(), &e); err != nil {
		t.Fatalf("the DSSE library refuses the served envelope: %v", err)
	}
	got, err := provenance.Verify(t.Context(), envelope, managed, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	st := got.Statement
	if st.Predicate.RunDetails.Builder.ID != iss.URL || st.Predicate.BuildDefinition.BuildType != provenance.BuildTypeKeyless {
		t.Errorf("builder %q, build type %q; want the issuer %s and a keyless build", st.Predicate.RunDetails.Builder.ID, st.Predicate.BuildDefinition.BuildType, iss.URL)
	}
	ext := st.Predicate.BuildDefinition.ExternalParameters
	if ext["repository"] != "acme/infra" || ext["ref"] != "refs/tags/v1.0.0" ||
		ext["workflow"] != "acme/infra/.github/workflows/release.yml@refs/tags/v1.0.0" || st.Predicate.RunDetails.Metadata.InvocationID != "1234567890" {
		t.Errorf("the statement does not carry the token's claims: %+v, run %q", ext, st.Predicate.RunDetails.Metadata.InvocationID)
	}
	if len(v.Platforms) != 1 || len(st.Subject) != 1 || st.CheckArchive(v.Platforms[0].Filename, v.Platforms[0].SHASum) != nil {
		t.Errorf("subjects %+v, platforms %+v", st.Subject, v.Platforms)
	}

	// A tampered statement is refused by both verifiers.
	tampered := bytes.Replace(envelope, []byte(`"payload":"`), []byte(`"payload":"eyJ`), 1)
	if _, err := provenance.Verify(t.Context(), tampered, managed, time.Time{}); err == nil {
		t.Error("a tampered envelope verified")
	}

	// trove verify, offline, with the files.
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zip := filepath.Join(dist, "terraform-provider-foo_1.0.0_linux_amd64.zip")
	args := func(archive, prov string) []string {
		return []string{"verify", archive, "--sums", filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS"),
			"--sig", filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS.sig"),
			"--key", write("publisher.asc", []byte(key.ArmoredPublic)), "--key", write("managed.asc", []byte(managedArmor)), "--provenance", prov}
	}
	good := write("provenance.json", envelope)
	r := runTrove(t, nil, "", args(zip, good)...)
	if r.code != exitOK || strings.Count(r.stdout, "OK ") != 4 || !strings.Contains(r.stdout, "built by "+iss.URL+" acme/infra") {
		t.Fatalf("trove verify of the published archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	zipData, err := os.ReadFile(zip)
	if err != nil {
		t.Fatal(err)
	}
	changed := append(append([]byte(nil), zipData...), 0)
	hostile := map[string]struct {
		archive, prov, want string
	}{
		"tampered provenance": {zip, write("tampered.json", tampered), "does not verify"},
		"provenance not JSON": {zip, write("bad.json", []byte("{not json")), "not a DSSE envelope"},
		"huge provenance":     {zip, write("huge.json", bytes.Repeat([]byte(" "), provenance.MaxEnvelopeBytes+10)), "larger than"},
		"changed archive":     {write("terraform-provider-foo_1.0.0_linux_amd64.zip", changed), good, "but the provenance records"},
		"unlisted archive":    {write("terraform-provider-foo_1.0.0_windows_amd64.zip", zipData), good, "not listed in a SHA256SUMS"},
		"another version's":   {zip, write("other.json", getProvenance(t, s, "acme", "foo", "1.1.0")), "is no archive of provider acme/foo 1.1.0"},
	}
	for name, c := range hostile {
		r := runTrove(t, nil, "", args(c.archive, c.prov)...)
		if r.code != exitError || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("trove verify, %s: exit %d, want a failure saying %q\n%s%s", name, r.code, c.want, r.stdout, r.stderr)
		}
	}
	// SHA256SUMS signed by none of the --key files: the signer is named as
	// such, with no advice to add a key to a namespace.
	stranger := signingtest.NewKey(t, "stranger")
	wrongKey := []string{"verify", zip, "--sums", filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS"),
		"--sig", filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS.sig"), "--key", write("stranger.asc", []byte(stranger.ArmoredPublic))}
	if r := runTrove(t, nil, "", wrongKey...); r.code != exitError || !strings.Contains(r.stdout, "which none of the --key files holds") ||
		strings.Contains(r.stdout, "trove key add") {
		t.Errorf("trove verify with another key: exit %d, want the signer named as none of the --key files'\n%s%s", r.code, r.stdout, r.stderr)
	}

	other, err := provenance.Verify(t.Context(), getProvenance(t, s, "acme", "foo", "1.1.0"), managed, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if p := other.Statement.Predicate; p.BuildDefinition.BuildType != provenance.BuildTypePublish || p.BuildDefinition.ExternalParameters["token"] == "" ||
		p.RunDetails.Builder.ID != provenance.TroveBuilderID {
		t.Errorf("the statement of a token publish: %+v", p)
	}

	// The version pages say who built each version, checked against the
	// namespace's keys.
	if r := runTrove(t, admin, "", "namespace", "update", "acme", "--visibility", "public"); r.code != exitOK {
		t.Fatalf("namespace update: exit %d\n%s", r.code, r.stderr)
	}
	page := func(path string) string {
		t.Helper()
		resp, err := webClient(t, s).Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return string(body)
	}
	// OCI: the provenance is a referrer of the version's image index, its
	// one layer the envelope the API serves.
	hc := webClient(t, s)
	resp, err := hc.Get(s.URL + "/v2/acme/foo/manifests/1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	indexDigest := resp.Header.Get("Docker-Content-Digest")
	var refs struct {
		Manifests []struct{ Digest, ArtifactType string }
	}
	getJSONFrom(t, hc, s.URL+"/v2/acme/foo/referrers/"+indexDigest+"?artifactType=application/vnd.in-toto%2Bjson", &refs)
	if len(refs.Manifests) != 1 {
		t.Fatalf("provenance referrers of %s = %+v, want one", indexDigest, refs)
	}
	var m struct {
		Subject struct{ Digest string }
		Layers  []struct{ MediaType, Digest string }
	}
	getJSONFrom(t, hc, s.URL+"/v2/acme/foo/manifests/"+refs.Manifests[0].Digest, &m)
	if m.Subject.Digest != indexDigest || len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.dsse.envelope.v1+json" {
		t.Fatalf("provenance artifact = %+v", m)
	}
	blob, err := hc.Get(s.URL + "/v2/acme/foo/blobs/" + m.Layers[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := io.ReadAll(blob.Body)
	blob.Body.Close()
	if !bytes.Equal(layer, envelope) {
		t.Errorf("the provenance layer (%d bytes) is not the envelope the API serves (%d bytes)", len(layer), len(envelope))
	}

	managedID := managed[0].KeyID
	for path, want := range map[string][]string{
		"/providers/acme/foo/1.0.0": {"Provenance", "Built in CI by <code>" + iss.URL + "</code> from <code>acme/infra</code>", "refs/tags/v1.0.0", "1234567890", managedID},
		"/providers/acme/foo/1.1.0": {"Provenance", "Published through Trove", "with token <code>", managedID},
	} {
		body := page(path)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", path, w)
			}
		}
	}
}

// TestVerifyLock checks a lock file against Trove with trove verify
// --lock: the zh: hashes of a keyless publish and of a token publish
// against the signed SHA256SUMS and the provenance, under the address's
// host and under trove.localhost; a tampered hash, a provider of another
// registry and a lock file of nothing of Trove's.
func TestVerifyLock(t *testing.T) {
	s, _, key := keylessEnv(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	if r := runTrove(t, admin, "", "key", "generate", "acme"); r.code != exitOK {
		t.Fatalf("trove key generate: exit %d\n%s", r.code, r.stderr)
	}
	dist := writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64")
	if r := runTrove(t, admin, "", "publish", "--namespace", "acme", dist); r.code != exitOK {
		t.Fatalf("publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string // every line, as terraform init records them
	var digest string   // the linux_amd64 archive's
	for line := range strings.Lines(string(sums)) {
		d, name, _ := strings.Cut(strings.TrimSpace(line), "  ")
		hashes = append(hashes, "zh:"+d)
		if strings.HasSuffix(name, "_linux_amd64.zip") {
			digest = d
		}
	}
	lock := func(blocks ...string) string {
		p := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
		if err := os.WriteFile(p, []byte(strings.Join(blocks, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	block := func(source string, hashes ...string) string {
		return "provider \"" + source + "\" {\n  version = \"1.0.0\"\n  hashes = [\n    \"" + strings.Join(hashes, "\",\n    \"") + "\",\n  ]\n}\n"
	}
	trove := s.Host + "/acme/foo"
	r := runTrove(t, admin, "", "verify", "--lock", lock(block(trove, hashes...), block("example.com/other/bar", "zh:"+strings.Repeat("0", 64))))
	if r.code != exitOK || !strings.Contains(r.stdout, "SHA256SUMS signed by key "+key.KeyID) ||
		!strings.Contains(r.stdout, "terraform-provider-foo_1.0.0_linux_amd64.zip matches the provenance") ||
		!strings.Contains(r.stdout, "SKIP example.com/other/bar") {
		t.Fatalf("trove verify --lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The name the clients give a local Trove (the banner's host block):
	// terraform and tofu write it into the lock file.
	r = runTrove(t, admin, "", "verify", "--lock", lock(block("trove.localhost/acme/foo", hashes...), block("other.localhost/acme/foo", hashes...)))
	if r.code != exitOK || !strings.Contains(r.stdout, "OK   trove.localhost/acme/foo 1.0.0: SHA256SUMS signed by key "+key.KeyID) ||
		!strings.Contains(r.stdout, "SKIP other.localhost/acme/foo") {
		t.Errorf("trove verify --lock of trove.localhost's providers: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, admin, "", "verify", "--lock", lock(block(trove, "zh:"+strings.Repeat("a", 64))))
	if r.code != exitError || !strings.Contains(r.stdout, "is not listed in the signed SHA256SUMS") {
		t.Errorf("trove verify --lock with a tampered hash: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, admin, "", "verify", "--lock", lock(block("example.com/other/bar", "zh:"+digest)))
	if r.code != exitError || !strings.Contains(r.stderr, "nothing was checked") {
		t.Errorf("trove verify --lock of another registry's providers: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"verify", "--lock", "x.hcl", "a.zip"}, {"verify"}} {
		if r := runTrove(t, admin, "", args...); r.code != exitUsage {
			t.Errorf("trove %v: exit %d, want a usage error", args, r.code)
		}
	}
	if r := runTrove(t, admin, "", "verify", "--lock", lock("not hcl {{{")); r.code != exitError || !strings.Contains(r.stderr, "is not a lock file") {
		t.Errorf("trove verify --lock of garbage: exit %d\n%s", r.code, r.stderr)
	}
}

// TestVerifyLockMirrored: a provider of one Trove carried with its
// provenance by an air-gap bundle (trove bundle export and import) into
// another is checked by trove verify --lock against the second with the
// keys the bundle carried; a hash the provenance does not name fails, a
// provider the second Trove holds no provenance of is skipped.
func TestVerifyLockMirrored(t *testing.T) {
	a, _, key := keylessEnv(t)
	adminA := map[string]string{"TROVE_ADDR": a.URL, "TROVE_TOKEN": a.AdminToken, "TROVE_CA_FILE": a.CAFile}
	if r := runTrove(t, adminA, "", "key", "generate", "acme"); r.code != exitOK {
		t.Fatalf("trove key generate: exit %d\n%s", r.code, r.stderr)
	}
	dist := writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64")
	if r := runTrove(t, adminA, "", "publish", "--namespace", "acme", dist); r.code != exitOK {
		t.Fatalf("publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bundle := filepath.Join(t.TempDir(), "acme.tar")
	source := a.Host + "/acme/foo"
	if r := runTrove(t, adminA, "", "bundle", "export", "--output", bundle, "--provider", source+"@1.0.0"); r.code != exitOK {
		t.Fatalf("trove bundle export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b := trovetest.Start(t)
	adminB := map[string]string{"TROVE_ADDR": b.URL, "TROVE_TOKEN": b.AdminToken, "TROVE_CA_FILE": b.CAFile}
	if r := runTrove(t, adminB, "", "bundle", "import", bundle); r.code != exitOK {
		t.Fatalf("trove bundle import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "terraform-provider-foo_1.0.0_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var zh string
	for line := range strings.Lines(string(sums)) {
		if d, name, _ := strings.Cut(strings.TrimSpace(line), "  "); strings.HasSuffix(name, "_linux_amd64.zip") {
			zh = "zh:" + d
		}
	}
	lock := func(source, hash string) string {
		p := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
		block := "provider \"" + source + "\" {\n  version = \"1.0.0\"\n  hashes = [\n    \"" + hash + "\",\n  ]\n}\n"
		if err := os.WriteFile(p, []byte(block), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := runTrove(t, adminB, "", "verify", "--lock", lock(source, zh))
	if r.code != exitOK || !strings.Contains(r.stdout, "provenance (mirrored) signed by key") ||
		!strings.Contains(r.stdout, "terraform-provider-foo_1.0.0_linux_amd64.zip in the provenance") {
		t.Fatalf("trove verify --lock of the mirrored provider: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, adminB, "", "verify", "--lock", lock(source, "zh:"+strings.Repeat("a", 64)))
	if r.code != exitError || !strings.Contains(r.stdout, "is no archive the provenance names") {
		t.Errorf("trove verify --lock with a tampered hash: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	other := signingtest.NewKey(t, "other")
	otherFile := filepath.Join(t.TempDir(), "other.asc")
	if err := os.WriteFile(otherFile, []byte(other.ArmoredPublic), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runTrove(t, adminB, "", "verify", "--lock", lock(source, zh), "--key", otherFile)
	if r.code != exitError || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout, "does not verify") || strings.Contains(r.stdout, "trove key add") {
		t.Errorf("trove verify --lock with a key that did not sign: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, adminB, "", "verify", "--lock", lock("example.com/other/bar", zh))
	if r.code != exitError || !strings.Contains(r.stdout, "SKIP example.com/other/bar") {
		t.Errorf("trove verify --lock of a provider B holds nothing of: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// getJSONFrom GETs url with hc and decodes its JSON answer into out.
func getJSONFrom(t *testing.T, hc *http.Client, url string, out any) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// webClient is an HTTP client that trusts s.
func webClient(t *testing.T, s *trovetest.Server) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// getProvenance reads a version's provenance envelope from the API.
func getProvenance(t *testing.T, s *trovetest.Server, ns, typ, ver string) []byte {
	t.Helper()
	hc := webClient(t, s)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet,
		s.URL+strings.NewReplacer("{namespace}", ns, "{type}", typ, "{version}", ver).Replace("/api/v1/namespaces/{namespace}/providers/{type}/versions/{version}/provenance"), nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET provenance: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return body
}
