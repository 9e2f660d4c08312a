package releasetest_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestBuildPassesTheReleaseChecks checks a built release with the checks
// Trove applies on publish: upload order, SHA256SUMS, signature, zips and
// manifest.
func TestBuildPassesTheReleaseChecks(t *testing.T) {
	key := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		spec      releasetest.Spec
		wantNames []string
		protocols []string // nil: no manifest
	}{
		"two platforms with manifest": {
			spec: releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Protocols: []string{"5.0", "6.0"}},
			wantNames: []string{
				"terraform-provider-example_1.0.0_SHA256SUMS", "terraform-provider-example_1.0.0_SHA256SUMS.sig",
				"terraform-provider-example_1.0.0_manifest.json",
				"terraform-provider-example_1.0.0_linux_amd64.zip", "terraform-provider-example_1.0.0_darwin_arm64.zip",
			},
			protocols: []string{"5.0", "6.0"},
		},
		"one platform without manifest": {
			spec: releasetest.Spec{Type: "foo", Version: "0.1.0-rc.1", Platforms: []string{"windows_amd64"}, Payload: "x"},
			wantNames: []string{
				"terraform-provider-foo_0.1.0-rc.1_SHA256SUMS", "terraform-provider-foo_0.1.0-rc.1_SHA256SUMS.sig",
				"terraform-provider-foo_0.1.0-rc.1_windows_amd64.zip",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := releasetest.Build(t, key, tc.spec)
			var names []string
			for _, f := range r.Files {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Fatalf("files = %q, want %q", names, tc.wantNames)
			}
			sumsData := r.Files[0].Data
			if _, err := signing.VerifyDetached([]registry.SigningKey{pub}, sumsData, r.Files[1].Data); err != nil {
				t.Errorf("signature: %v", err)
			}
			sums, err := release.ParseSHA256SUMS(sumsData)
			if err != nil {
				t.Fatal(err)
			}
			if len(sums) != len(r.Files)-2 {
				t.Errorf("SHA256SUMS lists %d files, want %d", len(sums), len(r.Files)-2)
			}
			for _, s := range sums {
				if got := r.SHA256(s.Filename); got != s.Digest {
					t.Errorf("%s: SHA256SUMS says %s, file has %s", s.Filename, s.Digest, got)
				}
			}
			for _, p := range tc.spec.Platforms {
				data := r.ByName(r.ZipName(p))
				if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), tc.spec.Type, "linux", release.Limits{MaxEntries: 10, MaxUnpackedBytes: 1 << 20}); err != nil {
					t.Errorf("zip of %s: %v", p, err)
				}
			}
			manifest := r.ByName(r.Prefix() + "_manifest.json")
			if (manifest != nil) != (tc.protocols != nil) {
				t.Fatalf("manifest = %q, want one: %v", manifest, tc.protocols != nil)
			}
			if manifest != nil {
				got, err := release.ParseManifest(manifest)
				if err != nil || !slices.Equal(got, tc.protocols) {
					t.Errorf("manifest protocols = %v, %v; want %v", got, err, tc.protocols)
				}
			}
		})
	}
}

func TestBuildIsReproducibleAndPayloadVariesIt(t *testing.T) {
	key := signingtest.NewKey(t, "acme")
	spec := releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64"}}
	a, b := releasetest.Build(t, key, spec), releasetest.Build(t, key, spec)
	spec.Payload = "other"
	c := releasetest.Build(t, key, spec)
	zip := a.ZipName("linux_amd64")
	if !bytes.Equal(a.ByName(zip), b.ByName(zip)) || !bytes.Equal(a.Files[0].Data, b.Files[0].Data) {
		t.Error("two builds of one spec differ")
	}
	if bytes.Equal(a.ByName(zip), c.ByName(zip)) || bytes.Equal(a.Files[0].Data, c.Files[0].Data) {
		t.Error("a payload did not change the zip and SHA256SUMS")
	}
	if a.ByName("nothing") != nil || a.SHA256("nothing") != "" {
		t.Error("a missing file has content")
	}
}

func TestSourceAndWriteDir(t *testing.T) {
	r := releasetest.Build(t, signingtest.NewKey(t, "acme"), releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}})
	for range 2 { // each Source starts from the first file
		src := r.Source()
		for _, want := range r.Files {
			name, content, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(content)
			if name != want.Name || !bytes.Equal(got, want.Data) {
				t.Fatalf("Next = %s (%d bytes), want %s (%d bytes)", name, len(got), want.Name, len(want.Data))
			}
		}
		if _, _, err := src.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("Next after the last file = %v, want io.EOF", err)
		}
	}

	dir := t.TempDir()
	r.WriteDir(t, dir)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != len(r.Files) {
		t.Fatalf("dir holds %d files (%v), want %d", len(entries), err, len(r.Files))
	}
	for _, f := range r.Files {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s on disk differs: %v", f.Name, err)
		}
	}
}
