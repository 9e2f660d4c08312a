package release_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// executables writes stand-in executables (valid headers, nothing more)
// for four platforms. Real ones are packed by the end-to-end tests; here
// they would only make the race detector slow.
func executables(t *testing.T) []release.Executable {
	t.Helper()
	dir := t.TempDir()
	var exes []release.Executable
	for _, platform := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
		p := filepath.Join(dir, platform)
		if err := os.WriteFile(p, releasetest.Executable(t, platform), 0o755); err != nil {
			t.Fatal(err)
		}
		goos, goarch, _ := strings.Cut(platform, "_")
		exes = append(exes, release.Executable{OS: goos, Arch: goarch, Path: p})
	}
	return exes
}

func keySigner(t *testing.T) (*signingtest.Key, *signing.KeyFileSigner) {
	t.Helper()
	key := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
	s, err := signing.ReadKeyFile([]byte(key.ArmoredPrivate), nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, s
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestPackLayout checks every file Pack writes against goreleaser's layout
// and the checks a registry applies on publish.
func TestPackLayout(t *testing.T) {
	key, signer := keySigner(t)
	exes := executables(t)
	dir := filepath.Join(t.TempDir(), "dist")
	manifest := []byte(`{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}` + "\n")
	packed, err := release.Pack(dir, release.PackSpec{
		Type: "example", Version: "1.2.3-rc.1", Executables: exes, Manifest: manifest, Sign: signer.SignDetached,
	})
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "terraform-provider-example_1.2.3-rc.1_"

	// The files, in the order Packed lists them, and nothing else in dir.
	var platforms []string
	for _, e := range exes {
		platforms = append(platforms, e.OS+"_"+e.Arch)
	}
	slices.Sort(platforms)
	var want []string
	for _, p := range platforms {
		want = append(want, prefix+p+".zip")
	}
	want = append(want, prefix+"manifest.json", prefix+"SHA256SUMS", prefix+"SHA256SUMS.sig")
	var got []string
	for _, f := range packed.Files {
		got = append(got, f.Name)
		if d := fileDigest(t, filepath.Join(dir, f.Name)); d != f.SHA256 {
			t.Errorf("%s: Packed says SHA-256 %s, the file has %s", f.Name, f.SHA256, d)
		}
		if fi, err := os.Stat(filepath.Join(dir, f.Name)); err != nil || fi.Size() != f.Size {
			t.Errorf("%s: Packed says %d bytes, the file has %v (%v)", f.Name, f.Size, fi, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Packed files = %q\nwant %q", got, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		t.Errorf("dir holds %d files, want %d", len(entries), len(want))
	}
	if !slices.Equal(packed.Protocols, []string{"6.0"}) {
		t.Errorf("Protocols = %q, want [6.0]", packed.Protocols)
	}

	// The manifest is written byte for byte.
	if got, _ := os.ReadFile(filepath.Join(dir, prefix+"manifest.json")); !bytes.Equal(got, manifest) {
		t.Errorf("manifest = %q, want the given bytes %q", got, manifest)
	}

	// SHA256SUMS: sha256sum's text format, sorted, the zips and the manifest.
	sums, err := os.ReadFile(filepath.Join(dir, prefix+"SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var wantSums strings.Builder
	listed := slices.Clone(want[:len(want)-2])
	slices.Sort(listed)
	for _, n := range listed {
		fmt.Fprintf(&wantSums, "%s  %s\n", fileDigest(t, filepath.Join(dir, n)), n)
	}
	if string(sums) != wantSums.String() {
		t.Errorf("SHA256SUMS =\n%s\nwant\n%s", sums, wantSums.String())
	}
	if _, err := release.ParseSHA256SUMS(sums); err != nil {
		t.Errorf("ParseSHA256SUMS: %v", err)
	}

	// The signature is binary and verifies with the key's public half.
	sig, err := os.ReadFile(filepath.Join(dir, prefix+"SHA256SUMS.sig"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	if signer, err := signing.VerifyDetached([]registry.SigningKey{pub}, sums, sig); err != nil || signer.KeyID != key.KeyID {
		t.Errorf("VerifyDetached = %v, %v; want key %s", signer.KeyID, err, key.KeyID)
	}

	// Each zip holds the executable alone, at its root, 0755, with a fixed time stamp.
	for _, e := range exes {
		name := prefix + e.OS + "_" + e.Arch + ".zip"
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := release.ParsePackageFilename(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "linux", release.DefaultLimits); err != nil {
			t.Errorf("CheckZip(%s): %v", name, err)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		wantExe := "terraform-provider-example_v1.2.3-rc.1"
		if e.OS == "windows" {
			wantExe += ".exe"
		}
		if len(zr.File) != 1 || zr.File[0].Name != wantExe {
			t.Fatalf("%s holds %d entries (first %q), want only %s", name, len(zr.File), zr.File[0].Name, wantExe)
		}
		f := zr.File[0]
		if f.Mode() != 0o755 || !f.Modified.Equal(release.PackTime) || f.Method != zip.Deflate {
			t.Errorf("%s: entry mode %v, modified %v, method %d; want 0755, %v, deflate", name, f.Mode(), f.Modified, f.Method, release.PackTime)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if src, _ := os.ReadFile(e.Path); !bytes.Equal(content, src) {
			t.Errorf("%s: the executable's content differs from %s", name, e.Path)
		}
	}
}

// TestPackIsDeterministic packs the same executables twice, in another
// order, and expects the same bytes (the signature aside, which is dated).
func TestPackIsDeterministic(t *testing.T) {
	exes := executables(t)
	var outs [2]string
	for i := range outs {
		outs[i] = filepath.Join(t.TempDir(), "dist")
		slices.Reverse(exes)
		if _, err := release.Pack(outs[i], release.PackSpec{Type: "example", Version: "1.0.0", Executables: exes}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(outs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(outs[0], e.Name()))
		b, err := os.ReadFile(filepath.Join(outs[1], e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two packings (%v)", e.Name(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(outs[0], "terraform-provider-example_1.0.0_SHA256SUMS.sig")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unsigned release has a .sig: %v", err)
	}
	manifest, _ := os.ReadFile(filepath.Join(outs[0], "terraform-provider-example_1.0.0_manifest.json"))
	if string(manifest) != `{"version":1,"metadata":{"protocol_versions":["5.0"]}}`+"\n" {
		t.Errorf("default manifest = %q", manifest)
	}
}

// TestPackRefuses checks that Pack refuses bad input before writing
// anything, and leaves no file behind when signing fails.
func TestPackRefuses(t *testing.T) {
	exes := executables(t)
	armAsAmd := release.Executable{OS: "linux", Arch: "amd64", Path: exes[slices.IndexFunc(exes, func(e release.Executable) bool { return e.OS+"_"+e.Arch == "linux_arm64" })].Path}
	tests := []struct {
		name string
		edit func(*release.PackSpec)
		want string
	}{
		{"leading v", func(s *release.PackSpec) { s.Version = "v1.0.0" }, `drop the leading "v"`},
		{"not semver", func(s *release.PackSpec) { s.Version = "1.0" }, "want MAJOR.MINOR.PATCH"},
		{"upper-case type", func(s *release.PackSpec) { s.Type = "Example" }, "lower case"},
		{"bad type", func(s *release.PackSpec) { s.Type = "terraform-x" }, `may not start with "terraform-"`},
		{"no executables", func(s *release.PackSpec) { s.Executables = nil }, "no executables"},
		{"duplicate platform", func(s *release.PackSpec) { s.Executables = append(s.Executables, s.Executables[0]) }, "is given twice"},
		{"unknown platform", func(s *release.PackSpec) {
			s.Executables = append(s.Executables, release.Executable{OS: "linux", Arch: "x86_64", Path: exes[0].Path})
		}, "Go calls it linux_amd64"},
		{"wrong architecture", func(s *release.PackSpec) {
			s.Executables = []release.Executable{armAsAmd}
		}, "is an executable for linux_arm64, not linux_amd64"},
		{"missing file", func(s *release.PackSpec) {
			s.Executables = []release.Executable{{OS: "linux", Arch: "arm64", Path: filepath.Join(t.TempDir(), "nope")}}
		}, "no such file"},
		{"directory", func(s *release.PackSpec) {
			s.Executables = []release.Executable{{OS: "linux", Arch: "arm64", Path: t.TempDir()}}
		}, "not a regular file"},
		{"bad manifest", func(s *release.PackSpec) { s.Manifest = []byte(`{"version":2}`) }, "manifest version 2"},
		{"protocol 4 only", func(s *release.PackSpec) { s.Manifest = release.ManifestJSON([]string{"4.0"}) }, "neither 5.x nor 6.x"},
		{"signing fails", func(s *release.PackSpec) {
			s.Sign = func([]byte) ([]byte, error) { return nil, errors.New("no card in the reader") }
		}, "no card in the reader"},
		{"empty signature", func(s *release.PackSpec) {
			s.Sign = func([]byte) ([]byte, error) { return nil, nil }
		}, "empty signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := release.PackSpec{Type: "example", Version: "1.0.0", Executables: slices.Clone(exes)}
			tt.edit(&spec)
			dir := filepath.Join(t.TempDir(), "dist")
			_, err := release.Pack(dir, spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pack = %v, want an error with %q", err, tt.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Pack left %s behind (%v)", dir, err)
			}
		})
	}

	t.Run("non-empty directory", func(t *testing.T) {
		dir := t.TempDir()
		keep := filepath.Join(dir, "old.zip")
		if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := release.Pack(dir, release.PackSpec{Type: "example", Version: "1.0.0", Executables: exes})
		if err == nil || !strings.Contains(err.Error(), "is not empty") || registry.KindOf(err) != registry.Conflict {
			t.Fatalf("Pack = %v, want a Conflict saying the directory is not empty", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("Pack changed the non-empty directory: %d entries", len(entries))
		}
	})

	t.Run("existing empty directory stays", func(t *testing.T) {
		dir := t.TempDir()
		spec := release.PackSpec{Type: "example", Version: "1.0.0", Executables: exes,
			Sign: func([]byte) ([]byte, error) { return nil, errors.New("refused") }}
		if _, err := release.Pack(dir, spec); err == nil {
			t.Fatal("Pack succeeded with a failing signer")
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 0 {
			t.Errorf("after a failure the given directory holds %d entries (%v), want it empty", len(entries), err)
		}
	})
}

// TestPackDocs checks that documentation given to Pack is written as
// DocsName and listed in SHA256SUMS, so that the signature covers it.
func TestPackDocs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dist")
	docs := []byte("\x1f\x8b a documentation archive")
	packed, err := release.Pack(dir, release.PackSpec{Type: "example", Version: "1.0.0", Executables: executables(t)[:1], Docs: docs})
	if err != nil {
		t.Fatal(err)
	}
	name := release.DocsName("example", "1.0.0")
	if name != "terraform-provider-example_1.0.0_docs.tar.gz" || !release.IsDocsName(name) || release.DocsNames("example", "1.0.0")[0] != name {
		t.Errorf("DocsName = %q", name)
	}
	var names []string
	for _, f := range packed.Files {
		names = append(names, f.Name)
	}
	if !slices.Contains(names, name) {
		t.Fatalf("Pack wrote %v, without %s", names, name)
	}
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || !bytes.Equal(got, docs) {
		t.Errorf("%s = %q, %v", name, got, err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, release.SumsName("example", "1.0.0")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sums), fileDigest(t, filepath.Join(dir, name))+"  "+name+"\n") {
		t.Errorf("SHA256SUMS does not list %s:\n%s", name, sums)
	}
	for _, n := range []string{"terraform-provider-x_1.0.0_docs.zip", "terraform-provider-x_1_docs.tar.gz"} {
		if !release.IsDocsName(n) {
			t.Errorf("IsDocsName(%q) = false", n)
		}
	}
	for _, n := range []string{"docs.tar.gz", "terraform-provider-x_1.0.0_linux_amd64.zip", "terraform-provider-x_1.0.0_docs.tgz"} {
		if release.IsDocsName(n) {
			t.Errorf("IsDocsName(%q) = true", n)
		}
	}
}
