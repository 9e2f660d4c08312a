package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestKeylessModulePublishWritesProvenance publishes a module from the
// test CI issuer with the real trove binary (`trove module publish`) into
// a namespace with a managed key: the provenance the API serves is a DSSE
// envelope the library's verifier accepts with the managed key, its one
// subject is the archive the module registry protocol downloads, with its
// digest, and it carries the token's claims; `trove verify` checks the
// downloaded archive against it and refuses a tampered envelope or
// archive; a publish with the admin's token names the token; the
// version's OCI manifest lists the provenance as a referrer; the page
// shows it.
func TestKeylessModulePublishWritesProvenance(t *testing.T) {
	s, iss, _ := keylessEnv(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	if r := runTrove(t, admin, "", "key", "generate", "acme"); r.code != exitOK {
		t.Fatalf("trove key generate: exit %d\n%s", r.code, r.stderr)
	}
	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	if r := runTrove(t, ciEnv(s, iss, t.TempDir()), "", "module", "publish", "acme/labels/null", "1.0.0", mod); r.code != exitOK {
		t.Fatalf("keyless module publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runTrove(t, admin, "", "module", "publish", "acme/labels/null", "1.1.0", mod); r.code != exitOK {
		t.Fatalf("token module publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
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
		if k.Managed {
			managedArmor = k.ASCIIArmor
			pub, err := signing.ParsePublicKey(k.ASCIIArmor)
			if err != nil {
				t.Fatal(err)
			}
			managed = append(managed, pub)
		}
	}
	if len(managed) != 1 {
		t.Fatalf("want one managed key, got %+v", keys)
	}
	answer, err := api.ModuleProvenance(t.Context(), "acme", "labels", "null", "1.0.0")
	if err != nil {
		t.Fatalf("client.ModuleProvenance: %v", err)
	}
	envelope := []byte(answer.Envelope)
	if answer.Imported || len(answer.Keys) != 1 || answer.Keys[0].ASCIIArmor != managedArmor {
		t.Errorf("client.ModuleProvenance keys %+v (imported %v), want the namespace's managed key", answer.Keys, answer.Imported)
	}
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
	if ext["repository"] != "acme/infra" || ext["ref"] != "refs/tags/v1.0.0" || ext["module"] != "acme/labels/null" || ext["version"] != "1.0.0" ||
		st.Predicate.RunDetails.Metadata.InvocationID != "1234567890" {
		t.Errorf("the statement does not carry the module and the token's claims: %+v, run %q", ext, st.Predicate.RunDetails.Metadata.InvocationID)
	}

	// The archive as terraform downloads it (modules.v1, X-Terraform-Get).
	archive := downloadModule(t, s, "acme", "labels", "null", "1.0.0")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tgz := write("labels-null-1.0.0.tar.gz", archive)
	if len(st.Subject) != 1 || st.CheckArchive("labels-null-1.0.0.tar.gz", sha256Hex(archive)) != nil {
		t.Errorf("subjects %+v, want the downloaded archive labels-null-1.0.0.tar.gz with sha256 %s", st.Subject, sha256Hex(archive))
	}
	managedFile := write("managed.asc", []byte(managedArmor))
	good := write("provenance.json", envelope)
	r := runTrove(t, nil, "", "verify", tgz, "--provenance", good, "--key", managedFile)
	if r.code != exitOK || strings.Count(r.stdout, "OK ") != 2 || !strings.Contains(r.stdout, "built by "+iss.URL+" acme/infra; module acme/labels/null 1.0.0") ||
		!strings.Contains(r.stdout, "labels-null-1.0.0.tar.gz: matches the provenance") {
		t.Fatalf("trove verify of the downloaded module archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The API's answer as the file: its keys verify it without --key,
	// and the report says whose they are; --key still pins.
	answerJSON, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	answerFile := write("answer.json", answerJSON)
	r = runTrove(t, nil, "", "verify", tgz, "--provenance", answerFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "a key the provenance file names") || !strings.Contains(r.stdout, "labels-null-1.0.0.tar.gz: matches the provenance") {
		t.Fatalf("trove verify with the API's answer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tampered := bytes.Replace(envelope, []byte(`"payload":"`), []byte(`"payload":"eyJ`), 1)
	otherAnswer, err := api.ModuleProvenance(t.Context(), "acme", "labels", "null", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	other := []byte(otherAnswer.Envelope)
	strangerAnswer := answer
	strangerAnswer.Keys = []apispec.BundleKey{{KeyID: "0123456789ABCDEF", ASCIIArmor: signingtest.NewKey(t, "stranger").ArmoredPublic}}
	strangerJSON, err := json.Marshal(strangerAnswer)
	if err != nil {
		t.Fatal(err)
	}
	badKey := answer
	badKey.Keys = []apispec.BundleKey{{KeyID: "0123456789ABCDEF", ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nnot a key\n"}}
	badKeyJSON, err := json.Marshal(badKey)
	if err != nil {
		t.Fatal(err)
	}
	strangerKey := signingtest.NewKey(t, "stranger")
	stranger := write("stranger.asc", []byte(strangerKey.ArmoredPublic))
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"tampered provenance": {[]string{tgz, "--provenance", write("tampered.json", tampered), "--key", managedFile}, "does not verify"},
		"changed archive":     {[]string{write("x/labels-null-1.0.0.tar.gz", append(append([]byte(nil), archive...), 0)), "--provenance", good, "--key", managedFile}, "but the provenance records"},
		"renamed archive":     {[]string{write("labels-null-9.9.9.tar.gz", archive), "--provenance", good, "--key", managedFile}, "is no archive of module acme/labels/null 1.0.0"},
		"another version's":   {[]string{tgz, "--provenance", write("other.json", other), "--key", managedFile}, "is no archive of module acme/labels/null 1.1.0"},
		// A statement naming this archive by name and digest but about
		// another version (or module) is not this archive's provenance.
		"a statement of another version": {[]string{tgz, "--provenance", write("forged.json", signedPublishStatement(t, strangerKey, provenance.Release{Namespace: "acme", Name: "labels", System: "null", Version: "2.0.0",
			Archives: map[string]string{"labels-null-1.0.0.tar.gz": sha256Hex(archive)}})), "--key", stranger}, "is no archive of module acme/labels/null 2.0.0"},
		"a statement of another module": {[]string{tgz, "--provenance", write("forged2.json", signedPublishStatement(t, strangerKey, provenance.Release{Namespace: "acme", Name: "other", System: "null", Version: "1.0.0",
			Archives: map[string]string{"labels-null-1.0.0.tar.gz": sha256Hex(archive)}})), "--key", stranger}, "is no archive of module acme/other/null 1.0.0"},
		"a provider's statement": {[]string{tgz, "--provenance", write("forged3.json", signedPublishStatement(t, strangerKey, provenance.Release{Namespace: "acme", Type: "labels", Version: "1.0.0",
			Archives: map[string]string{"labels-null-1.0.0.tar.gz": sha256Hex(archive)}})), "--key", stranger}, "is no archive of provider acme/labels"},
		"another key":          {[]string{tgz, "--provenance", good, "--key", stranger}, "does not verify"},
		"answer, pinned other": {[]string{tgz, "--provenance", answerFile, "--key", stranger}, "does not verify"},
		"answer, other keys":   {[]string{tgz, "--provenance", write("stranger.json", strangerJSON)}, "does not verify"},
		"answer, broken key":   {[]string{tgz, "--provenance", write("badkey.json", badKeyJSON)}, "not an OpenPGP public key"},
	} {
		r := runTrove(t, nil, "", append([]string{"verify"}, c.args...)...)
		if r.code != exitError || !strings.Contains(r.stdout, "FAIL") || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("trove verify, %s: exit %d, want a failure saying %q\n%s%s", name, r.code, c.want, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"verify", tgz, "--key", managedFile},                                       // nothing to check against
		{"verify", tgz, "--provenance", good},                                       // no key
		{"verify", tgz, "--provenance", good, "--key", managedFile, "--sums", good}, // --sums without --sig
	} {
		if r := runTrove(t, nil, "", args...); r.code != exitUsage {
			t.Errorf("trove %v: exit %d, want a usage error\n%s", args, r.code, r.stderr)
		}
	}

	// A publish with the admin's token names the token.
	ov, err := provenance.Verify(t.Context(), other, managed, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if p := ov.Statement.Predicate; p.BuildDefinition.BuildType != provenance.BuildTypePublish || p.BuildDefinition.ExternalParameters["token"] == "" ||
		p.RunDetails.Builder.ID != provenance.TroveBuilderID || p.BuildDefinition.ExternalParameters["module"] != "acme/labels/null" {
		t.Errorf("the statement of a token publish: %+v", p)
	}

	// OCI: the provenance is a referrer of the version's manifest, its one
	// layer the envelope the API serves.
	if r := runTrove(t, admin, "", "namespace", "update", "acme", "--visibility", "public"); r.code != exitOK {
		t.Fatalf("namespace update: exit %d\n%s", r.code, r.stderr)
	}
	hc := webClient(t, s)
	resp, err := hc.Get(s.URL + "/v2/acme/modules/labels/null/manifests/1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	manifestDigest := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || manifestDigest == "" {
		t.Fatalf("GET the module's OCI manifest: %d, digest %q", resp.StatusCode, manifestDigest)
	}
	var refs struct {
		Manifests []struct{ Digest, ArtifactType string }
	}
	getJSONFrom(t, hc, s.URL+"/v2/acme/modules/labels/null/referrers/"+manifestDigest+"?artifactType=application/vnd.in-toto%2Bjson", &refs)
	if len(refs.Manifests) != 1 {
		t.Fatalf("provenance referrers of %s = %+v, want one", manifestDigest, refs)
	}
	var m struct {
		Subject struct{ Digest string }
		Layers  []struct{ MediaType, Digest string }
	}
	getJSONFrom(t, hc, s.URL+"/v2/acme/modules/labels/null/manifests/"+refs.Manifests[0].Digest, &m)
	if m.Subject.Digest != manifestDigest || len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.dsse.envelope.v1+json" {
		t.Fatalf("provenance artifact = %+v", m)
	}
	blob, err := hc.Get(s.URL + "/v2/acme/modules/labels/null/blobs/" + m.Layers[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := io.ReadAll(blob.Body)
	blob.Body.Close()
	if !bytes.Equal(layer, envelope) {
		t.Errorf("the provenance layer (%d bytes) is not the envelope the API serves (%d bytes)", len(layer), len(envelope))
	}

	// The version pages say who built each version.
	for path, want := range map[string][]string{
		"/modules/acme/labels/null/1.0.0": {"Provenance", "Built in CI by <code>" + iss.URL + "</code> from <code>acme/infra</code>", "refs/tags/v1.0.0", "1234567890", managed[0].KeyID},
		"/modules/acme/labels/null/1.1.0": {"Provenance", "Published through Trove", "with token <code>", managed[0].KeyID},
	} {
		resp, err := hc.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("GET %s lacks %q", path, w)
			}
		}
	}
}

// downloadModule downloads a module version's archive as the clients do:
// the modules.v1 download endpoint, then the X-Terraform-Get address.
func downloadModule(t *testing.T, s *trovetest.Server, ns, name, system, version string) []byte {
	t.Helper()
	hc := webClient(t, s)
	get := func(u string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get(s.URL + "/v1/modules/" + ns + "/" + name + "/" + system + "/" + version + "/download")
	resp.Body.Close()
	loc := resp.Header.Get("X-Terraform-Get")
	if resp.StatusCode != http.StatusNoContent || loc == "" {
		t.Fatalf("module download: %d, X-Terraform-Get %q", resp.StatusCode, loc)
	}
	base, _ := url.Parse(s.URL + "/v1/modules/")
	ref, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	resp = get(base.ResolveReference(ref).String())
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", loc, resp.StatusCode)
	}
	return data
}

// signedPublishStatement signs a publish statement of rel with key.
func signedPublishStatement(t *testing.T, key *signingtest.Key, rel provenance.Release) []byte {
	t.Helper()
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := provenance.Sign(t.Context(), provenance.NewPublish(rel, provenance.Identity{TokenID: "t"}), func(_ context.Context, data []byte) (registry.SigningKey, []byte, error) {
		return pub, key.Sign(data), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}
