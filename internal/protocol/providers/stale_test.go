package providers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/signedurl"
)

// settle yields until no render runs in the service's cache (the cache
// reports it; nothing here waits for time to pass).
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	for i := 0; f.svc.cache.Stats().Renders > 0; i++ {
		if i > 10_000_000 {
			t.Fatal("a render never finished")
		}
		runtime.Gosched()
	}
}

// passThrough lets every later index read proceed.
func passThrough(idx *countingIndex) {
	go func() {
		for r := range idx.hold {
			close(r)
		}
	}()
}

// TestStaleServedWhileOneRefreshRuns: past 7/8 of the maximum age, requests
// get the cached document at once while one background render reads the
// index; its result then replaces the document.
func TestStaleServedWhileOneRefreshRuns(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	f := newFixture(t, idx, WithMaxAge(time.Minute))
	path := "/v1/providers/acme/widget/versions"
	first := f.do(t, http.MethodGet, path)
	idx.put(t, version("1.1.0", "linux_amd64")) // published through another replica
	f.clock.Add(55 * time.Second)               // past 7/8 of the maximum age: stale
	reads := idx.reads.Load()
	idx.hold = make(chan chan struct{})

	for i := range 10 {
		r := f.do(t, http.MethodGet, path) // answered while the refresh is held
		if r.status != http.StatusOK || r.header.Get("ETag") != first.header.Get("ETag") {
			t.Fatalf("stale request %d: %d %s, want the cached document", i, r.status, r.body)
		}
	}
	release := <-idx.hold // the one refresh has read the index
	if got := idx.reads.Load() - reads; got != 1 {
		t.Fatalf("%d index reads for 10 stale requests, want 1", got)
	}
	close(release)
	passThrough(idx)
	f.settle(t)
	if r := f.do(t, http.MethodGet, path); !strings.Contains(string(r.body), `"1.1.0"`) {
		t.Fatalf("after the refresh: %s, want the new version", r.body)
	}
	if got := idx.reads.Load() - reads; got != 1 {
		t.Fatalf("%d index reads in all, want 1", got)
	}
	close(idx.hold)
}

// TestInvalidateDuringRefresh: a background render that read the index
// before a publish must not store its result after the invalidation.
func TestInvalidateDuringRefresh(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	f := newFixture(t, idx, WithMaxAge(time.Minute))
	path := "/v1/providers/acme/widget/versions"
	f.do(t, http.MethodGet, path)
	f.clock.Add(55 * time.Second)
	idx.hold = make(chan chan struct{})
	if r := f.do(t, http.MethodGet, path); r.status != http.StatusOK {
		t.Fatalf("stale request: %d", r.status)
	}
	release := <-idx.hold                       // the refresh read the old state
	idx.put(t, version("1.1.0", "linux_amd64")) // the publish commits...
	f.svc.Invalidate("acme", "widget")          // ...and invalidates
	close(release)
	passThrough(idx)
	f.settle(t)
	if r := f.do(t, http.MethodGet, path); !strings.Contains(string(r.body), `"1.1.0"`) {
		t.Fatalf("a refresh that raced with Invalidate was stored: %s", r.body)
	}
	close(idx.hold)
}

// TestDownloadStaleAtURLWindowTurn: right after the signer's window
// turned, the document is served once more while it is rendered again,
// and its URLs still have at least 7/16 of the lifetime left; later in
// the window it is rendered before answering (TestDownloadFollowsURLWindow).
func TestDownloadStaleAtURLWindowTurn(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")), WithMaxAge(time.Hour))
	path := "/v1/providers/acme/widget/1.2.0/download/linux/amd64"
	const ttl = 10 * time.Minute // the fixture's signer
	// Move to 1 s after the next window starts.
	turn := f.clock.Now().Truncate(ttl / 2).Add(ttl / 2)
	first := f.do(t, http.MethodGet, path)
	f.clock.Add(turn.Sub(f.clock.Now()) + time.Second)
	reads := f.idx.reads.Load()
	stale := f.do(t, http.MethodGet, path)
	if stale.header.Get("ETag") != first.header.Get("ETag") {
		t.Fatalf("just after the window turned the request waited for a new document")
	}
	u, err := url.Parse(unmarshal[string](t, decodeObject(t, stale.body)["download_url"]))
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := strconv.ParseInt(u.Query().Get("expires"), 10, 64)
	if left := time.Unix(exp, 0).Sub(f.clock.Now()); left < ttl*7/16 {
		t.Fatalf("a stale download document's URL expires in %s, want at least %s", left, ttl*7/16)
	}
	f.settle(t)
	if f.idx.reads.Load() != reads+1 {
		t.Fatalf("%d index reads after the stale answer, want 1 background render", f.idx.reads.Load()-reads)
	}
	renewed := f.do(t, http.MethodGet, path)
	if renewed.header.Get("ETag") == first.header.Get("ETag") || f.idx.reads.Load() != reads+1 {
		t.Fatalf("the background render did not replace the document")
	}

	// Past the first eighth of a window the old document is not served.
	f.clock.Add(ttl/2 + ttl/16)
	reads = f.idx.reads.Load()
	late := f.do(t, http.MethodGet, path)
	if late.header.Get("ETag") == renewed.header.Get("ETag") || f.idx.reads.Load() != reads+1 {
		t.Fatalf("a document of the previous window was served past its first eighth")
	}
}

// arrivedAt is a ResponseWriter that carries the time its request
// arrived (reqtime.Carrier), as the server's middleware writer does.
type arrivedAt struct {
	*httptest.ResponseRecorder
	at time.Time
}

func (w arrivedAt) RequestTime() time.Time { return w.at }

// TestDownloadWindowJudgedAtRequestTime: without WithClock, whether a
// download document signed in an earlier URL window may still be served
// is judged at the time the request arrived (reqtime.Of), not by reading
// the clock again: a request that arrived past the first eighth of the
// next window (by the signer's clock) gets a new document, where the
// clock read at once, still in the first window, would serve the old one.
func TestDownloadWindowJudgedAtRequestTime(t *testing.T) {
	const ttl = 10 * time.Minute
	clock := &fakeClock{t: time.Now()}
	base, _ := url.Parse("https://trove.example")
	svc := New(newIndex(t, version("1.2.0", "linux_amd64")), signedurl.New([]byte("test key"), ttl).WithClock(clock.Now), base, nil, WithMaxAge(time.Hour))
	get := func() string {
		t.Helper()
		w := arrivedAt{httptest.NewRecorder(), clock.Now()}
		svc.ServeDownload(w, httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/1.2.0/download/linux/amd64", nil),
			"acme", "widget", "1.2.0", "linux", "amd64")
		if w.Code != http.StatusOK {
			t.Fatalf("download document: %d %s", w.Code, w.Body)
		}
		return w.Header().Get("ETag")
	}
	first := get()
	if again := get(); again != first {
		t.Fatal("setup: the document was not cached")
	}
	// A quarter of a window into the next one: past its first eighth.
	now := clock.Now()
	clock.Add(now.Truncate(ttl / 2).Add(ttl/2 + ttl/8).Sub(now))
	if late := get(); late == first {
		t.Fatal("a request that arrived past the first eighth of the next URL window was served the previous window's document")
	}
}
