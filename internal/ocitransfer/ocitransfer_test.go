package ocitransfer

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// The reading side's checks against hostile documents. The registry is
// go-containerregistry's in-process one: these tests are about the
// documents' shapes; internal/e2e TestOCIPushPull runs the real registry
// with tampered blobs.

// artifact describes a provider version to write, with knobs to break it.
type artifact struct {
	indexArtifactType string
	platforms         []string // os_arch
	layerMediaType    string
	layers            int // per platform manifest (default 1)
	unlistedZip       bool
	noReferrer        bool
	signer            *signingtest.Key
	layerSizeDelta    int64
	layerDigest       string // replaces the layer digest
}

func writeArtifact(t *testing.T, reg Registry, repo name.Repository, a artifact, key *signingtest.Key) {
	t.Helper()
	put := func(ref name.Reference, v any, mediaType string) oci.Descriptor {
		t.Helper()
		body, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Put(ref, rawManifest{body: body, mediaType: mediaType}, reg.Options...); err != nil {
			t.Fatal(err)
		}
		return oci.Descriptor{MediaType: mediaType, Digest: "sha256:" + sha256Hex(body), Size: int64(len(body))}
	}
	putDigest := func(v any, mediaType string) oci.Descriptor {
		body, _ := json.Marshal(v)
		return put(repo.Digest("sha256:"+sha256Hex(body)), v, mediaType)
	}
	blobOf := func(data []byte, mediaType string) oci.Descriptor {
		t.Helper()
		b := memBlob(data, mediaType)
		if err := remote.WriteLayer(repo, b, reg.Options...); err != nil {
			t.Fatal(err)
		}
		return oci.Descriptor{MediaType: mediaType, Digest: b.digest.String(), Size: b.size}
	}
	cfg := blobOf([]byte("{}"), oci.MediaTypeEmpty)
	var sums strings.Builder
	idx := oci.ImageIndex{SchemaVersion: 2, MediaType: oci.MediaTypeIndex, ArtifactType: oci.ArtifactProvider, Manifests: []oci.Descriptor{}}
	if a.indexArtifactType != "" {
		idx.ArtifactType = a.indexArtifactType
	}
	for _, p := range a.platforms {
		os, arch, _ := strings.Cut(p, "_")
		zipName := "terraform-provider-widget_1.0.0_" + p + ".zip"
		zip := blobOf([]byte("PK zip of "+p), oci.MediaTypeZip)
		if !a.unlistedZip {
			fmt.Fprintf(&sums, "%s  %s\n", strings.TrimPrefix(zip.Digest, "sha256:"), zipName)
		}
		layer := zip
		if a.layerMediaType != "" {
			layer.MediaType = a.layerMediaType
		}
		layer.Size += a.layerSizeDelta
		if a.layerDigest != "" {
			layer.Digest = a.layerDigest
		}
		layers := []oci.Descriptor{layer}
		for i := 1; i < a.layers; i++ {
			layers = append(layers, layer)
		}
		m := oci.Manifest{SchemaVersion: 2, MediaType: oci.MediaTypeManifest, ArtifactType: oci.ArtifactProviderTarget, Config: cfg, Layers: layers}
		d := putDigest(m, oci.MediaTypeManifest)
		d.ArtifactType = oci.ArtifactProviderTarget
		d.Platform = &oci.Platform{OS: os, Architecture: arch}
		idx.Manifests = append(idx.Manifests, d)
	}
	if a.unlistedZip {
		fmt.Fprintf(&sums, "%s  other.zip\n", strings.Repeat("ab", 32))
	}
	id := put(repo.Tag("1.0.0"), idx, oci.MediaTypeIndex)
	id.ArtifactType = idx.ArtifactType
	if a.noReferrer {
		return
	}
	signer := key
	if a.signer != nil {
		signer = a.signer
	}
	s := blobOf([]byte(sums.String()), oci.MediaTypeSHASums)
	sig := blobOf(signer.Sign([]byte(sums.String())), oci.MediaTypeSig)
	putDigest(oci.Manifest{SchemaVersion: 2, MediaType: oci.MediaTypeManifest, ArtifactType: oci.ArtifactSignature,
		Config: cfg, Subject: &id, Layers: []oci.Descriptor{s, sig}}, oci.MediaTypeManifest)
}

func TestReadProviderHostile(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	reg := Registry{Host: u.Host, Insecure: true}
	key := signingtest.NewKey(t, "acme")
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	keys := []registry.SigningKey{pub}
	two := []string{"linux_amd64", "darwin_arm64"}
	cases := []struct {
		name    string
		a       artifact
		wantErr string // "" for success
	}{
		{"valid", artifact{platforms: two}, ""},
		{"not a provider", artifact{platforms: two, indexArtifactType: "application/vnd.example"}, "is not an OpenTofu provider"},
		{"no platforms", artifact{}, "lists 0 platforms"},
		{"duplicate platform", artifact{platforms: []string{"linux_amd64", "linux_amd64"}}, "already listed"},
		{"two layers", artifact{platforms: two, layers: 2}, "exactly one layer"},
		{"layer not a zip", artifact{platforms: two, layerMediaType: "application/octet-stream"}, "exactly one layer"},
		{"zip not in SHA256SUMS", artifact{platforms: two, unlistedZip: true}, "not listed in the signed SHA256SUMS"},
		{"untrusted signer", artifact{platforms: two, signer: signingtest.NewKey(t, "mallory")}, "does not verify with a key the namespace trusts"},
		{"no SHA256SUMS artifact", artifact{platforms: two, noReferrer: true}, "no signed SHA256SUMS is attached"},
		{"layer size lies", artifact{platforms: two, layerSizeDelta: 3}, "but its descriptor says"},
		{"huge layer", artifact{platforms: two, layerSizeDelta: 8 << 30}, "more than the 4 GiB"},
		{"malformed layer digest", artifact{platforms: two, layerDigest: "sha256:../../etc"}, "not listed in the signed SHA256SUMS"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, err := reg.repo(fmt.Sprintf("acme/widget%d", i))
			if err != nil {
				t.Fatal(err)
			}
			writeArtifact(t, reg, repo, c.a, key)
			pv, err := readProvider(t.Context(), reg, repo, "1.0.0", keys, time.Now(), t.TempDir())
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("readProvider: %v", err)
				}
				if len(pv.zips) != 2 || pv.keyID != key.KeyID || !strings.HasSuffix(pv.filenames[0], ".zip") {
					t.Errorf("readProvider = %d zips, key %s, names %v", len(pv.zips), pv.keyID, pv.filenames)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("readProvider error = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestCheckDigest(t *testing.T) {
	good := "sha256:" + strings.Repeat("0a", 32)
	if err := checkDigest(good); err != nil {
		t.Errorf("checkDigest(%q) = %v", good, err)
	}
	for _, d := range []string{"", "sha256:", "sha512:" + strings.Repeat("0a", 64), "sha256:" + strings.Repeat("0A", 32),
		"sha256:" + strings.Repeat("0a", 31), "sha256:../" + strings.Repeat("0a", 31), good + "\n"} {
		if err := checkDigest(d); err == nil {
			t.Errorf("checkDigest(%q) accepted it", d)
		}
	}
}

func TestManifestCandidates(t *testing.T) {
	got := manifestCandidates([]string{"5.0"})
	want := []string{
		`{"version":1,"metadata":{"protocol_versions":["5.0"]}}` + "\n",
		`{"version":1,"metadata":{"protocol_versions":["5.0"]}}`,
		"{\n  \"version\": 1,\n  \"metadata\": {\n    \"protocol_versions\": [\"5.0\"]\n  }\n}\n",
	}
	for i, w := range want {
		if string(got[i]) != w {
			t.Errorf("candidate %d = %q, want %q", i, got[i], w)
		}
	}
}
