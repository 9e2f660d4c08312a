package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// discardWriter is a ResponseWriter that keeps nothing but, like
// net/http, gives every request an empty header map.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// benchService returns a Service on a real SQLite index and blob store
// holding the provider acme/widget in n versions of four platforms (as
// the load harness seeds them: one SHA256SUMS and signature blob shared)
// and the module acme/net/aws in 10 versions of one real archive.
func benchService(b *testing.B, n int) *Service {
	ctx := b.Context()
	st := sqlitetest.New(b)
	idx, blobs := st.Index, st.Blobs
	put := func(body []byte) (string, int64) { return st.Put(b, body), int64(len(body)) }
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	sums, _ := put([]byte("sums"))
	sig, _ := put([]byte("signature"))
	key := registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20), ASCIIArmor: "x", CreatedAt: time.Now()}
	for i := range n {
		ver := fmt.Sprintf("%d.%d.%d", i/100, i/10%10, i%10)
		v := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: ver, Protocols: []string{"6.0"}, PublishedAt: time.Now(),
			SHASumsDigest: sums, SHASumsSignatureDigest: sig, SigningKey: key}
		for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
			os, arch, _ := strings.Cut(p, "_")
			name := "terraform-provider-widget_" + ver + "_" + p + ".zip"
			s := sha256.Sum256([]byte(name))
			v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: arch, Filename: name, SHA256: hex.EncodeToString(s[:]), Size: 20 << 20})
		}
		if err := idx.CreateProviderVersion(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
	arch, size := put(testarchive.TarGz(b, map[string]string{"main.tf": "variable \"cidr\" {}\n"}))
	for i := range 10 {
		v := registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: fmt.Sprintf("1.0.%d", i),
			ArchiveDigest: arch, ArchiveFormat: "tar.gz", ArchiveSize: size, PublishedAt: time.Now()}
		if err := idx.CreateModuleVersion(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
	return New(Options{Index: idx, Blobs: blobs, PublicURL: &url.URL{Scheme: "https", Host: "trove.test"}})
}

// benchServe runs GET path (with OpenTofu's Accept header) through the
// service's routes; every, when set, runs before each request.
func benchServe(b *testing.B, s *Service, path string, every func()) {
	mux := http.NewServeMux()
	s.Register(mux)
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", MediaTypeIndex+", "+MediaTypeManifest)
	w := &discardWriter{h: http.Header{}}
	mux.ServeHTTP(w, req) // warm the cache (and pack the module zip)
	if w.status != http.StatusOK || w.n == 0 {
		b.Fatalf("GET %s: status %d, %d bytes", path, w.status, w.n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if every != nil {
			every()
		}
		w.reset()
		mux.ServeHTTP(w, req)
	}
	if w.status != http.StatusOK {
		b.Fatalf("status %d", w.status)
	}
}

// BenchmarkTagList200 is the tag list of a provider of 200 versions
// from the cache.
func BenchmarkTagList200(b *testing.B) {
	benchServe(b, benchService(b, 200), "/v2/acme/widget/tags/list", nil)
}

// BenchmarkTagList2000 is the tag list of a provider of 2,000 versions,
// more than one page (MaxTags), from the cache: the first page and its
// Link, as a client asks without a query.
func BenchmarkTagList2000(b *testing.B) {
	benchServe(b, benchService(b, 2000), "/v2/acme/widget/tags/list", nil)
}

// BenchmarkTagList200Uncached is the tag list's miss on every request:
// the version summaries of 200 versions read from the index (no
// platform, no document generated).
func BenchmarkTagList200Uncached(b *testing.B) {
	s := benchService(b, 200)
	benchServe(b, s, "/v2/acme/widget/tags/list", func() { s.InvalidateProvider("acme", "widget") })
}

// BenchmarkProviderIndexByTag is a version's image index by tag from the
// cache.
func BenchmarkProviderIndexByTag(b *testing.B) {
	benchServe(b, benchService(b, 200), "/v2/acme/widget/manifests/1.2.3", nil)
}

// BenchmarkProviderIndexByTagUncached generates the repository first.
func BenchmarkProviderIndexByTagUncached(b *testing.B) {
	s := benchService(b, 200)
	benchServe(b, s, "/v2/acme/widget/manifests/1.2.3", func() { s.InvalidateProvider("acme", "widget") })
}

// BenchmarkModuleManifestByTag is a module version's manifest by tag
// from the cache.
func BenchmarkModuleManifestByTag(b *testing.B) {
	benchServe(b, benchService(b, 1), "/v2/acme/modules/net/aws/manifests/1.0.3", nil)
}

// BenchmarkModuleManifestByTagUncached generates the module's repository
// first (its zips are packed already, as after the first request).
func BenchmarkModuleManifestByTagUncached(b *testing.B) {
	s := benchService(b, 1)
	benchServe(b, s, "/v2/acme/modules/net/aws/manifests/1.0.3", func() { s.InvalidateModule("acme", "net", "aws") })
}

// BenchmarkProviderIndexByTagVersionMiss generates the version's index
// (one version read from the index) with the tag list cached: the miss
// of a version not asked for before.
func BenchmarkProviderIndexByTagVersionMiss(b *testing.B) {
	s := benchService(b, 200)
	key := repoKey{kind: 'p', ns: "acme", name: "widget"}
	benchServe(b, s, "/v2/acme/widget/manifests/1.2.3", func() { s.cache.Invalidate(key, docKey{docVersion, "1.2.3"}) })
}

// BenchmarkPlatformManifestByDigest is the request that follows the
// index (the manifest of one platform, by digest) from the cache.
func BenchmarkPlatformManifestByDigest(b *testing.B) {
	s := benchService(b, 200)
	mux := http.NewServeMux()
	s.Register(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v2/acme/widget/manifests/1.2.3", nil))
	var idx ImageIndex
	if err := json.Unmarshal(w.Body.Bytes(), &idx); err != nil || len(idx.Manifests) == 0 {
		b.Fatalf("index: %v %s", err, w.Body)
	}
	benchServe(b, s, "/v2/acme/widget/manifests/"+idx.Manifests[0].Digest, nil)
}
