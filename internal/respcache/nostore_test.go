package respcache

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// degraded renders body marked NoStore, counting its calls.
func degraded(s string, calls *atomic.Int64) RenderFunc[int] {
	return func(context.Context) (Rendered[int], error) {
		n := calls.Add(1)
		return Rendered[int]{Body: []byte(s), Value: int(n), NoStore: true}, nil
	}
}

// TestNoStoreLoad: a Load's NoStore render is handed to its request and
// to every request that waited for it, and nothing is kept: the next
// request renders again, and an entry it replaces is gone.
func TestNoStoreLoad(t *testing.T) {
	c, clk, _ := newTest(t, func(o *Options) { o.GzipMinBytes = 64 })
	var calls atomic.Int64
	e := mustLoad(t, c, "acme/widget", "page", nil, degraded("partial", &calls))
	if string(e.Body) != "partial" || e.Length[0] != "7" || len(e.ETag) != 1 {
		t.Fatalf("the degraded render is not handed to its request: %q %v %v", e.Body, e.Length, e.ETag)
	}
	if got := c.Lookup("acme/widget", "page"); got != nil {
		t.Fatal("a NoStore render was kept")
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 {
		t.Fatalf("a NoStore render is accounted: %+v", s)
	}
	mustLoad(t, c, "acme/widget", "page", nil, degraded("partial", &calls))
	if calls.Load() != 2 {
		t.Fatalf("%d renders, want 2: the second request must render again", calls.Load())
	}

	// Waiters of the render all get it.
	g := newGate(strings.Repeat("p", 100))
	render := func(ctx context.Context) (Rendered[int], error) {
		r, err := g.render(ctx)
		r.NoStore = true
		return r, err
	}
	got := make(chan *Entry[int], 3)
	for range 3 {
		go func() {
			e, err := c.Load(context.Background(), "acme/widget", "waited", nil, render)
			if err != nil {
				t.Error(err)
			}
			got <- e
		}()
	}
	<-g.started
	waitFor(t, "two waiters", func() bool { return c.Stats().Waiting == 2 })
	g.release <- nil
	first := <-got
	if a, b := <-got, <-got; first == nil || a != first || b != first || g.calls.Load() != 1 {
		t.Fatalf("waiters got %p %p %p from %d renders, want one shared entry", first, a, b, g.calls.Load())
	}
	if first.Gzip() == nil || c.Stats().Bytes != 0 {
		t.Fatalf("the gzip variant of an entry not kept is missing or accounted: %+v", c.Stats())
	}
	if c.Lookup("acme/widget", "waited") != nil {
		t.Fatal("a NoStore render with waiters was kept")
	}

	// An expired entry replaced by a NoStore render is removed.
	old := mustLoad(t, c, "acme/widget", "old", nil, body("complete", &calls))
	clk.Add(maxAge)
	if c.State(old) != Expired {
		t.Fatal("setup: not expired")
	}
	mustLoad(t, c, "acme/widget", "old", old, degraded("partial", &calls))
	if c.Lookup("acme/widget", "old") != nil || c.Stats().Entries != 0 {
		t.Fatalf("the entry a NoStore render replaced is still kept: %+v", c.Stats())
	}
}

// TestNoStoreRevalidate: a background render that comes back NoStore
// leaves the stale entry served, starts no new render before
// RetryAfter, logs nothing, and a later complete render replaces it.
func TestNoStoreRevalidate(t *testing.T) {
	c, clk, logs := newTest(t, func(o *Options) { o.RetryAfter = 2 * time.Second })
	var calls atomic.Int64
	old := mustLoad(t, c, "acme/widget", "page", nil, body("complete", &calls))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("acme/widget", "page", old, degraded("partial", &calls))
	settle(c)
	if e := c.Lookup("acme/widget", "page"); e != old || c.State(e) != Stale {
		t.Fatalf("after a NoStore refresh the stale entry is not the one kept: %p, want %p", e, old)
	}
	if c.ShouldRevalidate(old) {
		t.Fatal("ShouldRevalidate true right after a NoStore refresh")
	}
	if logs.Len() != 0 {
		t.Errorf("a NoStore refresh logged: %q", logs.String())
	}
	clk.Add(2 * time.Second)
	if !c.ShouldRevalidate(old) {
		t.Fatal("ShouldRevalidate false after RetryAfter")
	}
	c.Revalidate("acme/widget", "page", old, body("complete again", &calls))
	settle(c)
	if e := c.Lookup("acme/widget", "page"); e == old || string(e.Body) != "complete again" || c.State(e) != Fresh {
		t.Fatal("a complete render after a NoStore one did not replace the stale entry")
	}
	if calls.Load() != 3 {
		t.Fatalf("%d renders, want 3", calls.Load())
	}
}

// TestNoStoreAge: with Options.NoStoreAge a Load's NoStore render is
// kept for that age: fresh (never stale, so never rendered in the
// background) until then, expired from then on, when the next request
// renders again and a complete render replaces it; an invalidation
// drops it at once; a background NoStore render still leaves the stale
// entry it was to replace.
func TestNoStoreAge(t *testing.T) {
	const age = 5 * time.Second
	c, clk, _ := newTest(t, func(o *Options) { o.NoStoreAge = age })
	var calls atomic.Int64
	e := mustLoad(t, c, "acme/widget", "page", nil, degraded("partial", &calls))
	if got := c.Lookup("acme/widget", "page"); got != e || c.State(got) != Fresh {
		t.Fatalf("the degraded render is not kept fresh: %p (%v), want %p", got, c.State(got), e)
	}
	if s := c.Stats(); s.Entries != 1 || s.Bytes == 0 {
		t.Fatalf("the kept degraded entry is not accounted: %+v", s)
	}
	for _, d := range []time.Duration{age / 2, age/2 - time.Nanosecond} {
		clk.Add(d)
		if got := c.Lookup("acme/widget", "page"); got != e || c.State(got) != Fresh {
			t.Fatalf("within the age the degraded entry is %v; want it served fresh", c.State(got))
		}
	}
	clk.Add(time.Nanosecond)
	if c.State(e) != Expired {
		t.Fatalf("at the age the degraded entry is %v; want expired", c.State(e))
	}
	if calls.Load() != 1 {
		t.Fatalf("%d renders within the age, want 1", calls.Load())
	}
	// The request after the age renders again: still degraded, kept
	// again for the age; then complete, kept as usual.
	again := mustLoad(t, c, "acme/widget", "page", e, degraded("partial", &calls))
	if again == e || calls.Load() != 2 || c.Lookup("acme/widget", "page") != again {
		t.Fatalf("after the age: %d renders, entry %p (was %p); want a new render kept", calls.Load(), again, e)
	}
	clk.Add(age)
	whole := mustLoad(t, c, "acme/widget", "page", again, body("complete", &calls))
	if string(whole.Body) != "complete" || c.Lookup("acme/widget", "page") != whole {
		t.Fatal("a complete render after the age did not replace the degraded entry")
	}
	clk.Add(age)
	if c.State(whole) != Fresh {
		t.Fatalf("a complete entry lives by NoStoreAge: %v after %v", c.State(whole), age)
	}

	// Invalidate drops a kept degraded entry.
	mustLoad(t, c, "acme/widget", "other", nil, degraded("partial", &calls))
	if c.Lookup("acme/widget", "other") == nil {
		t.Fatal("setup: the degraded entry was not kept")
	}
	c.Invalidate("acme/widget", "other")
	if c.Lookup("acme/widget", "other") != nil {
		t.Fatal("a kept degraded entry survived its invalidation")
	}

	// A background render that comes back NoStore leaves the stale
	// entry, as without the age.
	clk.Add(maxAge*7/8 - age)
	if c.State(whole) != Stale {
		t.Fatalf("setup: %v, want stale", c.State(whole))
	}
	c.Revalidate("acme/widget", "page", whole, degraded("partial", &calls))
	settle(c)
	if got := c.Lookup("acme/widget", "page"); got != whole || c.State(got) != Stale {
		t.Fatalf("a background NoStore render replaced the stale entry: %p, want %p", got, whole)
	}
}
