package respcache

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSharedBudget: two caches on one Budget account their entries in
// it, and a store that takes the shared total over the budget evicts
// entries of the storing cache (never the one just stored) until it is
// within; invalidations give the bytes back.
func TestSharedBudget(t *testing.T) {
	budget := NewBudget(3 * (EntryOverhead + 100))
	a, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	b, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	var calls atomic.Int64
	doc := strings.Repeat("x", 100)
	mustLoad(t, a, "a", "1", nil, body(doc, &calls))
	mustLoad(t, a, "a", "2", nil, body(doc, &calls))
	mustLoad(t, b, "b", "1", nil, body(doc, &calls))
	if got, want := budget.Used(), a.Stats().Bytes+b.Stats().Bytes; got != want || got != 3*(EntryOverhead+100) {
		t.Fatalf("budget used %d, caches hold %d", got, want)
	}
	// A fourth entry, stored by b, takes the total over: b evicts its
	// own older entry (a's are not its to drop), then is within.
	mustLoad(t, b, "b", "2", nil, body(doc, &calls))
	settle(b)
	// b's first entry survives the first sweep (just stored), so b
	// evicts it on the second; a keeps both.
	if a.Stats().Entries != 2 || b.Stats().Entries != 1 || b.Lookup("b", "2") == nil {
		t.Errorf("after the store over budget: a %+v, b %+v", a.Stats(), b.Stats())
	}
	if budget.Used() > budget.Max() {
		t.Errorf("budget used %d over its %d", budget.Used(), budget.Max())
	}
	a.InvalidateAll()
	b.Invalidate("b", "2")
	if budget.Used() != 0 {
		t.Errorf("after the invalidations the budget holds %d", budget.Used())
	}
}

// TestSharedBudgetSweepsIdleCaches: a cache nobody asks any more gives
// its memory back to the one that stores: a store over the budget sweeps
// the other caches once first, so the entries of a that were not used
// since the previous sweep go before b's own; and it sheds down to the
// low-water mark, so that the next store does not sweep again.
func TestSharedBudgetSweepsIdleCaches(t *testing.T) {
	const per = EntryOverhead + 100
	budget := NewBudget(4 * per) // low-water mark: 3.75 entries
	a, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	b, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	var calls atomic.Int64
	doc := strings.Repeat("x", 100)
	for _, d := range []string{"1", "2", "3"} {
		mustLoad(t, a, "a", d, nil, body(doc, &calls))
	}
	mustLoad(t, b, "b", "1", nil, body(doc, &calls)) // at the budget, not over
	// Over: a's sweep clears the marks of its entries (fresh from their
	// store), then b evicts its own older entry, which takes the total
	// to the budget.
	mustLoad(t, b, "b", "2", nil, body(doc, &calls))
	if a.Stats().Entries != 3 || b.Stats().Entries != 1 || b.Lookup("b", "2") == nil {
		t.Fatalf("after the first store over the budget: a %+v, b %+v", a.Stats(), b.Stats())
	}
	// a is asked for its "1" in between: that one is used again.
	if a.Lookup("a", "1") == nil {
		t.Fatal("a lost its entry before any sweep could")
	}
	// Over again: a's "2" and "3", not used since the previous sweep, go
	// (down to the low-water mark, 3 entries); "1" stays, and b keeps
	// both of its entries.
	mustLoad(t, b, "b", "3", nil, body(doc, &calls))
	if a.Stats().Entries != 1 || a.Lookup("a", "1") == nil || b.Stats().Entries != 2 {
		t.Fatalf("after the second store over the budget: a %+v (1: %v), b %+v", a.Stats(), a.Lookup("a", "1") != nil, b.Stats())
	}
	if budget.Used() > 3*per {
		t.Fatalf("budget used %d, over its low-water mark %d", budget.Used(), 3*per)
	}
	// Amortised: the next store, within the budget, sweeps nothing (a
	// sweep would clear the mark of a's "1").
	mustLoad(t, b, "b", "4", nil, body(doc, &calls))
	if !a.Lookup("a", "1").used.Load() || a.Stats().Entries != 1 || b.Stats().Entries != 3 {
		t.Fatalf("a store under the budget swept: a %+v, b %+v", a.Stats(), b.Stats())
	}
}

// TestSharedBudgetShedsUnderReadLoad: a store over the budget sweeps the
// other caches even while their readers hold their lock (it waits for
// them, holding no lock of its own), so the budget holds however busy
// the other caches are.
func TestSharedBudgetShedsUnderReadLoad(t *testing.T) {
	const per = EntryOverhead + 100
	budget := NewBudget(2 * per)
	a, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	b, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	var calls atomic.Int64
	doc := strings.Repeat("x", 100)
	mustLoad(t, a, "a", "1", nil, body(doc, &calls))
	mustLoad(t, a, "a", "2", nil, body(doc, &calls))
	a.mu.RLock() // a reader of a, in the middle of a Lookup
	stored := make(chan struct{})
	go func() {
		defer close(stored)
		mustLoad(t, b, "b", "1", nil, body(doc, &calls))
	}()
	// Either the store's shed waits for a's lock (TryRLock then fails:
	// a writer is pending), or the store ended without it.
	for waiting := false; !waiting; {
		select {
		case <-stored:
			waiting = true
		default:
			if a.mu.TryRLock() {
				a.mu.RUnlock()
				runtime.Gosched()
			} else {
				waiting = true
			}
		}
	}
	a.mu.RUnlock()
	<-stored
	if budget.Used() > budget.Max() {
		t.Fatalf("budget used %d over its %d: the busy cache was not swept (a %+v, b %+v)",
			budget.Used(), budget.Max(), a.Stats(), b.Stats())
	}
	if b.Lookup("b", "1") == nil || a.Stats().Entries != 1 {
		t.Fatalf("after the store: a %+v, b %+v", a.Stats(), b.Stats())
	}
}
