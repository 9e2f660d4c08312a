package respcache

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// lasting renders a Lasting document with a counter.
func lasting(s string, calls *atomic.Int64) RenderFunc[int] {
	return func(context.Context) (Rendered[int], error) {
		n := calls.Add(1)
		return Rendered[int]{Body: []byte(s), Value: int(n), Lasting: true}, nil
	}
}

// A Lasting entry of a Settled cache is served for SettledAge; once the
// cache is no longer Settled it is back on MaxAge; an invalidation drops
// it at any age; an entry that is not Lasting keeps MaxAge.
func TestSettledLastingEntries(t *testing.T) {
	var settled atomic.Bool
	settled.Store(true)
	const settledAge = 10 * maxAge
	c, clk, _ := newTest(t, func(o *Options) { o.Settled = settled.Load; o.SettledAge = settledAge })
	ctx := context.Background()
	var lastingCalls, plainCalls atomic.Int64
	load := func(d string, render RenderFunc[int]) *Entry[int] {
		t.Helper()
		e, err := c.Load(ctx, "o", d, c.Lookup("o", d), render)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	load("lasting", lasting("L", &lastingCalls))
	load("plain", body("P", &plainCalls))

	clk.Add(2 * maxAge) // past MaxAge, within 3/4 of SettledAge
	if got := c.State(c.Lookup("o", "lasting")); got != Fresh {
		t.Errorf("a Lasting entry of a Settled cache at 2x MaxAge: %v, want fresh", got)
	}
	if got := c.State(c.Lookup("o", "plain")); got != Expired {
		t.Errorf("an entry that is not Lasting at 2x MaxAge: %v, want expired", got)
	}

	clk.Add(settledAge*7/8 - 2*maxAge) // past the fresh part of SettledAge
	if got := c.State(c.Lookup("o", "lasting")); got != Stale {
		t.Errorf("a Lasting entry at 7/8 of SettledAge: %v, want stale", got)
	}
	clk.Add(settledAge / 8)
	if got := c.State(c.Lookup("o", "lasting")); got != Expired {
		t.Errorf("a Lasting entry at SettledAge: %v, want expired", got)
	}
	if e := load("lasting", lasting("L", &lastingCalls)); e.Value != 2 || lastingCalls.Load() != 2 {
		t.Errorf("after SettledAge: entry of render %d, %d renders; want a second render", e.Value, lastingCalls.Load())
	}

	// An invalidation drops a Lasting entry long before SettledAge.
	clk.Add(time.Second)
	c.Invalidate("o", "lasting")
	if e := c.Lookup("o", "lasting"); e != nil {
		t.Fatalf("an invalidated Lasting entry is still stored (render %d)", e.Value)
	}
	load("lasting", lasting("L", &lastingCalls))

	// No longer Settled (a change feed lost): MaxAge again, from the render.
	settled.Store(false)
	clk.Add(maxAge / 2)
	if got := c.State(c.Lookup("o", "lasting")); got != Fresh {
		t.Errorf("a Lasting entry at MaxAge/2, not Settled: %v, want fresh", got)
	}
	clk.Add(maxAge / 2)
	if got := c.State(c.Lookup("o", "lasting")); got != Expired {
		t.Errorf("a Lasting entry at MaxAge, not Settled: %v, want expired", got)
	}
	settled.Store(true)
	if got := c.State(c.Lookup("o", "lasting")); got != Fresh {
		t.Errorf("a Lasting entry at MaxAge, Settled again: %v, want fresh", got)
	}
}

// Without Options.Settled, Lasting changes nothing.
func TestLastingWithoutSettled(t *testing.T) {
	c, clk, _ := newTest(t, nil)
	var calls atomic.Int64
	if _, err := c.Load(context.Background(), "o", "d", nil, lasting("L", &calls)); err != nil {
		t.Fatal(err)
	}
	clk.Add(maxAge)
	if got := c.State(c.Lookup("o", "d")); got != Expired {
		t.Errorf("a Lasting entry at MaxAge without Settled: %v, want expired", got)
	}
}

// A degraded render kept for NoStoreAge is never Lasting: once its age
// is over it is expired, even in a Settled cache.
func TestDegradedNeverLasts(t *testing.T) {
	const age = 5 * time.Second
	c, clk, _ := newTest(t, func(o *Options) { o.NoStoreAge = age; o.Settled = func() bool { return true } })
	var calls atomic.Int64
	render := func(context.Context) (Rendered[int], error) {
		calls.Add(1)
		return Rendered[int]{Body: []byte("partial"), NoStore: true, Lasting: true}, nil
	}
	e, err := c.Load(context.Background(), "o", "d", nil, render)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(age)
	if got := c.State(e); got != Expired {
		t.Errorf("a degraded Lasting entry past NoStoreAge in a Settled cache: %v, want expired", got)
	}
}
