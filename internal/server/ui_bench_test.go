package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/loadtest"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// uiWriter is a ResponseWriter that, like net/http, gives every request
// an empty header map, and counts the body bytes. When the header is
// sent it does what net/http's server does with it: clone the map the
// handler filled and write it, sorted, to the connection (here
// io.Discard), so the cost of each header a page sends shows.
type uiWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *uiWriter) Header() http.Header { return w.h }
func (w *uiWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
		_ = w.h.Clone().Write(io.Discard)
	}
}
func (w *uiWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.n += len(b)
	return len(b), nil
}

// BenchmarkServeUI serves cached web UI pages and searches to anonymous
// browsers through the whole handler of `trove serve` as app.New builds
// it with the defaults (middleware, metrics, the access log at info to
// io.Discard, routing, the session cookie check, the page cache), over
// an index seeded like the load harness's (loadtest.Seed: modules with
// READMEs, inputs and outputs, providers with many versions). Every
// request carries a browser's Accept and User-Agent headers; the gzip
// cases also its Accept-Encoding. Each case cycles through distinct
// addresses, like the harness's "UI pages" and "UI search" rows: a cost
// per request that a cached page should not have (parsing, per-request
// maps, hashing, allocation) shows here, where
// web.BenchmarkCachedPage, which calls the page cache directly, cannot
// see it.
func BenchmarkServeUI(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	spec := loadtest.Spec{
		Namespace:      "acme",
		Providers:      []loadtest.ProviderSpec{{Type: "small", Versions: 30}, {Type: "large", Versions: 400}},
		TotalVersions:  1000,
		FillerVersions: 200,
		Platforms:      []loadtest.OSArch{{OS: "linux", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}},
		ArchiveType:    "small", ArchivePlatform: loadtest.OSArch{OS: "linux", Arch: "amd64"}, ArchiveBytes: 1 << 10,
	}
	for _, n := range []string{"network", "m001", "m002", "m003", "m004", "m005", "m006", "m007"} {
		spec.Modules = append(spec.Modules, loadtest.ModuleSpec{Name: n, System: "aws", Versions: 10})
	}
	st := sqlitetest.Open(b, dir)
	if _, err := loadtest.Seed(ctx, st.Index, st.Blobs, spec, filepath.Join(b.TempDir(), "archive")); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil { // the server below opens the data directory
		b.Fatal(err)
	}
	cfg, err := config.Load([]string{"--data-dir", dir, "--listen", "127.0.0.1:1", "--public-url", "https://registry.example.com"},
		func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{Listener: ln, AccessLog: &server.AccessLog{W: io.Discard, Level: slog.LevelInfo}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	h := a.Handler()

	pages := []string{"/", "/namespaces/acme", "/providers/acme/small", "/providers/acme/large/1.2.3", "/providers/acme/p00001/0.1.9"}
	searches := []string{"/search?q=vpc", "/search?q=m00", "/search?q=network&kind=module", "/search?q=&kind=module&namespace=acme",
		"/search?q=vpc+subnets", "/search?q=gcp", "/search?q=acme&page=2"}
	for _, m := range spec.Modules {
		pages = append(pages, "/modules/acme/"+m.Name+"/aws", "/modules/acme/"+m.Name+"/aws/0.0.5")
	}
	browser := http.Header{
		"Accept":          {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		"User-Agent":      {"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},
		"Accept-Language": {"en-GB,en;q=0.5"},
	}
	for _, c := range []struct {
		name  string
		paths []string
		gzip  bool
	}{
		{"Pages", pages, false},
		{"PagesGzip", pages, true},
		{"Search", searches, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			reqs := make([]*http.Request, len(c.paths))
			w := &uiWriter{}
			for i, p := range c.paths {
				reqs[i] = httptest.NewRequest(http.MethodGet, p, nil)
				for k, v := range browser {
					reqs[i].Header[k] = v
				}
				if c.gzip {
					reqs[i].Header["Accept-Encoding"] = []string{"gzip, deflate, br, zstd"}
				}
				*w = uiWriter{h: http.Header{}}
				h.ServeHTTP(w, reqs[i]) // render and cache: the loop measures hits
				if w.status != http.StatusOK || w.n == 0 {
					b.Fatalf("%s: status %d, %d bytes", p, w.status, w.n)
				}
				if got := w.h.Get("Content-Encoding") == "gzip"; got != c.gzip {
					b.Fatalf("%s: gzip %v, want %v", p, got, c.gzip)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				*w = uiWriter{h: make(http.Header)}
				h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
			}
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		})
	}
}
