package respcache

import (
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
// the other caches once, so the entries of a that were not used since
// the previous sweep go before b's own.
func TestSharedBudgetSweepsIdleCaches(t *testing.T) {
	budget := NewBudget(3 * (EntryOverhead + 100))
	a, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	b, _, _ := newTest(t, func(o *Options) { o.Budget = budget })
	var calls atomic.Int64
	doc := strings.Repeat("x", 100)
	for _, d := range []string{"1", "2", "3"} {
		mustLoad(t, a, "a", d, nil, body(doc, &calls))
	}
	// The first store over the budget clears a's marks (its entries are
	// fresh from their store) and, finding none of b's to drop but the
	// new one, keeps it over the budget for now.
	mustLoad(t, b, "b", "1", nil, body(doc, &calls))
	// a is asked for its "1" in between: that one is used again.
	if a.Lookup("a", "1") == nil {
		t.Fatal("a lost its entry before any sweep could")
	}
	mustLoad(t, b, "b", "2", nil, body(doc, &calls))
	settle(a)
	settle(b)
	// The second store over the budget swept a again: "2" and "3", not
	// used since the first sweep, went; "1" stays, and b keeps both.
	if budget.Used() > budget.Max() {
		t.Errorf("budget used %d over its %d", budget.Used(), budget.Max())
	}
	if a.Stats().Entries != 1 || b.Stats().Entries != 2 || a.Lookup("a", "1") == nil {
		t.Errorf("after b's stores: a %+v (1: %v), b %+v", a.Stats(), a.Lookup("a", "1") != nil, b.Stats())
	}
}
