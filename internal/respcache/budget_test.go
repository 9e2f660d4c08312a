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
