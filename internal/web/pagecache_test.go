package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	s.pages = newPageCache(c.now, limit)
	return s
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
	if cur, _ := s.pages.get("k"); cur == nil || !cur.refreshing.Load() {
		t.Fatal("the page past its maximum age is not rendered again")
	}
	<-p.inside
	release()
	s.pages.background.Wait()
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

func TestPageCacheDropsLeastRecentlyUsed(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, 1<<20)
	part := func(i int) *cachedPart {
		return &cachedPart{key: fmt.Sprint("k", i), page: make([]byte, 100<<10)}
	}
	for i := range 9 {
		s.pages.put(part(i))
		if i == 0 {
			continue
		}
		if p, _ := s.pages.get("k0"); p == nil { // k0 used after each put
			t.Fatalf("k0 dropped after %d puts", i+1)
		}
	}
	s.pages.put(part(9))
	s.pages.put(part(10)) // over 1 MiB: k1 goes, the least recently used
	for i, want := range []bool{true, false, true, true, true, true, true, true, true, true, true} {
		if p, _ := s.pages.get(fmt.Sprint("k", i)); (p != nil) != want {
			t.Errorf("k%d kept: %v, want %v", i, p != nil, want)
		}
	}
	if n, b := s.pages.stats(); b > 1<<20 || n != 10 {
		t.Errorf("%d parts of %d bytes, limit %d", n, b, 1<<20)
	}
	s.pages.put(&cachedPart{key: "huge", page: make([]byte, 200<<10)}) // more than an eighth
	if p, _ := s.pages.get("huge"); p != nil {
		t.Error("a part larger than an eighth of the cache was kept")
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
			w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("Vary") != "Cookie" {
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
	s.pages.background.Wait()
	r := httptest.NewRequest(http.MethodGet, "/p", nil)
	if err := s.cached(httptest.NewRecorder(), r, &visit{}, "k", gone); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("after a failed rendering: %v, want NotFound", err)
	}
}
