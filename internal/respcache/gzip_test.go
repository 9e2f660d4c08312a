package respcache

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	huge := strings.Repeat("br;q=0.5, ", 6000) // a 60 KB header: linear work
	for header, want := range map[string]bool{
		"":                           false,
		"gzip":                       true,
		"GZIP":                       true,
		"x-gzip":                     true,
		"gzip, deflate, br":          true,
		" deflate ,  gzip ;q=0.5 ":   true,
		"gzip;q=0":                   false,
		"gzip; q=0.000":              false,
		"gzip;Q=0.":                  false,
		"gzip;q=0.001":               true,
		"gzip;q=1":                   true,
		"gzip;q=0, *":                false, // an explicit refusal beats the wildcard
		"*":                          true,
		"*;q=0":                      false,
		"*;q=0, gzip":                true,
		"identity":                   false,
		"identity;q=0":               false, // identity is served anyway
		"deflate, br":                false,
		"gzipx":                      false,
		"gzip;q=0, gzip":             false, // a refusal is not taken back
		"gzip;q=0.0000":              true,  // not a valid zero: read as a weight
		",,,;;;===":                  false,
		"gzip;q":                     true,
		huge:                         false,
		huge + "gzip":                true,
		"\x00gzip\x00":               false,
		"gzip;q=0;level=9, gzip;q=1": false,
	} {
		if got := AcceptsGzip([]string{header}); got != want {
			t.Errorf("AcceptsGzip(%.40q) = %v, want %v", header, got, want)
		}
	}
	if !AcceptsGzip([]string{"br", "gzip"}) || AcceptsGzip(nil) {
		t.Error("several header lines are not read together")
	}
}

func TestAcceptsGzipDoesNotAllocate(t *testing.T) {
	h := []string{"deflate, gzip;q=0.8, br;q=0.9, *;q=0.1"}
	if n := testing.AllocsPerRun(100, func() { AcceptsGzip(h) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// gunzip decompresses b or fails the test.
func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestServeGzip checks the answers of a compressible entry to every kind
// of request: the variant with its own ETag and Content-Length for
// clients that accept gzip, identity for the others, Vary on both, HEAD,
// If-None-Match against the variant served, and one compression however
// many requests ask.
func TestServeGzip(t *testing.T) {
	c, _, _ := newTest(t, func(o *Options) { o.GzipMinBytes = DefaultGzipMinBytes })
	doc := `{"versions":[` + strings.Repeat(`{"version":"1.0.0","protocols":["5.0"]},`, 100)
	large := mustLoad(t, c, "acme/widget", "large", nil, func(context.Context) (Rendered[int], error) {
		return Rendered[int]{Body: []byte(doc), Tail: []byte(`{}]}`)}, nil
	})
	small := mustLoad(t, c, "acme/widget", "small", nil, body(`{"versions":[]}`, new(atomic.Int64)))
	if !large.Compressible() || small.Compressible() || small.Gzip() != nil {
		t.Fatal("compressible: the large document only")
	}
	before := c.Stats().Bytes
	// Concurrent first requests: one compression, one variant.
	var wg sync.WaitGroup
	variants := make([]*Variant, 8)
	for i := range variants {
		wg.Add(1)
		go func() { defer wg.Done(); variants[i] = large.Gzip() }()
	}
	wg.Wait()
	for _, v := range variants {
		if v != variants[0] {
			t.Fatal("the variant was made more than once")
		}
	}
	v := variants[0]
	if got := gunzip(t, v.Body); got != doc+`{}]}` {
		t.Fatalf("the variant is not the document: %q", got)
	}
	if c.Stats().Bytes != before+int64(len(v.Body)) {
		t.Errorf("the variant is not accounted: %d bytes, want %d", c.Stats().Bytes, before+int64(len(v.Body)))
	}
	if v.ETag[0] == large.ETag[0] || !strings.HasPrefix(v.ETag[0], `"`) || !strings.HasSuffix(v.ETag[0], `-gz"`) {
		t.Errorf("variant ETag %s, entry's %s", v.ETag[0], large.ETag[0])
	}

	json, noCache := []string{"application/json"}, []string{"no-cache"}
	serve := func(e *Entry[int], method, acceptEncoding, inm string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/doc", nil)
		if acceptEncoding != "" {
			r.Header.Set("Accept-Encoding", acceptEncoding)
		}
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		w := httptest.NewRecorder()
		e.Serve(w, r, json, noCache)
		return w
	}
	for _, tc := range []struct {
		name, method, ae, inm string
		status                int
		gz                    bool
	}{
		{"gzip GET", http.MethodGet, "gzip", "", 200, true},
		{"gzip HEAD", http.MethodHead, "gzip, br", "", 200, true},
		{"wildcard", http.MethodGet, "*", "", 200, true},
		{"identity only", http.MethodGet, "identity", "", 200, false},
		{"refused", http.MethodGet, "gzip;q=0", "", 200, false},
		{"none", http.MethodGet, "", "", 200, false},
		{"gzip revalidated", http.MethodGet, "gzip", v.ETag[0], 304, true},
		{"identity revalidated", http.MethodGet, "", large.ETag[0], 304, false},
		// A tag of the other variant names another representation.
		{"gzip with identity tag", http.MethodGet, "gzip", large.ETag[0], 200, true},
		{"identity with gzip tag", http.MethodGet, "", v.ETag[0], 200, false},
	} {
		w := serve(large, tc.method, tc.ae, tc.inm)
		h := w.Header()
		wantTag, wantLen, wantBody := large.ETag[0], large.Length[0], doc+`{}]}`
		if tc.gz {
			wantTag, wantLen, wantBody = v.ETag[0], v.Length[0], string(v.Body)
		}
		if tc.method == http.MethodHead || tc.status == 304 {
			wantBody = ""
		}
		if w.Code != tc.status || h.Get("Etag") != wantTag || h.Get("Vary") != "Accept-Encoding" || w.Body.String() != wantBody {
			t.Errorf("%s: %d, ETag %s (want %s), Vary %q, %d body bytes (want %d)",
				tc.name, w.Code, h.Get("Etag"), wantTag, h.Get("Vary"), w.Body.Len(), len(wantBody))
		}
		if tc.status == 200 {
			enc := ""
			if tc.gz {
				enc = "gzip"
			}
			if h.Get("Content-Encoding") != enc || (h.Get("Content-Length") != wantLen && !(tc.method == http.MethodGet && !tc.gz)) {
				t.Errorf("%s: Content-Encoding %q, Content-Length %q (want %s)", tc.name, h.Get("Content-Encoding"), h.Get("Content-Length"), wantLen)
			}
		}
	}
	// A small document never varies.
	if w := serve(small, http.MethodGet, "gzip", ""); w.Header().Get("Content-Encoding") != "" || w.Header().Get("Vary") != "" {
		t.Errorf("a small document was compressed: %v", w.Header())
	}
	// Over a real connection, Go's transport asks for gzip and decompresses.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { large.Serve(w, r, json, noCache) }))
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !resp.Uncompressed || string(got) != doc+`{}]}` {
		t.Errorf("Go's client: uncompressed %v, body %.60q", resp.Uncompressed, got)
	}
}

// TestGzipVariantLeavesBudgetWithEntry checks that the variant's bytes
// leave the budget with its entry, and that a variant made for an entry
// already dropped is not accounted.
func TestGzipVariantLeavesBudgetWithEntry(t *testing.T) {
	c, _, _ := newTest(t, func(o *Options) { o.GzipMinBytes = 16 })
	e := mustLoad(t, c, "o", "d", nil, body(strings.Repeat("a", 4096), new(atomic.Int64)))
	e.Gzip()
	c.Invalidate("o", "d")
	if b := c.Stats().Bytes; b != 0 {
		t.Errorf("%d bytes after the entry was dropped", b)
	}
	e = mustLoad(t, c, "o", "d", nil, body(strings.Repeat("b", 4096), new(atomic.Int64)))
	c.InvalidateAll()
	e.Gzip()
	if b := c.Stats().Bytes; b != 0 {
		t.Errorf("%d bytes after a variant of a dropped entry was made", b)
	}
}

func TestMaxEntryBytes(t *testing.T) {
	c, _, _ := newTest(t, func(o *Options) { o.MaxEntryBytes = 4096 })
	var calls atomic.Int64
	big := body(strings.Repeat("x", 8192), &calls)
	if e := mustLoad(t, c, "o", "big", nil, big); len(e.Body) != 8192 {
		t.Fatal("the render is not handed to its request")
	}
	if c.Lookup("o", "big") != nil || c.Stats().Entries != 0 {
		t.Error("an entry over MaxEntryBytes was kept")
	}
	mustLoad(t, c, "o", "small", nil, body("x", &calls))
	if c.Lookup("o", "small") == nil {
		t.Error("a small entry was not kept")
	}
}

func TestFreshFor(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.FreshFor = maxAge / 8 })
	e := mustLoad(t, c, "o", "d", nil, body("x", new(atomic.Int64)))
	clk.Add(maxAge / 8)
	if s := c.State(e); s != Stale {
		t.Errorf("after FreshFor: %v, want stale", s)
	}
	clk.Add(maxAge/2 - maxAge/8)
	if s := c.State(e); s != Stale {
		t.Errorf("before MaxAge: %v, want stale", s)
	}
	clk.Add(maxAge / 2)
	if s := c.State(e); s != Expired {
		t.Errorf("at MaxAge: %v, want expired", s)
	}
}

// discard is a ResponseWriter that keeps nothing, for benchmarks.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

func benchmarkServe(b *testing.B, acceptEncoding string) {
	c := New[string, string, int](Options{MaxAge: maxAge, GzipMinBytes: DefaultGzipMinBytes})
	doc := []byte(`{"versions":[` + strings.Repeat(`{"version":"1.0.0","protocols":["5.0"]},`, 200) + `{}]}`)
	e, err := c.Load(context.Background(), "acme/widget", "versions", nil, func(context.Context) (Rendered[int], error) {
		return Rendered[int]{Body: doc}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/versions", nil)
	if acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", acceptEncoding)
	}
	json, noCache := []string{"application/json"}, []string{"no-cache"}
	w := &discard{h: http.Header{}}
	e.Serve(w, r, json, noCache) // makes the variant
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		if e := c.Lookup("acme/widget", "versions"); e != nil {
			e.Serve(w, r, json, noCache)
		}
	}
}

// BenchmarkHit is a cache hit answered uncompressed (8 KB document).
func BenchmarkHit(b *testing.B) { benchmarkServe(b, "") }

// BenchmarkHitGzip is the same hit for a client that accepts gzip: the
// variant made once is served.
func BenchmarkHitGzip(b *testing.B) { benchmarkServe(b, "gzip, deflate, br") }
