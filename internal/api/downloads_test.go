package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// stored stores content in s's blob store, as a publish does before it
// writes the rows naming it (the index checks), and returns its digest.
func stored(t *testing.T, s *trovetest.Server, content string) string {
	t.Helper()
	d := sum(content)
	if err := s.Blobs.Put(t.Context(), d, int64(len(content)), strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	return d
}

// seedDownloads stores provider acme/widget 1.0.0 (linux_amd64,
// darwin_arm64) and module acme/net/aws 1.0.0 in a public namespace acme.
func seedDownloads(t *testing.T, s *trovetest.Server) {
	t.Helper()
	idx := s.Index
	ctx := t.Context()
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	v := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"6.0"}, PublishedAt: time.Now(),
		SHASumsDigest: stored(t, s, "sums"), SHASumsSignatureDigest: stored(t, s, "sig"),
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
			ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: time.Now()}}
	for _, p := range []string{"linux_amd64", "darwin_arm64"} {
		os, arch, _ := strings.Cut(p, "_")
		v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: arch, Filename: "terraform-provider-widget_1.0.0_" + p + ".zip", SHA256: stored(t, s, p), Size: 1})
	}
	if err := idx.CreateProviderVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: stored(t, s, "net"), ArchiveFormat: "tar.gz", ArchiveSize: 1, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// get answers a GET of path without credentials and returns its status.
func get(t *testing.T, hc *http.Client, base, path string) (int, []byte) {
	t.Helper()
	resp, err := hc.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// TestDownloadCounts downloads through the protocols and reads the counts
// through the API: at once on the same server (pending counts), and from
// the index after a flush.
func TestDownloadCounts(t *testing.T) {
	s := trovetest.Start(t)
	seedDownloads(t, s)
	ctx := t.Context()
	hc := s.HTTPClient()
	const n = 5
	for range n {
		if st, body := get(t, hc, s.URL, "/v1/providers/acme/widget/1.0.0/download/linux/amd64"); st != http.StatusOK {
			t.Fatalf("provider download: %d %s", st, body)
		}
		if st, body := get(t, hc, s.URL, "/v1/modules/acme/net/aws/1.0.0/download"); st != http.StatusNoContent {
			t.Fatalf("module download: %d %s", st, body)
		}
	}
	get(t, hc, s.URL, "/v1/providers/acme/widget/1.0.0/download/darwin/arm64")
	get(t, hc, s.URL, "/v1/providers/acme/widget/1.0.0/download/windows/amd64") // 404: not counted
	get(t, hc, s.URL, "/v1/mirror/"+strings.TrimPrefix(s.URL, "https://")+"/acme/widget/1.0.0.json")

	c, err := client.New(s.URL, s.AdminToken, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		pv, err := c.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		byPlatform := map[string]int64{}
		for _, p := range pv.Platforms {
			byPlatform[p.OS+"_"+p.Arch] = p.Downloads
		}
		if pv.Downloads != n+1 || byPlatform["linux_amd64"] != n || byPlatform["darwin_arm64"] != 1 {
			t.Errorf("%s: provider version downloads %d, by platform %v; want %d, linux_amd64 %d, darwin_arm64 1", when, pv.Downloads, byPlatform, n+1, n)
		}
		pd, err := c.GetProvider(ctx, "acme", "widget")
		if err != nil || len(pd.Versions) != 1 || pd.Versions[0].Downloads != n+1 {
			t.Errorf("%s: provider detail %+v, %v; want %d downloads", when, pd.Versions, err, n+1)
		}
		mv, err := c.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0")
		if err != nil || mv.Downloads != n {
			t.Errorf("%s: module version downloads %d, %v; want %d", when, mv.Downloads, err, n)
		}
		md, err := c.GetModule(ctx, "acme", "net", "aws")
		if err != nil || len(md.Versions) != 1 || md.Versions[0].Downloads != n {
			t.Errorf("%s: module detail %+v, %v; want %d downloads", when, md.Versions, err, n)
		}
		for _, path := range []string{"/v1/modules/acme", "/v1/modules/search?q=net", "/v1/modules/acme/net/aws", "/v1/modules/acme/net/aws/1.0.0"} {
			st, body := get(t, hc, s.URL, path)
			var doc struct {
				Downloads int64 `json:"downloads"`
				Modules   []struct {
					Downloads int64 `json:"downloads"`
				} `json:"modules"`
			}
			if err := json.Unmarshal(body, &doc); st != http.StatusOK || err != nil {
				t.Fatalf("GET %s: %d %s", path, st, body)
			}
			got := doc.Downloads
			if len(doc.Modules) == 1 {
				got = doc.Modules[0].Downloads
			}
			if got != n {
				t.Errorf("%s: GET %s shows %d downloads, want %d: %s", when, path, got, n, body)
			}
		}
	}
	check("before a flush")
	stored, err := s.Index.ProviderDownloads(ctx, "acme", "widget")
	if err != nil || len(stored) != 0 {
		t.Errorf("stored before a flush: %v, %v; want none", stored, err)
	}
	if err := s.Downloads.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a flush")
	stored, err = s.Index.ProviderDownloads(context.Background(), "acme", "widget")
	if err != nil || registry.DownloadTotal(stored) != n+1 {
		t.Errorf("stored after a flush: %v, %v; want %d in all", stored, err, n+1)
	}
}
