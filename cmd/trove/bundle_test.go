package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// TestBundleCommands exports a provider and a module from one Trove with
// trove bundle export and imports them into another with trove bundle
// import; usage mistakes are refused before asking, and a damaged bundle
// is refused with the server's reason.
func TestBundleCommands(t *testing.T) {
	src := trovetest.Start(t)
	dst := trovetest.Start(t)
	envOf := func(s *trovetest.Server) map[string]string {
		return map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	}
	run := func(s *trovetest.Server, want int, args ...string) result {
		t.Helper()
		r := runTrove(t, envOf(s), "", args...)
		if r.code != want {
			t.Fatalf("trove %s: exit %d, want %d\n%s", strings.Join(args, " "), r.code, want, r.stderr)
		}
		return r
	}
	run(src, exitOK, "namespace", "create", "acme")
	run(dst, exitOK, "namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	if r := runTrove(t, envOf(src), key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	run(src, exitOK, "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64", "darwin_arm64"))
	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	run(src, exitOK, "module", "publish", "acme/labels/null", "1.0.0", mod)

	out := filepath.Join(t.TempDir(), "acme.tar")
	provider := src.Host + "/acme/foo@1.2.0"
	r := run(src, exitOK, "bundle", "export", "--output", out, "--provider", provider, "--module", "acme/labels/null@1.0.0", "--platform", "linux_amd64")
	if !strings.Contains(r.stdout, "Wrote "+out) {
		t.Errorf("bundle export printed %q", r.stdout)
	}
	// A bundle whose module archive holds a link to /etc/passwd: refused
	// as trove module publish refuses it, and nothing of it is imported.
	hostile := filepath.Join(t.TempDir(), "hostile.tar")
	withModuleArchive(t, out, hostile, testarchive.TarGzOf(t,
		testarchive.Entry{Name: "main.tf", Body: "# x"},
		testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	))
	if r := run(dst, exitError, "bundle", "import", hostile); !strings.Contains(r.stderr, `symbolic link to "/etc/passwd"`) {
		t.Errorf("import of a bundle with a hostile module archive: %q", r.stderr)
	}
	if vs, err := dst.Index.ListModuleVersions(t.Context(), "acme", "labels", "null"); len(vs) != 0 {
		t.Errorf("module versions after the refused import: %+v, %v; want none", vs, err)
	}
	if _, err := dst.Index.GetMirroredVersion(t.Context(), src.Host, "acme", "foo", "1.2.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the provider after the refused import: %v, want NotFound", err)
	}

	r = run(dst, exitOK, "bundle", "import", out)
	for _, want := range []string{"Provider " + src.Host + "/acme/foo 1.2.0: 1 package(s) added", "Module acme/labels/null 1.0.0: imported", "Imported 1 provider and 1 module version(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("bundle import printed %q, want %q", r.stdout, want)
		}
	}
	if r = run(dst, exitOK, "bundle", "import", out); !strings.Contains(r.stdout, "held already") || !strings.Contains(r.stdout, "present already") {
		t.Errorf("a second bundle import printed %q", r.stdout)
	}

	// A damaged bundle: the last byte of the last file changed.
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	i := len(data) - 1024 - 1 // before tar's two zero blocks ...
	for i > 0 && data[i] == 0 {
		i-- // ... and the padding of the last file
	}
	data[i] ^= 0xff
	damaged := filepath.Join(t.TempDir(), "damaged.tar")
	os.WriteFile(damaged, data, 0o644)
	if r := run(dst, exitError, "bundle", "import", damaged); !strings.Contains(r.stderr, "holds content of digest") {
		t.Errorf("import of a damaged bundle: %q", r.stderr)
	}

	for _, args := range [][]string{
		{"bundle", "export", "--provider", provider},
		{"bundle", "export", "--output", out},
		{"bundle", "export", "--output", out, "--provider", src.Host + "/acme/foo"},
		{"bundle", "export", "--output", out, "--module", "acme/labels@1.0.0"},
		{"bundle", "import"},
	} {
		run(src, exitUsage, args...)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("a refused export removed the earlier bundle: %v", err)
	}
}

// withModuleArchive copies the bundle in to out with archive as the
// archive of its (first) module version, manifest and file name adjusted.
func withModuleArchive(t *testing.T, in, out string, archive []byte) {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sum := sha256.Sum256(archive)
	digest := hex.EncodeToString(sum[:])
	var old string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		content, _ := io.ReadAll(tr)
		switch {
		case hdr.Name == apispec.BundleManifestName:
			var m apispec.BundleManifest
			if err := json.Unmarshal(content, &m); err != nil || len(m.Modules) == 0 {
				t.Fatalf("the bundle's manifest: %v", err)
			}
			old = apispec.BundleBlobPrefix + m.Modules[0].Archive
			m.Modules[0].Archive, m.Modules[0].Size = digest, int64(len(archive))
			content, _ = json.Marshal(m)
		case hdr.Name == old:
			hdr.Name, content = apispec.BundleBlobPrefix+digest, archive
		}
		hdr.Size = int64(len(content))
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write(content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
