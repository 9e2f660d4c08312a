package providers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
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

func benchVersions(b *testing.B, n int) *countingIndex {
	idx := newIndex(b)
	for i := range n {
		idx.put(b, version(fmt.Sprintf("%d.%d.%d", i/100, i%100/10, i%10), "darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"))
	}
	return idx
}

// benchServe runs GET path through mux on the cache-hit path.
func benchServe(b *testing.B, mux http.Handler, path string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &discardWriter{h: http.Header{}}
	mux.ServeHTTP(w, req) // warm the cache
	if w.status != http.StatusOK {
		b.Fatalf("status %d", w.status)
	}
	b.SetBytes(int64(w.n))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		mux.ServeHTTP(w, req)
	}
	if w.status != http.StatusOK {
		b.Fatalf("status %d", w.status)
	}
}

// benchMux serves idx's documents as trove serve does: downloads are
// counted (WithDownloadCounter).
func benchMux(b *testing.B, idx *countingIndex) *http.ServeMux {
	counter, err := downloads.New(downloads.Options{Store: idx.Index})
	if err != nil {
		b.Fatal(err)
	}
	f := newFixture(b, idx, WithDownloadCounter(counter))
	mux := http.NewServeMux()
	f.svc.Register(mux)
	return mux
}

// BenchmarkStaticBaseline is the yardstick: the same routes serving
// precomputed bytes from memory with no lookup at all.
func BenchmarkStaticBaseline(b *testing.B) {
	body := make([]byte, 3000)
	mux := http.NewServeMux()
	mux.HandleFunc(RouteVersions, func(w http.ResponseWriter, r *http.Request) {
		_, _ = r.PathValue("namespace"), r.PathValue("type")
		w.Header()["Content-Type"] = contentTypeJSON
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	benchServe(b, mux, "/v1/providers/acme/widget/versions")
}

func BenchmarkVersions30(b *testing.B) {
	benchServe(b, benchMux(b, benchVersions(b, 30)), "/v1/providers/acme/widget/versions")
}

func BenchmarkVersions2000(b *testing.B) {
	benchServe(b, benchMux(b, benchVersions(b, 2000)), "/v1/providers/acme/widget/versions")
}

func BenchmarkDownload(b *testing.B) {
	benchServe(b, benchMux(b, benchVersions(b, 30)), "/v1/providers/acme/widget/0.1.5/download/linux/amd64")
}

// BenchmarkDownloadParallel is BenchmarkDownload from all CPUs: the
// download counter's contention on one key.
func BenchmarkDownloadParallel(b *testing.B) {
	mux := benchMux(b, benchVersions(b, 30))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/0.1.5/download/linux/amd64", nil)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			w.reset()
			mux.ServeHTTP(w, req)
		}
	})
}

// BenchmarkVersionsParallel measures lock contention on the hit path.
func BenchmarkVersionsParallel(b *testing.B) {
	mux := benchMux(b, benchVersions(b, 30))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/versions", nil)
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			w.reset()
			mux.ServeHTTP(w, req)
		}
	})
}

// renderInput returns n versions with five platforms each, as the index
// lists them (in no particular order).
func renderInput(n int) []registry.ProviderVersion {
	vs := make([]registry.ProviderVersion, n)
	for i := range vs {
		vs[i] = version(fmt.Sprintf("%d.%d.%d", i%7, i/7%100, i/700), "darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64")
	}
	return vs
}

// BenchmarkRenderVersions2000 is the render of an uncached versions
// document of 2,000 versions, the index's answer given.
func BenchmarkRenderVersions2000(b *testing.B) {
	vs := renderInput(2000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := renderVersions("acme", "cloud", vs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderMirrorIndex2000 is the render of an uncached network
// mirror index.json of 2,000 versions, the index's answer given.
func BenchmarkRenderMirrorIndex2000(b *testing.B) {
	vs := renderInput(2000)
	versions := make([]string, len(vs))
	for i, v := range vs {
		versions[i] = v.Version
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := renderMirrorIndex(versions); err != nil {
			b.Fatal(err)
		}
	}
}
