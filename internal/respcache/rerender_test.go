package respcache

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// rendered renders doc (a new copy each time, as a real render makes)
// with the ETag etag ("": derived) and the Value and Size given.
func rendered(doc, etag string, value int, size int64) RenderFunc[int] {
	return func(context.Context) (Rendered[int], error) {
		return Rendered[int]{Body: []byte(doc), ETag: etag, Value: value, Size: size}, nil
	}
}

// sharesDocument reports whether b holds a's very document: the same
// Body array, ETag and Length slices and gzip variant.
func sharesDocument(a, b *Entry[int]) bool {
	return &a.Body[0] == &b.Body[0] && &a.ETag[0] == &b.ETag[0] && &a.Length[0] == &b.Length[0] &&
		a.Gzip() == b.Gzip()
}

// TestRerenderOfSameBytesKeepsDocument: a background render at the end
// of an entry's fresh part whose bytes are the cached ones (nothing
// changed in the index) stores an entry that shares the cached
// document, its ETag and its gzip variant (no hash, no compression
// again) with the render's Value, fresh for a new maximum age, and
// takes no more of the budget. A render that differs in one byte, or
// that brings another ETag of its own, stores its own document.
func TestRerenderOfSameBytesKeepsDocument(t *testing.T) {
	doc := strings.Repeat(`{"version":"1.0.0"},`, 200)
	other := doc[:len(doc)-1] + ";"
	for _, tc := range []struct {
		name      string
		etag      string // the first render's
		render    RenderFunc[int]
		wantShare bool
	}{
		{"same bytes", "", rendered(doc, "", 2, 10), true},
		{"same bytes and own ETag", `"t1"`, rendered(doc, `"t1"`, 2, 10), true},
		{"one byte differs", "", rendered(other, "", 2, 10), false},
		{"same bytes, another own ETag", `"t1"`, rendered(doc, `"t2"`, 2, 10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := NewBudget(0) // counted only
			c, clk, _ := newTest(t, func(o *Options) { o.GzipMinBytes = 64; o.Budget = budget })
			old := mustLoad(t, c, "o", "d", nil, rendered(doc, tc.etag, 1, 10))
			old.Gzip() // a client asked for it compressed
			bytesBefore := c.Stats().Bytes
			clk.Add(maxAge * 7 / 8)
			if st := c.State(old); st != Stale {
				t.Fatalf("state %v, want stale", st)
			}
			c.Revalidate("o", "d", old, tc.render)
			settle(c)
			e := c.Lookup("o", "d")
			if e == nil || e == old {
				t.Fatalf("the render did not store a new entry (%p, old %p)", e, old)
			}
			if st := c.State(e); st != Fresh || e.Value != 2 {
				t.Fatalf("new entry %v with value %d, want fresh with the render's 2", st, e.Value)
			}
			if got := sharesDocument(old, e); got != tc.wantShare {
				t.Fatalf("shares the cached document: %v, want %v", got, tc.wantShare)
			}
			if !tc.wantShare {
				if string(e.Body) == string(old.Body) && e.ETag[0] == old.ETag[0] {
					t.Fatal("a different document kept the old bytes and ETag")
				}
				return
			}
			if got := c.Stats().Bytes; got != bytesBefore || budget.Used() != got {
				t.Errorf("accounted %d bytes (budget %d), %d before", got, budget.Used(), bytesBefore)
			}
			if gunzip(t, e.Gzip().Body) != doc {
				t.Error("the shared variant is not the document")
			}
		})
	}
}

// TestRerenderSameBytesBeforeVariant: an entry renewed before any client
// asked for its gzip variant makes its own on first request, and
// accounts it.
func TestRerenderSameBytesBeforeVariant(t *testing.T) {
	doc := strings.Repeat("x", 4096)
	c, clk, _ := newTest(t, func(o *Options) { o.GzipMinBytes = 64 })
	old := mustLoad(t, c, "o", "d", nil, rendered(doc, "", 1, 0))
	clk.Add(maxAge * 7 / 8)
	c.Revalidate("o", "d", old, rendered(doc, "", 2, 0))
	settle(c)
	e := c.Lookup("o", "d")
	if e == old || &e.Body[0] != &old.Body[0] {
		t.Fatal("the renewed entry does not share the document")
	}
	before := c.Stats().Bytes
	v := e.Gzip()
	if v == nil || gunzip(t, v.Body) != doc {
		t.Fatal("no variant of the renewed entry")
	}
	if got := c.Stats().Bytes; got != before+int64(len(v.Body)) {
		t.Errorf("accounted %d bytes after the variant, want %d", got, before+int64(len(v.Body)))
	}
}

// TestLoadAfterExpirySameBytesKeepsDocument: a request that finds the
// entry expired renders it again (Load with the entry it saw); the same
// bytes share the expired entry's document.
func TestLoadAfterExpirySameBytesKeepsDocument(t *testing.T) {
	doc := strings.Repeat("y", 4096)
	c, clk, _ := newTest(t, func(o *Options) { o.GzipMinBytes = 64 })
	old := mustLoad(t, c, "o", "d", nil, rendered(doc, "", 1, 0))
	old.Gzip()
	clk.Add(maxAge)
	seen := c.Lookup("o", "d")
	if c.State(seen) != Expired {
		t.Fatal("not expired")
	}
	e := mustLoad(t, c, "o", "d", seen, rendered(doc, "", 2, 0))
	if e == old || !sharesDocument(old, e) || c.State(e) != Fresh {
		t.Fatal("the render after expiry did not share the expired entry's document")
	}
	// Without the entry seen (a first request, or one after an
	// invalidation), nothing is shared.
	c.Invalidate("o", "d")
	var calls atomic.Int64
	if e2 := mustLoad(t, c, "o", "d", nil, body(doc, &calls)); &e2.Body[0] == &e.Body[0] {
		t.Fatal("a render without a previous entry shares one")
	}
}
