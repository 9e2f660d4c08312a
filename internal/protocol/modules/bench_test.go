package modules

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
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
	w.n += len(b)
	return len(b), nil
}

func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// benchService returns a Service on a real SQLite index holding
// acme/network/aws in n versions, and 200 other modules.
func benchService(b *testing.B, n int) *Service {
	idx := sqlitetest.NewIndex(b)
	if err := idx.CreateNamespace(b.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	add := func(name, version string) {
		v := registry.ModuleVersion{
			Namespace: "acme", Name: name, System: "aws", Version: version, ArchiveFormat: "tar.gz", ArchiveSize: 4096,
			ArchiveDigest: fmt.Sprintf("%064x", len(name)*1000+len(version)), Description: "Module " + name,
			Metadata: []byte(`{"root":{"inputs":[]}}`), PublishedAt: time.Now(),
		}
		if err := idx.CreateModuleVersion(b.Context(), v); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		add("network", fmt.Sprintf("%d.%d.%d", i/100, i%100/10, i%10))
	}
	for i := range 200 {
		add(fmt.Sprintf("module-%03d", i), "1.0.0")
	}
	signer := signedurl.New([]byte("0123456789abcdef0123456789abcdef"), 15*time.Minute)
	counter, err := downloads.New(downloads.Options{Store: idx}) // downloads are counted, as by trove serve
	if err != nil {
		b.Fatal(err)
	}
	return New(idx, signer, &url.URL{Scheme: "https", Host: "trove.test"}, nil, WithDownloadCounter(counter))
}

// benchServe runs GET path through the service's routes.
func benchServe(b *testing.B, s *Service, path string, want int, every func()) {
	mux := http.NewServeMux()
	s.Register(mux)
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &discardWriter{h: http.Header{}}
	mux.ServeHTTP(w, req) // warm the cache
	if w.status != want {
		b.Fatalf("status %d, want %d", w.status, want)
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
	if w.status != want {
		b.Fatalf("status %d, want %d", w.status, want)
	}
}

// BenchmarkVersions30 is the versions document from the cache.
func BenchmarkVersions30(b *testing.B) {
	benchServe(b, benchService(b, 30), "/v1/modules/acme/network/aws/versions", http.StatusOK, nil)
}

// BenchmarkVersionsMixedCase is Terraform's request with the user's
// spelling, which is normalized before the cache lookup.
func BenchmarkVersionsMixedCase(b *testing.B) {
	benchServe(b, benchService(b, 30), "/v1/modules/Acme/Network/aws/versions", http.StatusOK, nil)
}

// BenchmarkVersions30Uncached reads the index on every request.
func BenchmarkVersions30Uncached(b *testing.B) {
	s := benchService(b, 30)
	benchServe(b, s, "/v1/modules/acme/network/aws/versions", http.StatusOK, func() { s.Invalidate("acme", "network", "aws") })
}

// BenchmarkDownload is the download answer from the cache: one signed URL.
func BenchmarkDownload(b *testing.B) {
	benchServe(b, benchService(b, 30), "/v1/modules/acme/network/aws/0.2.9/download", http.StatusNoContent, nil)
}

// BenchmarkDownloadParallel is BenchmarkDownload from all CPUs.
func BenchmarkDownloadParallel(b *testing.B) {
	s := benchService(b, 30)
	mux := http.NewServeMux()
	s.Register(mux)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/v1/modules/acme/network/aws/0.2.9/download", nil)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			w.reset()
			mux.ServeHTTP(w, req)
			if w.status != http.StatusNoContent {
				b.Errorf("status %d", w.status)
				return
			}
		}
	})
}

// BenchmarkSearch is a search page read from the index.
func BenchmarkSearch(b *testing.B) {
	benchServe(b, benchService(b, 30), "/v1/modules/search?q=module-1&limit=15", http.StatusOK, nil)
}

// BenchmarkDownloadMix is the download answer of 200 modules in turn,
// like the load harness's mix of distinct documents: the per-version memo
// of signed URLs is looked up cold, as under load.
func BenchmarkDownloadMix(b *testing.B) {
	s := benchService(b, 30)
	mux := http.NewServeMux()
	s.Register(mux)
	var reqs []*http.Request
	w := &discardWriter{h: http.Header{}}
	for i := range 200 {
		r := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/v1/modules/acme/module-%03d/aws/1.0.0/download", i), nil)
		w.reset()
		mux.ServeHTTP(w, r) // warm the cache
		if w.status != http.StatusNoContent {
			b.Fatalf("status %d", w.status)
		}
		reqs = append(reqs, r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w.reset()
		mux.ServeHTTP(w, reqs[i%len(reqs)])
		i++
	}
	if w.status != http.StatusNoContent {
		b.Fatalf("status %d", w.status)
	}
}
