package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
)

// clock is a settable time for the page cache's maximum age.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// cacheService is a Service with what serving cached pages needs, on
// clock c, its page cache bounded to limit bytes.
func cacheService(t *testing.T, c *clock, limit int) *Service {
	t.Helper()
	s := benchService(t)
	s.opt.Now = c.now
	s.pages = newPageCache("web pages", c.now, limit, nil)
	return s
}

// settle waits until no page of s.pages is being rendered; the cache's
// figures are the synchronization, not time.
func settle(t *testing.T, s *Service) {
	t.Helper()
	for i := 0; s.pages.Stats().Renders != 0; i++ {
		if i > 10_000_000 {
			t.Fatal("a rendering never ends")
		}
		runtime.Gosched()
	}
}

// versions is a page build whose page says "version N", N counting the
// builds; a build waits for gate when it is set.
type versions struct {
	mu     sync.Mutex
	n      int
	gate   chan struct{}
	inside chan struct{} // told when a build waits at the gate
}

func (p *versions) build(context.Context) (string, string, any, error) {
	p.mu.Lock()
	p.n++
	n, gate, inside := p.n, p.gate, p.inside
	p.mu.Unlock()
	if gate != nil {
		inside <- struct{}{}
		<-gate
	}
	return "Page", "error", struct {
		Title, Message string
		Status         int
	}{"Page", fmt.Sprintf("version %d", n), 200}, nil
}

func (p *versions) builds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// hold makes the next builds wait until the returned function is called.
func (p *versions) hold() (release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gate := make(chan struct{})
	p.gate, p.inside = gate, make(chan struct{}, 16)
	return func() {
		p.mu.Lock()
		p.gate = nil
		p.mu.Unlock()
		close(gate)
	}
}

// get serves key through the cache to visitor v and returns the body.
func get(t *testing.T, s *Service, v *visit, path, key string, build pageBuild) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	w := httptest.NewRecorder()
	if err := s.cached(w, r, v, key, build); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPageCacheServesStaleWhileOneRenderRuns(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	if body := get(t, s, &visit{}, "/p", "k", p.build).Body.String(); !strings.Contains(body, "version 1") {
		t.Fatalf("first page:\n%s", body)
	}
	c.add(pageCacheMaxAge)
	release := p.hold()
	// Both get the old page at once, while one rendering waits.
	for range 2 {
		if body := get(t, s, &visit{}, "/p", "k", p.build).Body.String(); !strings.Contains(body, "version 1") {
			t.Fatalf("a page past its maximum age was not served while rendered again:\n%s", body)
		}
	}
	if st := s.pages.Stats(); st.Renders != 1 || st.Entries != 1 {
		t.Fatalf("the page past its maximum age is not rendered again once: %+v", st)
	}
	<-p.inside
	release()
	settle(t, s)
	if n := p.builds(); n != 2 {
		t.Errorf("%d renderings, want 2 (one again for two requests)", n)
	}
	if body := get(t, s, &visit{}, "/p", "k", p.build).Body.String(); !strings.Contains(body, "version 2") {
		t.Errorf("the page rendered again is not served:\n%s", body)
	}
	if n := p.builds(); n != 2 {
		t.Errorf("%d renderings, want 2: the new page is fresh", n)
	}
}

func TestPageCacheInvalidateDropsStalePages(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	get(t, s, &visit{}, "/p", "k", p.build)
	get(t, s, &visit{}, "/p", "k", p.build)
	if n := p.builds(); n != 1 {
		t.Fatalf("%d renderings of a cached page", n)
	}
	c.add(2 * pageCacheMaxAge)
	s.Invalidate()
	if body := get(t, s, &visit{}, "/p", "k", p.build).Body.String(); !strings.Contains(body, "version 2") {
		t.Errorf("a page of before an invalidation was served:\n%s", body)
	}
}

// TestPageCacheRenderAfterInvalidate checks that a request that comes
// after an invalidation does not get the page of a rendering that began
// before it.
func TestPageCacheRenderAfterInvalidate(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	release := p.hold()
	first := make(chan string)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		w := httptest.NewRecorder()
		_ = s.cached(w, r, &visit{}, "k", p.build)
		first <- w.Body.String()
	}()
	<-p.inside // rendering version 1, of before the change
	s.Invalidate()
	p.mu.Lock()
	p.gate = nil // the second rendering does not wait
	p.mu.Unlock()
	second := make(chan string)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "/p", nil)
		w := httptest.NewRecorder()
		_ = s.cached(w, r, &visit{}, "k", p.build)
		second <- w.Body.String()
	}()
	select {
	case body := <-second:
		if !strings.Contains(body, "version 2") {
			t.Errorf("a request after an invalidation got the page of a rendering before it:\n%s", body)
		}
	case <-time.After(time.Minute): // a deadlock guard, not a speed check
		t.Fatal("a request after an invalidation waits for a rendering that began before it")
	}
	release()
	if body := <-first; !strings.Contains(body, "version 1") {
		t.Errorf("first request:\n%s", body)
	}
	if body := get(t, s, &visit{}, "/p", "k", p.build).Body.String(); !strings.Contains(body, "version 2") {
		t.Errorf("the page rendered before the invalidation was kept:\n%s", body)
	}
}

// TestPageCacheByteBudget checks that the pages kept stay within the
// cache's bytes, the most recently used ones kept, and that a page larger
// than an eighth of the cache is served but not kept.
func TestPageCacheByteBudget(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	const limit = 1 << 20
	s := cacheService(t, c, limit)
	page := func(size int, builds *int) pageBuild {
		return func(context.Context) (string, string, any, error) {
			*builds++
			return "Page", "error", struct {
				Title, Message string
				Status         int
			}{"Page", strings.Repeat("x", size), 200}, nil
		}
	}
	var n int
	for i := range 30 {
		get(t, s, &visit{}, "/p", fmt.Sprint("k", i), page(100<<10, &n))
		get(t, s, &visit{}, "/p", "k0", page(100<<10, &n)) // k0 is used all along
		if st := s.pages.Stats(); st.Bytes > limit {
			t.Fatalf("%d bytes kept, limit %d", st.Bytes, limit)
		}
	}
	if s.pages.Lookup(allPages, "k0") == nil || s.pages.Lookup(allPages, "k29") == nil {
		t.Error("the pages used most recently were dropped")
	}
	if s.pages.Stats().Entries >= 30 {
		t.Error("no page was dropped")
	}
	var huge int
	for range 2 {
		get(t, s, &visit{}, "/huge", "huge", page(200<<10, &huge)) // more than an eighth
	}
	if huge != 2 || s.pages.Lookup(allPages, "huge") != nil {
		t.Errorf("a page larger than an eighth of the cache was kept (%d renderings)", huge)
	}
}

// TestCachedPageLayouts checks that a cached page is the page the
// layout renders for each visitor: the anonymous page kept as it is,
// another address's "next" link, a signed-in visitor's name and CSRF
// token, each with an ETag that revalidates.
func TestCachedPageLayouts(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	alice := &visit{p: auth.Principal{User: registry.User{Name: "alice"}}, sessionID: "tok-1"}
	signedIn := get(t, s, alice, "/p", "k", p.build) // renders the part
	anon := get(t, s, &visit{}, "/p", "k", p.build)
	other := get(t, s, &visit{}, "/p?x=1", "k", p.build)
	for name, w := range map[string]*httptest.ResponseRecorder{"anonymous": anon, "other address": other, "signed in": signedIn} {
		v, path := &visit{}, "/p"
		switch name {
		case "other address":
			path = "/p?x=1"
		case "signed in":
			v = alice
		}
		// What the page renders without the cache.
		r := httptest.NewRequest(http.MethodGet, path, nil)
		want := httptest.NewRecorder()
		s.render(want, r, v, http.StatusOK, "Page", "error", struct {
			Title, Message string
			Status         int
		}{"Page", "version 1", 200})
		if w.Body.String() != want.Body.String() {
			t.Errorf("%s: cached page differs from the rendered one:\n%s\n---\n%s", name, w.Body, want.Body)
		}
		if w.Header().Get("ETag") != want.Header().Get("ETag") || w.Header().Get("Content-Length") != want.Header().Get("Content-Length") ||
			w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("Vary") != "Cookie, Accept-Encoding" {
			t.Errorf("%s: headers %v, want %v", name, w.Header(), want.Header())
		}
		r = httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("If-None-Match", w.Header().Get("ETag"))
		rw := httptest.NewRecorder()
		if err := s.cached(rw, r, v, "k", p.build); err != nil || rw.Code != http.StatusNotModified {
			t.Errorf("%s: revalidation answered %d, %v", name, rw.Code, err)
		}
	}
	if !strings.Contains(signedIn.Body.String(), "alice") || strings.Contains(anon.Body.String(), "alice") ||
		anon.Body.String() == other.Body.String() {
		t.Error("the layouts are not the visitors'")
	}
	if anon.Header().Get("ETag") == other.Header().Get("ETag") || anon.Header().Get("ETag") == signedIn.Header().Get("ETag") {
		t.Error("different pages have the same ETag")
	}
	if n := p.builds(); n != 1 {
		t.Errorf("%d renderings, want 1", n)
	}
}

// TestPageCacheRefreshFailureDropsPage checks that a page whose
// rendering in the background fails (it was deleted, say) is no longer
// served: the next request renders it and gets the error.
func TestPageCacheRefreshFailureDropsPage(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	get(t, s, &visit{}, "/p", "k", p.build)
	c.add(pageCacheMaxAge)
	gone := func(context.Context) (string, string, any, error) { return "", "", nil, errNotFound }
	get(t, s, &visit{}, "/p", "k", gone) // the old page, while rendering fails
	settle(t, s)
	r := httptest.NewRequest(http.MethodGet, "/p", nil)
	if err := s.cached(httptest.NewRecorder(), r, &visit{}, "k", gone); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("after a failed rendering: %v, want NotFound", err)
	}
}

// TestCachedPageGzip checks the gzip variant of a cached page: sent to an
// anonymous visitor who accepts gzip, with its own ETag and
// Content-Length, for GET, HEAD and If-None-Match, made once however
// many requests ask; never to a signed-in visitor (whose layout is made
// per request) nor to a request that refuses gzip.
func TestCachedPageGzip(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	p := &versions{}
	do := func(v *visit, method string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/p", nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		if err := s.cached(w, r, v, "k", p.build); err != nil {
			t.Fatal(err)
		}
		return w
	}
	plain := do(&visit{}, http.MethodGet)
	gz := do(&visit{}, http.MethodGet, "Accept-Encoding", "gzip, deflate, br")
	gzLen := gz.Body.Len()
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != plain.Body.String() || gz.Header().Get("Content-Encoding") != "gzip" ||
		gz.Header().Get("Content-Length") != strconv.Itoa(gzLen) || gz.Header().Get("Vary") != "Cookie, Accept-Encoding" ||
		gz.Header().Get("Etag") == plain.Header().Get("Etag") || gz.Header().Get("Content-Security-Policy") == "" {
		t.Fatalf("gzip page: %v", gz.Header())
	}
	e := s.pages.Lookup(allPages, "k")
	if e.Gzip() != e.Gzip() {
		t.Error("the variant is made again")
	}
	if w := do(&visit{}, http.MethodGet, "Accept-Encoding", "gzip", "If-None-Match", gz.Header().Get("Etag")); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("revalidating the gzip page: %d", w.Code)
	}
	if w := do(&visit{}, http.MethodGet, "Accept-Encoding", "gzip", "If-None-Match", plain.Header().Get("Etag")); w.Code != http.StatusOK {
		t.Errorf("the identity tag revalidated the gzip page: %d", w.Code)
	}
	if w := do(&visit{}, http.MethodHead, "Accept-Encoding", "gzip"); w.Code != http.StatusOK || w.Body.Len() != 0 ||
		w.Header().Get("Content-Length") != gz.Header().Get("Content-Length") || w.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("HEAD of the gzip page: %d %v", w.Code, w.Header())
	}
	for _, ae := range []string{"identity", "gzip;q=0", "*;q=0", "br", strings.Repeat("gzipp, ", 8000)} {
		if w := do(&visit{}, http.MethodGet, "Accept-Encoding", ae); w.Header().Get("Content-Encoding") != "" || w.Body.String() != plain.Body.String() {
			t.Errorf("Accept-Encoding %.30q: compressed", ae)
		}
	}
	alice := &visit{p: auth.Principal{User: registry.User{Name: "alice"}}, sessionID: "tok-1"}
	if w := do(alice, http.MethodGet, "Accept-Encoding", "gzip"); w.Header().Get("Content-Encoding") != "" || !strings.Contains(w.Body.String(), "alice") {
		t.Errorf("a signed-in visitor's page: %v", w.Header())
	}
	if n := p.builds(); n != 1 {
		t.Errorf("%d renderings, want 1", n)
	}
}

// TestModuleSectionsCached checks that a module version's metadata is
// rendered once per content: the same bytes give the same rendered
// sections, other bytes (another README) their own, and metadata that
// is not JSON fails without being kept.
func TestModuleSectionsCached(t *testing.T) {
	s := benchService(t)
	ctx := t.Context()
	a := []byte(`{"root":{"readme":"# A\n\nfirst"},"submodules":[{"path":"modules/x","name":"x","readme":"x"}]}`)
	b := []byte(`{"root":{"readme":"# B\n\nsecond"}}`)
	first, err := s.moduleSectionsOf(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.moduleSectionsOf(ctx, append([]byte(nil), a...))
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Error("the same metadata was rendered again")
	}
	if !first.hasMetadata || !strings.Contains(string(first.root.Readme), "first") || len(first.submodules) != 1 {
		t.Errorf("sections of a: %+v", first)
	}
	other, err := s.moduleSectionsOf(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if other == first || !strings.Contains(string(other.root.Readme), "second") || len(other.submodules) != 0 {
		t.Errorf("sections of b: %+v", other)
	}
	none, err := s.moduleSectionsOf(ctx, nil)
	if err != nil || none.hasMetadata {
		t.Errorf("no metadata: %+v, %v", none, err)
	}
	for range 2 {
		if _, err := s.moduleSectionsOf(ctx, []byte(`{"root":`)); err == nil {
			t.Error("broken metadata rendered")
		}
	}
}
