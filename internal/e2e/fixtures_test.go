package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// namespace is the namespace every test publishes into.
const namespace = "acme"

// setupNamespace creates the public namespace with the CLI, registers a fresh
// signing key for it and creates a publish token, as a user would:
// trove namespace create, trove key add, trove token create.
func setupNamespace(t *testing.T, s *troveServer) (key *signingtest.Key, publishToken string) {
	t.Helper()
	key = signingtest.NewKey(t, namespace)
	// Public: these tests install without credentials (private
	// namespaces are the subject of access_test.go).
	s.mustCLI(t, s.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	keyFile := writeFile(t, t.TempDir(), "key.asc", []byte(key.ArmoredPublic))
	s.mustCLI(t, s.AdminToken, "key", "add", namespace, "--file", keyFile)
	return key, createToken(t, s, "publish")
}

// createToken creates a token of the namespace with the given scopes via
// `trove token create`, which prints the secret alone on stdout.
func createToken(t *testing.T, s *troveServer, scopes string) string {
	t.Helper()
	out := s.mustCLI(t, s.AdminToken, "token", "create", "--namespace", namespace, "--scope", scopes)
	secret := strings.TrimSuffix(out, "\n")
	if secret == "" || strings.ContainsAny(secret, " \t\n") {
		t.Fatalf("trove token create printed %q on stdout, want the secret alone on one line", out)
	}
	return secret
}

// publish runs `trove publish` for d, which must succeed.
func publish(t *testing.T, s *troveServer, token string, d *dist) string {
	t.Helper()
	return s.mustCLI(t, token, "publish", "--namespace", namespace, d.Dir)
}

// versionsDoc is the providers.v1 versions document, as the clients read it.
type versionsDoc struct {
	Versions []struct {
		Version   string   `json:"version"`
		Protocols []string `json:"protocols"`
		Platforms []struct {
			OS   string `json:"os"`
			Arch string `json:"arch"`
		} `json:"platforms"`
	} `json:"versions"`
}

// platforms returns version -> sorted "os_arch" list.
func (d versionsDoc) platforms() map[string][]string {
	m := map[string][]string{}
	for _, v := range d.Versions {
		ps := []string{}
		for _, p := range v.Platforms {
			ps = append(ps, p.OS+"_"+p.Arch)
		}
		slices.Sort(ps)
		m[v.Version] = ps
	}
	return m
}

// downloadDoc is the providers.v1 download document.
type downloadDoc struct {
	Protocols           []string `json:"protocols"`
	OS                  string   `json:"os"`
	Arch                string   `json:"arch"`
	Filename            string   `json:"filename"`
	DownloadURL         string   `json:"download_url"`
	SHASumsURL          string   `json:"shasums_url"`
	SHASumsSignatureURL string   `json:"shasums_signature_url"`
	SHASum              string   `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []struct {
			KeyID      string `json:"key_id"`
			ASCIIArmor string `json:"ascii_armor"`
		} `json:"gpg_public_keys"`
	} `json:"signing_keys"`
}

// versionsURL and downloadURL are providers.v1 URLs of the test provider.
func versionsURL(t *testing.T, s *troveServer) string {
	t.Helper()
	return s.providersBase(t).JoinPath(namespace, providerType, "versions").String()
}

func downloadURL(t *testing.T, s *troveServer, version, platform string) string {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "_")
	return s.providersBase(t).JoinPath(namespace, providerType, version, "download", goos, goarch).String()
}

// getVersions fetches the versions document without credentials; a 404
// (provider unknown) yields an empty document.
func getVersions(t *testing.T, s *troveServer) versionsDoc {
	t.Helper()
	var doc versionsDoc
	r := s.get(t, versionsURL(t, s))
	switch r.Status {
	case http.StatusNotFound:
	case http.StatusOK:
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("versions document %s: %v", r.Body, err)
		}
	default:
		t.Fatalf("GET versions: status %d: %s", r.Status, r.Body)
	}
	return doc
}

// getDownload fetches the download document without credentials and
// returns it with the URL it was fetched from.
func getDownload(t *testing.T, s *troveServer, version, platform string) (downloadDoc, response) {
	t.Helper()
	var doc downloadDoc
	r := s.getJSON(t, downloadURL(t, s, version, platform), "", &doc)
	return doc, r
}

// resolve resolves a URL of a download document against the document's URL.
func (r response) resolve(t *testing.T, ref string) string {
	t.Helper()
	u, err := r.URL.Parse(ref)
	if err != nil {
		t.Fatalf("resolving %q: %v", ref, err)
	}
	return u.String()
}

// apiJSON GETs a management API path with the admin token and returns the
// decoded JSON, for before/after comparisons.
func apiJSON(t *testing.T, s *troveServer, path string) any {
	t.Helper()
	var v any
	s.getJSON(t, path, s.AdminToken, &v)
	return v
}

// rawPublish posts the named files of d as a publish request with token
// ("" for none), straight to the API, and returns the status and body. It
// checks what the server itself answers, independently of the CLI.
func rawPublish(t *testing.T, s *troveServer, token, version string, d *dist, names ...string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, n := range names {
		w, err := mw.CreateFormFile(apispec.PublishFileField, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(d.read(t, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/namespaces/%s/providers/%s/versions/%s", namespace, providerType, version)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.Addr+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.httpClient(t).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// writeProject writes a terraform configuration that requires the example
// provider from s with the version constraint, creates one example_thing
// called thingName, reads the example_echo data source and outputs both.
func writeProject(t *testing.T, s *troveServer, constraint, thingName string) string {
	t.Helper()
	return writeProjectFor(t, s.Host+"/"+namespace+"/"+providerType, constraint, thingName)
}

// writeProjectFor is writeProject for the example provider at source.
func writeProjectFor(t *testing.T, source, constraint, thingName string) string {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`terraform {
  required_providers {
    example = {
      source  = %q
      version = %q
    }
  }
}

resource "example_thing" "this" {
  name = %q
}

data "example_echo" "this" {
  input = "hello"
}

output "thing_id" {
  value = example_thing.this.id
}

output "thing_name" {
  value = example_thing.this.name
}

output "echo" {
  value = data.example_echo.this.result
}
`, source, constraint, thingName)
	writeFile(t, dir, "main.tf", []byte(config))
	return dir
}

// thingID is the ID the example provider gives a thing (see its
// thingID): the test predicts it to prove the provider really ran.
func thingID(name string) string {
	sum := sha256.Sum256([]byte("example_thing:" + name))
	return hex.EncodeToString(sum[:8])
}

// applyAndCheck runs terraform apply in dir and checks, through terraform
// output, that the example provider created the thing and read the echo.
func applyAndCheck(t *testing.T, tf *terraformCLI, dir, thingName string) {
	t.Helper()
	res := tf.mustRun(t, dir, "apply", "-auto-approve", "-input=false")
	if !strings.Contains(res.Flat, "Apply complete! Resources: 1 added") {
		t.Errorf("terraform apply did not report the resource as added:\n%s", res.Output)
	}
	out := tf.mustRun(t, dir, "output", "-json")
	var outputs map[string]struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(out.Output), &outputs); err != nil {
		t.Fatalf("terraform output -json: %v\n%s", err, out.Output)
	}
	want := map[string]any{"thing_id": thingID(thingName), "thing_name": thingName, "echo": "echo: hello"}
	for name, v := range want {
		if got := outputs[name].Value; got != v {
			t.Errorf("output %s = %v, want %v", name, got, v)
		}
	}
}

// lockEntry is a provider's entry in .terraform.lock.hcl.
type lockEntry struct {
	Version string
	Hashes  []string // sorted
}

var (
	lockVersion = regexp.MustCompile(`(?m)^\s*version\s*=\s*"([^"]*)"`)
	lockHash    = regexp.MustCompile(`"((?:h1|zh):[^"]+)"`)
)

// readLock returns the lock file entry of the example provider from s.
func readLock(t *testing.T, s *troveServer, dir string) lockEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatalf("reading the lock file: %v", err)
	}
	header := fmt.Sprintf("provider %q {", s.Host+"/"+namespace+"/"+providerType)
	_, block, ok := strings.Cut(string(b), header)
	if !ok {
		t.Fatalf("lock file has no %s block:\n%s", header, b)
	}
	block, _, _ = strings.Cut(block, "\n}")
	var e lockEntry
	if m := lockVersion.FindStringSubmatch(block); m != nil {
		e.Version = m[1]
	}
	for _, m := range lockHash.FindAllStringSubmatch(block, -1) {
		e.Hashes = append(e.Hashes, m[1])
	}
	slices.Sort(e.Hashes)
	return e
}
