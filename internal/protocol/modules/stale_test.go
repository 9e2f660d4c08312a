package modules

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// heldIndex counts ListModuleVersions and, when hold is set, hands each
// read's release channel to the test after the index answered.
type heldIndex struct {
	*sqlite.Index
	reads atomic.Int64
	hold  chan chan struct{}
}

func (h *heldIndex) ListModuleVersions(ctx context.Context, ns, name, system string) ([]registry.ModuleVersion, error) {
	vs, err := h.Index.ListModuleVersions(ctx, ns, name, system)
	h.reads.Add(1)
	if h.hold != nil {
		release := make(chan struct{})
		h.hold <- release
		<-release
	}
	return vs, err
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type staleFixture struct {
	idx   *heldIndex
	svc   *Service
	clock *testClock
	mux   *http.ServeMux
}

func newStaleFixture(t *testing.T) *staleFixture {
	x := sqlitetest.NewIndex(t)
	if err := x.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	f := &staleFixture{idx: &heldIndex{Index: x}, clock: &testClock{t: time.Unix(1_700_000_000, 0)}}
	f.publish(t, "1.0.0")
	signer := signedurl.New([]byte("0123456789abcdef0123456789abcdef"), 15*time.Minute).WithClock(f.clock.Now)
	f.svc = New(f.idx, signer, &url.URL{Scheme: "https", Host: "trove.test"}, nil, WithMaxAge(time.Minute), WithClock(f.clock.Now))
	f.mux = http.NewServeMux()
	f.svc.Register(f.mux)
	return f
}

func (f *staleFixture) publish(t *testing.T, version string) {
	v := registry.ModuleVersion{
		Namespace: "acme", Name: "network", System: "aws", Version: version, ArchiveFormat: "tar.gz", ArchiveSize: 4096,
		ArchiveDigest: strings.Repeat("ab", 32), PublishedAt: time.Now(),
	}
	if err := f.idx.CreateModuleVersion(context.Background(), v); err != nil {
		t.Error(err)
	}
}

func (f *staleFixture) get(path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func (f *staleFixture) settle(t *testing.T) {
	t.Helper()
	for i := 0; f.svc.cache.Stats().Renders > 0; i++ {
		if i > 10_000_000 {
			t.Fatal("a render never finished")
		}
		runtime.Gosched()
	}
}

func (f *staleFixture) passThrough() {
	go func() {
		for r := range f.idx.hold {
			close(r)
		}
	}()
}

const versionsPath = "/v1/modules/acme/network/aws/versions"

// TestStaleServedWhileOneRefreshRuns: past 7/8 of the maximum age, the
// versions document and the download answer come from the cached entry
// at once while one background read of the index replaces it.
func TestStaleServedWhileOneRefreshRuns(t *testing.T) {
	f := newStaleFixture(t)
	first := f.get(versionsPath)
	f.publish(t, "1.1.0") // through another replica: no invalidation here
	f.clock.Add(55 * time.Second)
	reads := f.idx.reads.Load()
	f.idx.hold = make(chan chan struct{})
	for i := range 5 {
		if r := f.get(versionsPath); r.Code != http.StatusOK || r.Header().Get("ETag") != first.Header().Get("ETag") {
			t.Fatalf("stale request %d: %d %s, want the cached document", i, r.Code, r.Body)
		}
		if r := f.get("/v1/modules/acme/network/aws/1.0.0/download"); r.Code != http.StatusNoContent {
			t.Fatalf("stale download %d: %d", i, r.Code)
		}
	}
	release := <-f.idx.hold
	if got := f.idx.reads.Load() - reads; got != 1 {
		t.Fatalf("%d index reads for 10 stale requests, want 1", got)
	}
	close(release)
	f.passThrough()
	f.settle(t)
	if r := f.get(versionsPath); !strings.Contains(r.Body.String(), `"1.1.0"`) {
		t.Fatalf("after the refresh: %s, want the new version", r.Body)
	}
	if got := f.idx.reads.Load() - reads; got != 1 {
		t.Fatalf("%d index reads in all, want 1", got)
	}
	close(f.idx.hold)
}

// TestInvalidateDuringRender: a read of the index that started before an
// invalidation (a miss, or a background refresh) is not stored.
func TestInvalidateDuringRender(t *testing.T) {
	for _, stale := range []bool{false, true} {
		name := "miss"
		if stale {
			name = "refresh"
		}
		t.Run(name, func(t *testing.T) {
			f := newStaleFixture(t)
			if stale {
				f.get(versionsPath)
				f.clock.Add(55 * time.Second)
			}
			f.idx.hold = make(chan chan struct{})
			done := make(chan int)
			go func() { done <- f.get(versionsPath).Code }()
			release := <-f.idx.hold // the read saw the old state
			f.publish(t, "1.1.0")
			f.svc.Invalidate("acme", "network", "aws")
			close(release)
			f.passThrough()
			if code := <-done; code != http.StatusOK {
				t.Fatalf("racing request: %d", code)
			}
			f.settle(t)
			if r := f.get(versionsPath); !strings.Contains(r.Body.String(), `"1.1.0"`) {
				t.Fatalf("a read that raced with Invalidate was stored: %s", r.Body)
			}
			close(f.idx.hold)
		})
	}
}

// TestCacheBytesBoundsModules: the byte budget bounds the cached modules.
func TestCacheBytesBoundsModules(t *testing.T) {
	f := newStaleFixture(t)
	other := registry.ModuleVersion{
		Namespace: "acme", Name: "storage", System: "aws", Version: "1.0.0", ArchiveFormat: "tar.gz", ArchiveSize: 4096,
		ArchiveDigest: strings.Repeat("cd", 32), PublishedAt: time.Now(),
	}
	if err := f.idx.CreateModuleVersion(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	svc := New(f.idx, f.svc.signer, &url.URL{Scheme: "https", Host: "trove.test"}, nil, WithCacheBytes(1))
	mux := http.NewServeMux()
	svc.Register(mux)
	for _, path := range []string{versionsPath, "/v1/modules/acme/storage/aws/versions"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
	}
	if st := svc.cache.Stats(); st.Entries != 1 {
		t.Fatalf("cache %+v with a 1-byte budget: want only the module stored last", st)
	}
}
