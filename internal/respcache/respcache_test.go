package respcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const maxAge = 40 * time.Second

type testCache = Cache[string, string, int]

func newTest(t *testing.T, mod func(*Options)) (*testCache, *clock, *bytes.Buffer) {
	t.Helper()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	var logs bytes.Buffer
	var mu sync.Mutex
	opt := Options{Name: "test", MaxAge: maxAge, Now: clk.Now, Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))}
	if mod != nil {
		mod(&opt)
	}
	return New[string, string, int](opt), clk, &logs
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// body renders a fixed body with a counter.
func body(s string, calls *atomic.Int64) RenderFunc[int] {
	return func(context.Context) (Rendered[int], error) {
		n := calls.Add(1)
		return Rendered[int]{Body: []byte(s), Value: int(n)}, nil
	}
}

// gate is a render that reports its start on started and waits for a
// value (or error) on release.
type gate struct {
	started chan struct{}
	release chan error
	calls   atomic.Int64
	body    string
}

func newGate(body string) *gate {
	return &gate{started: make(chan struct{}, 16), release: make(chan error, 16), body: body}
}

func (g *gate) render(context.Context) (Rendered[int], error) {
	n := g.calls.Add(1)
	g.started <- struct{}{}
	if err := <-g.release; err != nil {
		return Rendered[int]{}, err
	}
	return Rendered[int]{Body: []byte(g.body), Value: int(n)}, nil
}

// settle waits until no render is in progress (each done channel is
// closed after the render's result was stored), and until each
// background render that ended has handed its token on (to a render now
// in progress) or released it, which it does after closing its done
// channel.
func settle(c *testCache) {
	c.mu.Lock()
	var done []chan struct{}
	for _, f := range c.flights {
		done = append(done, f.done)
	}
	c.mu.Unlock()
	for _, d := range done {
		<-d
	}
	for {
		c.mu.Lock()
		background := 0
		for _, f := range c.flights {
			if f.background {
				background++
			}
		}
		held := len(c.refreshes)
		c.mu.Unlock()
		if held <= background {
			return
		}
		runtime.Gosched()
	}
}

// waitFor yields until cond holds; cond is the synchronization, not time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatalf("never happened: %s", what)
		}
		runtime.Gosched()
	}
}

func mustLoad(t *testing.T, c *testCache, o, d string, seen *Entry[int], r RenderFunc[int]) *Entry[int] {
	t.Helper()
	e, err := c.Load(t.Context(), o, d, seen, r)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEntryBodyETagLength(t *testing.T) {
	c, _, _ := newTest(t, nil)
	var calls atomic.Int64
	e := mustLoad(t, c, "acme/widget", "versions", nil, body(`{"versions":[]}`, &calls))
	if string(e.Body) != `{"versions":[]}` || e.Length[0] != "15" || len(e.ETag) != 1 || len(e.Length) != 1 {
		t.Fatalf("entry %q, length %v, etag %v", e.Body, e.Length, e.ETag)
	}
	if tag := e.ETag[0]; len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' || strings.HasPrefix(tag, "W/") {
		t.Fatalf("ETag %q is not a strong quoted tag", tag)
	}
	if got := c.Lookup("acme/widget", "versions"); got != e {
		t.Fatalf("Lookup after Load returned %p, want the loaded entry %p", got, e)
	}
	other := mustLoad(t, c, "acme/gadget", "versions", nil, body(`{"versions":[]}`, &calls))
	differs := mustLoad(t, c, "acme/thing", "versions", nil, body(`{"versions":[1]}`, &calls))
	if other.ETag[0] != e.ETag[0] || differs.ETag[0] == e.ETag[0] {
		t.Fatalf("equal bodies must have equal tags, others not: %s %s %s", e.ETag[0], other.ETag[0], differs.ETag[0])
	}
	if c.Lookup("acme/widget", "download") != nil {
		t.Fatalf("Lookup of a key never loaded returned an entry")
	}
}

func TestTailIsSentCoveredAndNotAccounted(t *testing.T) {
	c, _, _ := newTest(t, nil)
	tail := []byte(`,"keys":"` + strings.Repeat("k", 4000) + `"}`)
	render := func(head string) RenderFunc[int] {
		return func(context.Context) (Rendered[int], error) {
			return Rendered[int]{Body: []byte(head), Tail: tail}, nil
		}
	}
	a := mustLoad(t, c, "acme/widget", "1.0.0", nil, render(`{"v":"1.0.0"`))
	b := mustLoad(t, c, "acme/widget", "2.0.0", nil, render(`{"v":"2.0.0"`))
	var buf bytes.Buffer
	if err := a.WriteBody(&buf); err != nil || buf.String() != `{"v":"1.0.0"`+string(tail) {
		t.Fatalf("WriteBody wrote %.40q..., %v: want the body then the tail", buf.String(), err)
	}
	if a.Length[0] != strconv.Itoa(buf.Len()) {
		t.Errorf("Length %s, want %d (body and tail)", a.Length[0], buf.Len())
	}
	whole := mustLoad(t, c, "acme/gadget", "1.0.0", nil, body(buf.String(), new(atomic.Int64)))
	if whole.ETag[0] != a.ETag[0] || b.ETag[0] == a.ETag[0] {
		t.Errorf("ETags %s (head and tail), %s (same bytes whole), %s (other head): want the first two equal, the third not",
			a.ETag[0], whole.ETag[0], b.ETag[0])
	}
	if st := c.Stats(); st.Bytes-int64(len(buf.String())) >= int64(len(tail)) {
		t.Errorf("%d bytes accounted for three entries, two of them sharing a %d-byte tail: the tail must not be accounted", st.Bytes, len(tail))
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	c, _, _ := newTest(t, nil)
	var calls atomic.Int64
	mustLoad(t, c, "acme/widget", "versions", nil, body("x", &calls))
	o, d := "acme/widget", "versions"
	if n := testing.AllocsPerRun(100, func() {
		if e := c.Lookup(o, d); c.State(e) != Fresh {
			t.Fatal("not fresh")
		}
	}); n != 0 {
		t.Fatalf("Lookup and State allocate %.0f times", n)
	}
}

func TestFreshStaleExpired(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	for i := range 20 { // the fresh span is random per entry: check the bounds on many
		c.InvalidateAll()
		start := clk.Now()
		e := mustLoad(t, c, "o", "d", nil, body("x", &calls))
		at := func(d time.Duration) State {
			clk.t = start.Add(d)
			return c.State(e)
		}
		if s := at(maxAge*3/4 - 1); s != Fresh {
			t.Fatalf("entry %d at 3/4 MaxAge-1ns: %s, want fresh", i, s)
		}
		if s := at(maxAge * 7 / 8); s != Stale {
			t.Fatalf("entry %d at 7/8 MaxAge: %s, want stale", i, s)
		}
		if s := at(maxAge - 1); s != Stale {
			t.Fatalf("entry %d at MaxAge-1ns: %s, want stale", i, s)
		}
		if s := at(maxAge); s != Expired {
			t.Fatalf("entry %d at MaxAge: %s, want expired", i, s)
		}
		if got := e.Rendered(); !got.Equal(start) {
			t.Fatalf("Rendered %v, want %v", got, start)
		}
	}
	if s := c.State(nil); s != Expired {
		t.Fatalf("State(nil) = %s", s)
	}
}

// TestFreshnessCountsFromRenderStart: a slow render's entry ages from
// when the render started, not from when it was stored.
func TestFreshnessCountsFromRenderStart(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	g := newGate("x")
	done := make(chan *Entry[int])
	go func() { e, _ := c.Load(context.Background(), "o", "d", nil, g.render); done <- e }()
	<-g.started
	clk.Add(maxAge)
	g.release <- nil
	if e := <-done; c.State(e) != Expired {
		t.Fatalf("an entry whose render started MaxAge ago is %s", c.State(e))
	}
}

func TestLoadIsSingleFlight(t *testing.T) {
	c, _, _ := newTest(t, nil)
	g := newGate("x")
	const n = 8
	results := make(chan *Entry[int], n)
	go func() { results <- mustLoad(t, c, "o", "d", nil, g.render) }()
	<-g.started
	for range n - 1 {
		go func() { results <- mustLoad(t, c, "o", "d", nil, g.render) }()
	}
	waitFor(t, "the other requests wait for the render", func() bool { return c.Stats().Waiting == n-1 })
	if s := c.Stats(); s.Renders != 1 {
		t.Fatalf("%d renders in progress, want 1", s.Renders)
	}
	g.release <- nil
	first := <-results
	for range n - 1 {
		if e := <-results; e != first {
			t.Fatalf("waiters got another entry")
		}
	}
	if g.calls.Load() != 1 {
		t.Fatalf("%d renders for %d concurrent requests", g.calls.Load(), n)
	}
}

func TestLoadWaiterGivesUpRenderGoesOn(t *testing.T) {
	c, _, _ := newTest(t, nil)
	g := newGate("x")
	go func() { _, _ = c.Load(context.Background(), "o", "d", nil, g.render) }()
	<-g.started
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := c.Load(ctx, "o", "d", nil, g.render); errc <- err }()
	waitFor(t, "the second request waits", func() bool { return c.Stats().Waiting == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter whose context ended: %v", err)
	}
	if s := c.Stats(); s.Waiting != 0 || s.Renders != 1 {
		t.Fatalf("after the waiter left: %+v", s)
	}
	g.release <- nil
	settle(c)
	if c.Lookup("o", "d") == nil {
		t.Fatalf("the render was not stored after a waiter gave up")
	}
}

// TestRenderDetachedFromRequest: the request that starts a render may
// end; the render's context is not cancelled and has a deadline.
func TestRenderDetachedFromRequest(t *testing.T) {
	c, _, _ := newTest(t, func(o *Options) { o.RenderTimeout = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e, err := c.Load(ctx, "o", "d", nil, func(rctx context.Context) (Rendered[int], error) {
		if rctx.Err() != nil {
			return Rendered[int]{}, rctx.Err()
		}
		if _, ok := rctx.Deadline(); !ok {
			return Rendered[int]{}, errors.New("no deadline")
		}
		return Rendered[int]{Body: []byte("x")}, nil
	})
	if err != nil || e == nil {
		t.Fatalf("render with a cancelled request context: %v", err)
	}
}

func TestLoadReturnsEntryStoredSinceLookup(t *testing.T) {
	c, _, _ := newTest(t, nil)
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	c.Invalidate("o", "d")
	newer := mustLoad(t, c, "o", "d", nil, body("new", &calls))
	// A request that looked up old (and judged it unusable) gets newer
	// without a render.
	if e := mustLoad(t, c, "o", "d", old, body("third", &calls)); e != newer || calls.Load() != 2 {
		t.Fatalf("Load after a newer entry was stored: %q, %d renders", e.Body, calls.Load())
	}
	// The caller that judged the current entry unusable gets a render.
	if e := mustLoad(t, c, "o", "d", newer, body("third", &calls)); string(e.Body) != "third" {
		t.Fatalf("Load with the current entry as seen: %q, want a new render", e.Body)
	}
}

func TestLoadDoesNotReturnExpiredEntry(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge)
	if e := mustLoad(t, c, "o", "d", nil, body("new", &calls)); string(e.Body) != "new" {
		t.Fatalf("Load returned the expired entry %q", e.Body)
	}
}

// TestStaleServedWhileOneRefreshRuns: requests for a stale entry get it
// at once; one background render replaces it.
func TestStaleServedWhileOneRefreshRuns(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	for range 10 {
		e := c.Lookup("o", "d")
		if e != old || c.State(e) != Stale {
			t.Fatalf("lookup of the stale entry: %q %s", e.Body, c.State(e))
		}
		c.Revalidate("o", "d", e, g.render)
	}
	<-g.started
	if s := c.Stats(); s.Renders != 1 {
		t.Fatalf("%d renders for 10 stale hits, want 1", s.Renders)
	}
	if e := c.Lookup("o", "d"); e != old {
		t.Fatalf("the stale entry was not served during its refresh")
	}
	// A request for which the stale entry is not enough joins the refresh.
	joined := make(chan *Entry[int])
	go func() { joined <- mustLoad(t, c, "o", "d", old, g.render) }()
	waitFor(t, "the request joins the refresh", func() bool { return c.Stats().Waiting == 1 })
	g.release <- nil
	settle(c)
	e := c.Lookup("o", "d")
	if string(e.Body) != "new" || c.State(e) != Fresh || <-joined != e {
		t.Fatalf("after the refresh: %q %s", e.Body, c.State(e))
	}
	if g.calls.Load() != 1 {
		t.Fatalf("%d background renders", g.calls.Load())
	}
}

// TestMaxRefreshes: at most MaxRefreshes background renders run at once;
// a stale hit that finds them busy queues its render, which starts when
// one of them ends, and meanwhile the requests of every stale entry,
// queued or rendering, are answered from it without waiting.
func TestMaxRefreshes(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.MaxRefreshes = 2 })
	var calls atomic.Int64
	var stale []*Entry[int]
	for i := range 4 {
		stale = append(stale, mustLoad(t, c, fmt.Sprint(i), "d", nil, body("old", &calls)))
	}
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	for i, e := range stale {
		if !c.ShouldRevalidate(e) {
			t.Fatalf("ShouldRevalidate(%d) false for a stale entry never refreshed", i)
		}
		c.Revalidate(fmt.Sprint(i), "d", e, g.render)
		if c.ShouldRevalidate(e) {
			t.Fatalf("ShouldRevalidate(%d) true once its render started or was queued", i)
		}
	}
	<-g.started
	<-g.started
	if s := c.Stats(); s.Renders != 2 || s.Queued != 2 {
		t.Fatalf("stats %+v: want 2 background renders (the limit) and 2 queued", s)
	}
	// A request for any of them, rendering or queued, gets the old entry.
	for i := range stale {
		if e := c.Lookup(fmt.Sprint(i), "d"); e != stale[i] || c.State(e) != Stale {
			t.Fatalf("entry %d: %v in state %v while refreshes run or wait, want the stale one", i, e, c.State(e))
		}
	}
	c.Revalidate("2", "d", stale[2], g.render) // a later hit of a queued one queues nothing more
	if s := c.Stats(); s.Queued != 2 {
		t.Fatalf("stats %+v after a repeated hit: want 2 queued", s)
	}
	g.release <- nil // the first two end, each starting a queued one
	g.release <- nil
	<-g.started
	<-g.started
	g.release <- nil
	g.release <- nil
	settle(c)
	waitFor(t, "the queue to drain", func() bool { s := c.Stats(); return s.Renders == 0 && s.Queued == 0 })
	for i := range stale {
		if e := c.Lookup(fmt.Sprint(i), "d"); string(e.Body) != "new" {
			t.Fatalf("entry %d not refreshed", i)
		}
	}
	if n := g.calls.Load(); n != 4 {
		t.Fatalf("%d renders, want 4 (one per stale entry)", n)
	}
	if len(c.refreshes) != 0 {
		t.Fatalf("%d background render tokens held after every render ended", len(c.refreshes))
	}
}

// TestQueuedRefreshSkipped: a queued render whose entry was replaced,
// invalidated or expired meanwhile does not run, and gives its turn on.
func TestQueuedRefreshSkipped(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.MaxRefreshes = 1 })
	var calls atomic.Int64
	var stale []*Entry[int]
	for i := range 3 {
		stale = append(stale, mustLoad(t, c, fmt.Sprint(i), "d", nil, body("old", &calls)))
	}
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	for i, e := range stale {
		c.Revalidate(fmt.Sprint(i), "d", e, g.render)
	}
	<-g.started // entry 0 renders; 1 and 2 wait
	c.Invalidate("1", "d")
	g.release <- nil // 1 is skipped, 2 starts
	<-g.started
	g.release <- nil
	settle(c)
	waitFor(t, "the queue to drain", func() bool { s := c.Stats(); return s.Renders == 0 && s.Queued == 0 })
	if n := g.calls.Load(); n != 2 {
		t.Fatalf("%d renders, want 2 (the invalidated entry's skipped)", n)
	}
	if e := c.Lookup("1", "d"); e != nil {
		t.Fatalf("invalidated entry came back: %q", e.Body)
	}
	if e := c.Lookup("2", "d"); string(e.Body) != "new" {
		t.Fatalf("entry 2 = %q, want new", e.Body)
	}
	// Entry 0's render started before the invalidation of entry 1: its
	// result is not stored, and the stale entry may be rendered again.
	if e := c.Lookup("0", "d"); e != stale[0] || !c.ShouldRevalidate(e) {
		t.Fatalf("entry 0 after a render outdated by an invalidation: %q, ShouldRevalidate %v; want the stale one, true",
			e.Body, c.ShouldRevalidate(e))
	}

	// An entry that expires while queued is not rendered in the
	// background: the next request's Load renders it.
	a := mustLoad(t, c, "a", "d", nil, body("old", &calls))
	b := mustLoad(t, c, "b", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("a", "d", a, g.render)
	<-g.started
	c.Revalidate("b", "d", b, g.render)
	clk.Add(maxAge / 4) // both past their maximum age
	g.release <- nil
	settle(c)
	waitFor(t, "the queue to drain", func() bool { s := c.Stats(); return s.Renders == 0 && s.Queued == 0 })
	if n := g.calls.Load(); n != 3 {
		t.Fatalf("%d renders, want 3 (the expired queued one skipped)", n)
	}
	if !c.ShouldRevalidate(b) {
		t.Fatalf("a skipped entry stays marked as refreshing")
	}
	if len(c.refreshes) != 0 {
		t.Fatalf("%d background render tokens held after every render ended", len(c.refreshes))
	}
}

// TestRevalidateNotWhileLoadRenders: no background render starts while a
// Load of the same key renders.
func TestRevalidateNotWhileLoadRenders(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	go func() { _, _ = c.Load(context.Background(), "o", "d", old, g.render) }()
	<-g.started
	c.Revalidate("o", "d", old, body("other", &calls))
	if s := c.Stats(); s.Renders != 1 || calls.Load() != 1 {
		t.Fatalf("a background render started during a Load's render: %+v, %d renders", s, calls.Load())
	}
	g.release <- nil
	settle(c)
}

func TestRefreshErrorKeepsStaleEntryAndLogs(t *testing.T) {
	c, clk, logs := newTest(t, func(o *Options) { o.RetryAfter = 2 * time.Second })
	var calls atomic.Int64
	old := mustLoad(t, c, "acme/widget", "versions", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	if !c.ShouldRevalidate(old) {
		t.Fatalf("ShouldRevalidate false for a stale entry never refreshed")
	}
	c.Revalidate("acme/widget", "versions", old, g.render)
	<-g.started
	if c.ShouldRevalidate(old) {
		t.Fatalf("ShouldRevalidate true while its refresh runs")
	}
	g.release <- errors.New("index unreachable")
	settle(c)
	if e := c.Lookup("acme/widget", "versions"); e != old || c.State(e) != Stale {
		t.Fatalf("after a failed refresh the stale entry is gone")
	}
	if s := logs.String(); !strings.Contains(s, "index unreachable") || !strings.Contains(s, "acme/widget") {
		t.Fatalf("failed refresh not logged with its key and error: %q", s)
	}
	// No new background render before RetryAfter...
	if c.ShouldRevalidate(old) {
		t.Fatalf("ShouldRevalidate true right after a failure")
	}
	c.Revalidate("acme/widget", "versions", old, g.render)
	if s := c.Stats(); s.Renders != 0 {
		t.Fatalf("a refresh started again right after a failure")
	}
	// ...one after it.
	clk.Add(2 * time.Second)
	if !c.ShouldRevalidate(old) {
		t.Fatalf("ShouldRevalidate false after RetryAfter")
	}
	c.Revalidate("acme/widget", "versions", old, g.render)
	<-g.started
	g.release <- errors.New("still unreachable")
	settle(c)
	// Bounded: never served past MaxAge.
	clk.Add(maxAge / 8)
	if e := c.Lookup("acme/widget", "versions"); c.State(e) != Expired {
		t.Fatalf("a stale entry is %s at MaxAge", c.State(e))
	}
	if g.calls.Load() != 2 {
		t.Fatalf("%d refreshes, want 2", g.calls.Load())
	}
}

var errGone = errors.New("gone")

func TestRefreshDropErrorRemovesEntry(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.Drop = func(err error) bool { return errors.Is(err, errGone) } })
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("o", "d", old, func(context.Context) (Rendered[int], error) { return Rendered[int]{}, errGone })
	settle(c)
	if c.Lookup("o", "d") != nil {
		t.Fatalf("an entry whose document is gone was kept")
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 {
		t.Fatalf("accounting after the drop: %+v", s)
	}
}

func TestRenderPanicIsAnError(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	_, err := c.Load(t.Context(), "o", "d", nil, func(context.Context) (Rendered[int], error) { panic("boom") })
	if !errors.Is(err, ErrRenderPanicked) {
		t.Fatalf("Load of a panicking render: %v", err)
	}
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("o", "d", old, func(context.Context) (Rendered[int], error) { panic("boom") }) // must not crash the process
	settle(c)
	if c.Lookup("o", "d") != old {
		t.Fatalf("a panicking refresh removed the stale entry")
	}
}

// TestInvalidateDuringRender: a render that started before an
// invalidation never stores its result; its waiters get it; later Loads
// do not join it.
func TestInvalidateDuringRender(t *testing.T) {
	for _, inv := range []struct {
		name string
		do   func(*testCache)
	}{
		{"key", func(c *testCache) { c.Invalidate("o", "d") }},
		{"owner", func(c *testCache) { c.InvalidateOwner("o") }},
		{"all", func(c *testCache) { c.InvalidateAll() }},
		{"other owner", func(c *testCache) { c.InvalidateOwner("x") }},
	} {
		t.Run(inv.name, func(t *testing.T) {
			c, _, _ := newTest(t, nil)
			old := newGate("old")
			first := make(chan *Entry[int])
			go func() { first <- mustLoad(t, c, "o", "d", nil, old.render) }()
			<-old.started
			inv.do(c)
			fresh := newGate("new")
			second := make(chan *Entry[int])
			go func() { second <- mustLoad(t, c, "o", "d", nil, fresh.render) }()
			<-fresh.started // a render of its own, not the old one joined
			old.release <- nil
			if e := <-first; string(e.Body) != "old" {
				t.Fatalf("the request that started the old render got %q", e.Body)
			}
			if e := c.Lookup("o", "d"); e != nil {
				t.Fatalf("the old render was stored after the invalidation: %q", e.Body)
			}
			fresh.release <- nil
			if e := <-second; string(e.Body) != "new" || c.Lookup("o", "d") != e {
				t.Fatalf("the render after the invalidation: %q", e.Body)
			}
		})
	}
}

func TestInvalidateDuringBackgroundRefresh(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	g := newGate("refreshed")
	c.Revalidate("o", "d", old, g.render)
	<-g.started
	c.InvalidateOwner("o")
	g.release <- nil
	settle(c)
	if e := c.Lookup("o", "d"); e != nil {
		t.Fatalf("a refresh that raced with an invalidation was stored: %q", e.Body)
	}
}

func TestInvalidateScopes(t *testing.T) {
	c, _, _ := newTest(t, nil)
	var calls atomic.Int64
	for _, k := range [][2]string{{"a", "1"}, {"a", "2"}, {"b", "1"}, {"c", "1"}} {
		mustLoad(t, c, k[0], k[1], nil, body("x", &calls))
	}
	c.Invalidate("a", "1")
	if c.Lookup("a", "1") != nil || c.Lookup("a", "2") == nil || c.Stats().Entries != 3 {
		t.Fatalf("Invalidate(a, 1) removed the wrong entries: %+v", c.Stats())
	}
	c.InvalidateOwner("a")
	if c.Lookup("a", "2") != nil || c.Lookup("b", "1") == nil || c.Stats().Entries != 2 {
		t.Fatalf("InvalidateOwner(a) removed the wrong entries: %+v", c.Stats())
	}
	c.InvalidateAll()
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || c.Lookup("b", "1") != nil {
		t.Fatalf("after InvalidateAll: %+v", s)
	}
}

func TestByteBudgetWithClock(t *testing.T) {
	const per = 100 + EntryOverhead
	const limit = 8 * per // eight entries
	c, _, _ := newTest(t, func(o *Options) { o.MaxBytes = limit })
	render := func(size int64) RenderFunc[int] {
		return func(context.Context) (Rendered[int], error) {
			return Rendered[int]{Body: make([]byte, 100), Size: size}, nil
		}
	}
	// Fill, then one store more: that sweep finds every entry marked (as
	// stored), clears every mark and evicts one in its second pass.
	for i := range 9 {
		mustLoad(t, c, fmt.Sprint("cold", i), "d", nil, render(0))
	}
	var hot *Entry[int]
	var hotKey string
	for i := range 8 { // use one of the survivors: the only mark besides cold8's
		if hot = c.Lookup(fmt.Sprint("cold", i), "d"); hot != nil {
			hotKey = fmt.Sprint("cold", i)
			break
		}
	}
	mustLoad(t, c, "new", "d", nil, render(0)) // its sweep spares hot and cold8, evicts another
	if s := c.Stats(); s.Bytes > limit || s.Entries != 8 {
		t.Fatalf("after the stores: %+v, limit %d bytes", s, limit)
	}
	if c.Lookup(hotKey, "d") != hot {
		t.Fatalf("CLOCK evicted the entry used since the previous sweep")
	}
	// Again and again from a state where only hot is marked (without the
	// marks, each store would evict it with odds 1 in 8).
	for i := range 40 {
		c.mu.Lock()
		for _, docs := range c.owners {
			for _, e := range docs {
				e.used.Store(false)
			}
		}
		c.mu.Unlock()
		c.Lookup(hotKey, "d")
		mustLoad(t, c, fmt.Sprint("next", i), "d", nil, render(0))
		if c.Lookup(hotKey, "d") != hot || c.Stats().Entries != 8 {
			t.Fatalf("store %d: CLOCK evicted the entry used since the previous sweep (%+v)", i, c.Stats())
		}
	}
	// Size counts: an entry with a large Value takes the room of several.
	mustLoad(t, c, "heavy", "d", nil, render(3*per))
	if s := c.Stats(); s.Bytes > limit || s.Entries != 5 {
		t.Fatalf("after a store of 4 entries' worth: %+v", s)
	}
	// An entry larger than the budget is kept alone.
	big := mustLoad(t, c, "big", "d", nil, render(2*limit))
	if c.Lookup("big", "d") != big || c.Stats().Entries != 1 {
		t.Fatalf("an entry over the budget: %+v", c.Stats())
	}
}

func TestEntryBudget(t *testing.T) {
	c, _, _ := newTest(t, func(o *Options) { o.MaxEntries = 3 })
	var calls atomic.Int64
	for i := range 10 {
		mustLoad(t, c, fmt.Sprint(i), "d", nil, body("x", &calls))
		if n := c.Stats().Entries; n > 3 {
			t.Fatalf("%d entries, limit 3", n)
		}
	}
}

// TestConcurrentUse runs everything at once under the race detector.
func TestConcurrentUse(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.MaxBytes = 20 * EntryOverhead })
	var calls atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				o, d := fmt.Sprint(i%7), fmt.Sprint(g%3)
				e := c.Lookup(o, d)
				switch c.State(e) {
				case Fresh:
				case Stale:
					c.Revalidate(o, d, e, body("r", &calls))
				default:
					if _, err := c.Load(context.Background(), o, d, e, body("l", &calls)); err != nil {
						t.Error(err)
						return
					}
				}
				switch i % 50 {
				case 10:
					c.InvalidateOwner(o)
				case 20:
					clk.Add(maxAge / 3)
				case 30:
					c.InvalidateAll()
				}
			}
		})
	}
	wg.Wait()
	settle(c)
	s := c.Stats()
	if s.Bytes > 20*EntryOverhead || s.Renders != 0 || s.Waiting != 0 {
		t.Fatalf("after concurrent use: %+v", s)
	}
}

// TestServe drives Entry.Serve through a real net/http server: every
// answer has its Content-Length (set by Serve or, for small bodies, by
// net/http), HEAD has no body, and a matching If-None-Match gets a 304.
func TestServe(t *testing.T) {
	c, _, _ := newTest(t, nil)
	small := mustLoad(t, c, "acme/widget", "small", nil, body(`{"versions":[]}`, new(atomic.Int64)))
	large := mustLoad(t, c, "acme/widget", "large", nil, func(context.Context) (Rendered[int], error) {
		return Rendered[int]{Body: []byte(`{"v":"` + strings.Repeat("x", 3000)), Tail: []byte(`"}`)}, nil
	})
	json, noCache := []string{"application/json"}, []string{"no-cache"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := small
		if r.URL.Path == "/large" {
			e = large
		}
		e.Serve(w, r, json, noCache)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path string
		e    *Entry[int]
	}{{"/small", small}, {"/large", large}} {
		var whole bytes.Buffer
		_ = tc.e.WriteBody(&whole)
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(method, srv.URL+tc.path, nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantBody := whole.String()
			if method == http.MethodHead {
				wantBody = ""
			}
			if resp.StatusCode != http.StatusOK || string(got) != wantBody || resp.ContentLength != int64(whole.Len()) ||
				resp.Header.Get("Etag") != tc.e.ETag[0] || resp.Header.Get("Content-Type") != "application/json" ||
				resp.Header.Get("Cache-Control") != "no-cache" || len(resp.TransferEncoding) != 0 {
				t.Errorf("%s %s: status %d, Content-Length %d (want %d), %d body bytes (want %d), header %v",
					method, tc.path, resp.StatusCode, resp.ContentLength, whole.Len(), len(got), len(wantBody), resp.Header)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		req.Header.Set("If-None-Match", `"other", `+tc.e.ETag[0])
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified || len(got) != 0 || resp.Header.Get("Etag") != tc.e.ETag[0] {
			t.Errorf("If-None-Match %s: status %d, %d body bytes, ETag %q; want 304 with the tag and no body", tc.path, resp.StatusCode, len(got), resp.Header.Get("Etag"))
		}
	}
}

// TestQueueBounded: the queue of background renders holds a key once
// (a later stale entry of a queued key takes its place) and at most
// MaxQueued keys; a hit that finds it full queues nothing, its entry
// stays served stale and a later hit may queue it.
func TestQueueBounded(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.MaxRefreshes = 1; o.MaxQueued = 2 })
	var calls atomic.Int64
	var stale []*Entry[int]
	for i := range 4 {
		stale = append(stale, mustLoad(t, c, fmt.Sprint(i), "d", nil, body("old", &calls)))
	}
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	for i, e := range stale {
		c.Revalidate(fmt.Sprint(i), "d", e, g.render)
	}
	<-g.started // 0 renders; 1 and 2 are queued; 3 found the queue full
	if s := c.Stats(); s.Queued != 2 {
		t.Fatalf("stats %+v: want 2 queued (MaxQueued)", s)
	}
	if !c.ShouldRevalidate(stale[3]) {
		t.Fatal("an entry whose hit found the queue full is marked as refreshing")
	}
	if e := c.Lookup("3", "d"); e != stale[3] || c.State(e) != Stale {
		t.Fatal("an entry whose hit found the queue full is not served stale")
	}
	// Key 1 gets a new entry, stale in turn, while its old one is queued:
	// the new one takes the old one's place, the queue does not grow.
	c.Invalidate("1", "d")
	clk.Add(-maxAge * 7 / 8) // rendered with the others: stale with them
	newer := mustLoad(t, c, "1", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("1", "d", newer, g.render)
	if s := c.Stats(); s.Queued != 2 {
		t.Fatalf("stats %+v: a key queued twice", s)
	}
	if !c.ShouldRevalidate(stale[1]) || c.ShouldRevalidate(newer) {
		t.Fatal("the replaced queued render's entry is still marked, or the newer one is not")
	}
	c.mu.Lock()
	queuedEntry := c.queued[docRef[string, string]{"1", "d"}].e
	c.mu.Unlock()
	if queuedEntry != newer {
		t.Fatal("the queue holds the older entry of key 1")
	}
	g.release <- nil // 0 ends (outdated by the invalidation), 1 starts
	<-g.started
	g.release <- nil // 1 ends, 2 starts
	<-g.started
	g.release <- nil
	settle(c)
	waitFor(t, "the queue to drain", func() bool { s := c.Stats(); return s.Renders == 0 && s.Queued == 0 })
	if n := g.calls.Load(); n != 3 {
		t.Fatalf("%d renders, want 3", n)
	}
	if e := c.Lookup("1", "d"); string(e.Body) != "new" {
		t.Fatalf("key 1 = %q, want its queued render's", e.Body)
	}
	// There is room again: a later hit of 3 queues or starts it.
	if !c.ShouldRevalidate(stale[3]) {
		t.Fatal("entry 3 cannot be revalidated once there is room")
	}
}

// blockingHandler is a slog handler whose Handle reports on entered and
// waits for release.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) Handle(context.Context, slog.Record) error {
	h.entered <- struct{}{}
	<-h.release
	return nil
}
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler      { return h }

// TestWaitersNotDelayedByRunsEnd: the requests waiting for a render get
// its result as soon as it is stored: not after the log line of a failed
// background render, the budget's shed or the start of a queued render.
func TestWaitersNotDelayedByRunsEnd(t *testing.T) {
	h := &blockingHandler{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c, clk, _ := newTest(t, func(o *Options) { o.Log = slog.New(h) })
	var calls atomic.Int64
	old := mustLoad(t, c, "o", "d", nil, body("old", &calls))
	clk.Add(maxAge * 7 / 8)
	g := newGate("new")
	c.Revalidate("o", "d", old, g.render)
	<-g.started
	c.mu.Lock()
	var f *flight[int]
	for _, fl := range c.flights {
		f = fl
	}
	c.mu.Unlock()
	g.release <- errors.New("index unreachable")
	<-h.entered // the failure is being logged, and the log waits
	select {
	case <-f.done:
	default:
		t.Error("the render's waiters wait for its log line")
	}
	close(h.release)
	settle(c)
}

// TestHasDoesNotMarkUsed: Has tells whether a key is stored without
// keeping its entry from eviction; Lookup marks it.
func TestHasDoesNotMarkUsed(t *testing.T) {
	c, _, _ := newTest(t, nil)
	e := mustLoad(t, c, "o", "d", nil, body("x", new(atomic.Int64)))
	e.used.Store(false)
	if !c.Has("o", "d") || c.Has("o", "other") {
		t.Fatal("Has does not tell what is stored")
	}
	if e.used.Load() {
		t.Fatal("Has marked the entry as used")
	}
	c.Lookup("o", "d")
	if !e.used.Load() {
		t.Fatal("Lookup did not mark the entry as used")
	}
}

// TestStateAt: without Options.Now an entry's state is judged at the
// time handed in (a request's arrival), whatever the clock says; with
// Options.Now set, that clock wins.
func TestStateAt(t *testing.T) {
	c := New[string, string, int](Options{MaxAge: maxAge})
	before := time.Now()
	e := mustLoad(t, c, "o", "d", nil, body("x", new(atomic.Int64)))
	after := time.Now()
	for _, tc := range []struct {
		at   time.Time
		want State
	}{
		{after, Fresh},
		{before.Add(maxAge * 3 / 4), Fresh}, // fresh for at least 3/4 of MaxAge after the render started
		{after.Add(maxAge*7/8 + time.Millisecond), Stale},
		{after.Add(maxAge - time.Millisecond), Stale},
		{after.Add(maxAge), Expired},
		{after.Add(100 * 365 * 24 * time.Hour), Expired},
	} {
		if got := c.StateAt(e, tc.at); got != tc.want {
			t.Errorf("StateAt(render + %v) = %v, want %v", tc.at.Sub(before), got, tc.want)
		}
	}
	if got := c.StateAt(nil, after); got != Expired {
		t.Errorf("StateAt(nil) = %v, want expired", got)
	}

	set, clk, _ := newTest(t, nil)
	e = mustLoad(t, set, "o", "d", nil, body("x", new(atomic.Int64)))
	if got := set.StateAt(e, clk.Now().Add(maxAge)); got != Fresh {
		t.Errorf("with a set clock, a later time handed in: %v, want fresh (the set clock wins)", got)
	}
	clk.Add(maxAge)
	if got := set.StateAt(e, time.Unix(0, 0)); got != Expired {
		t.Errorf("with a set clock at MaxAge, an early time handed in: %v, want expired (the set clock wins)", got)
	}
}
