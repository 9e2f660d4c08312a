package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestProviderDocsUploadCommand uploads documentation from a directory
// and from an archive file against a real Trove, and checks the usage
// errors.
func TestProviderDocsUploadCommand(t *testing.T) {
	s := trovetest.Start(t)
	env := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	if r := runTrove(t, env, "", "namespace", "create", "acme"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	key := registry.SigningKey{Namespace: "acme", KeyID: "FEDCBA9876543210", Fingerprint: strings.Repeat("E", 40), ASCIIArmor: "x", CreatedAt: time.Now()}
	for _, ver := range []string{"1.0.0", "1.1.0"} {
		if err := s.Index.CreateProviderVersion(t.Context(), registry.ProviderVersion{Namespace: "acme", Type: "foo", Version: ver,
			Protocols: []string{"5.0"}, SHASumsDigest: s.Blob(t, "a"), SHASumsSignatureDigest: s.Blob(t, "b"),
			SigningKey: key, PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	repo := t.TempDir()
	writeModule(t, repo, map[string]string{
		"docs/index.md":              "# Foo\n",
		"docs/resources/widget.md":   "# widget\n",
		"docs/resources/gadget.md":   "# gadget\n",
		"docs/data-sources/thing.md": "# thing\n",
		"main.go":                    "package main\n",
	})

	r := runTrove(t, env, "", "provider", "docs", "upload", "acme/foo", "1.0.0", repo)
	if r.code != exitOK || !strings.Contains(r.stdout, "Uploaded the documentation of acme/foo 1.0.0") ||
		!strings.Contains(r.stdout, "4 pages (1 overview, 2 resources, 1 data-sources)") {
		t.Fatalf("upload: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, env, "", "provider", "docs", "upload", "acme/foo", "1.0.0", filepath.Join(repo, "docs"))
	if r.code != exitOK || !strings.Contains(r.stdout, "already has this documentation (4 pages") {
		t.Errorf("upload of the docs directory again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeModule(t, repo, map[string]string{"docs/guides/start.md": "# start\n"})
	r = runTrove(t, env, "", "provider", "docs", "upload", "acme/foo", "1.0.0", repo)
	if r.code != exitError || !strings.Contains(r.stderr, "immutable") {
		t.Errorf("upload of other docs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An archive file, as it is; --json prints the API's document.
	archive := filepath.Join(t.TempDir(), "docs.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if r := runTrove(t, env, "", "provider", "docs", "upload", "acme/foo", "1.1.0", archive); r.code != exitError || !strings.Contains(r.stderr, "neither a .tar.gz nor a .zip") {
		t.Errorf("upload of an empty file: exit %d\n%s", r.code, r.stderr)
	}
	f.Close()
	v, _ := s.Index.GetProviderVersion(t.Context(), "acme", "foo", "1.0.0")
	b, err := s.Blobs.Open(t.Context(), v.DocsDigest)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, b.Size)
	if _, err := b.Content.Read(data); err != nil {
		t.Fatal(err)
	}
	b.Close()
	os.WriteFile(archive, data, 0o644)
	r = runTrove(t, env, "", "provider", "docs", "upload", "--json", "acme/foo", "1.1.0", archive)
	if r.code != exitOK || !strings.Contains(r.stdout, `"created": true`) || !strings.Contains(r.stdout, `"page_count": 4`) {
		t.Errorf("upload of an archive file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for _, args := range [][]string{
		{"provider", "docs", "upload", "acme/foo", "1.0.0"},
		{"provider", "docs", "upload", "acme", "1.0.0", repo},
		{"provider", "docs", "upload", "acme/foo", "v1.0.0", repo},
	} {
		if r := runTrove(t, env, "", args...); r.code != exitUsage {
			t.Errorf("trove %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
	if r := runTrove(t, env, "", "provider", "docs", "upload", "acme/foo", "1.0.0", t.TempDir()); r.code != exitError || !strings.Contains(r.stderr, "holds no documentation") {
		t.Errorf("upload of an empty directory: exit %d\n%s", r.code, r.stderr)
	}
}

// TestProviderPackageDocsThenPublish packages a release with --docs and
// publishes it: the version has its documentation from the start,
// covered by the signature.
func TestProviderPackageDocsThenPublish(t *testing.T) {
	inSandbox(t)
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	k := signingtest.NewKey(t, "acme")
	keyFile := writeTemp(t, "key.asc", []byte(k.ArmoredPrivate))
	pubFile := writeTemp(t, "key.pub.asc", []byte(k.ArmoredPublic))
	for _, args := range [][]string{{"namespace", "create", "acme"}, {"key", "add", "acme", "--file", pubFile}} {
		if r := runTrove(t, admin, "", args...); r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	repo := t.TempDir()
	writeModule(t, repo, map[string]string{"docs/index.md": "# Example\n", "docs/resources/thing.md": "# thing\n"})
	build := buildDir(t, "example", "linux_amd64")
	out := filepath.Join(t.TempDir(), "dist")
	r := runTrove(t, nil, "", "provider", "package", "--version", "1.2.3", "--binaries", build, "--key-file", keyFile, "--docs", repo, "--out", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "terraform-provider-example_1.2.3_docs.tar.gz") {
		t.Fatalf("provider package --docs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sums, _ := os.ReadFile(filepath.Join(out, "terraform-provider-example_1.2.3_SHA256SUMS"))
	if !strings.Contains(string(sums), "  terraform-provider-example_1.2.3_docs.tar.gz\n") {
		t.Errorf("SHA256SUMS does not list the documentation:\n%s", sums)
	}
	r = runTrove(t, admin, "", "publish", "--namespace", "acme", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "Published acme/example 1.2.3 for linux_amd64") {
		t.Fatalf("publish: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	v, err := s.Index.GetProviderVersion(t.Context(), "acme", "example", "1.2.3")
	if err != nil || v.DocsDigest == "" {
		t.Fatalf("published version = %+v, %v; want documentation", v, err)
	}
	r = runTrove(t, admin, "", "provider", "show", "acme/example", "1.2.3")
	if r.code != exitOK || !strings.Contains(r.stdout, "sha256 "+v.DocsDigest) {
		t.Errorf("provider show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Documentation in dist/ that SHA256SUMS does not list is refused
	// before anything is sent.
	unlisted := filepath.Join(t.TempDir(), "dist")
	if r := runTrove(t, nil, "", "provider", "package", "--version", "1.2.4", "--binaries", build, "--key-file", keyFile, "--out", unlisted); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	os.WriteFile(filepath.Join(unlisted, "terraform-provider-example_1.2.4_docs.tar.gz"), []byte("x"), 0o644)
	r = runTrove(t, admin, "", "publish", "--namespace", "acme", unlisted)
	if r.code != exitError || !strings.Contains(r.stderr, "is not listed in") {
		t.Errorf("publish with unlisted docs: exit %d\n%s", r.code, r.stderr)
	}
	if r := runTrove(t, nil, "", "provider", "package", "--version", "1.2.5", "--binaries", build, "--unsigned", "--docs", t.TempDir(), "--out", filepath.Join(t.TempDir(), "d")); r.code != exitError || !strings.Contains(r.stderr, "holds no documentation") {
		t.Errorf("provider package --docs of an empty directory: exit %d\n%s", r.code, r.stderr)
	}
}
