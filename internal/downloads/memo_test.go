package downloads

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// memoRequests are requests of two clients, then of hostile or odd
// User-Agents: the same client spelt otherwise, one longer than a Memo
// keeps, one whose version ParseClient refuses, an empty one, none.
func memoRequests() []*http.Request {
	var rs []*http.Request
	for _, ua := range []string{"Terraform/1.9.5 (+https://www.terraform.io)", "OpenTofu/1.12.6",
		"terraform/1.9.5", "Terraform/1.9.5 " + strings.Repeat("x", 2*maxMemoUserAgent), "OpenTofu/1.12.6<script>",
		"", "\x00Terraform/1.0"} {
		r := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/1.0.0/download/linux/amd64", nil)
		r.Header.Set("User-Agent", ua)
		rs = append(rs, r)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/1.0.0/download/linux/amd64", nil)
	delete(r.Header, "User-Agent")
	return append(rs, r)
}

// TestAddRequestMemoCountsLikeAdd replays one random sequence of
// downloads (three documents with a Memo each, three consumers, two
// clients, keys new and old, flushes, a day passing and its keys retired)
// on two counters, one through AddRequestAt, the other through
// AddRequestMemo: the index receives the same totals and consumer
// records from both.
func TestAddRequestMemoCountsLikeAdd(t *testing.T) {
	start := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	clk := &clock{t: start}
	plainStore, memoStore := newMemStore(), newMemStore()
	plain := newCounter(t, plainStore, Options{Consumers: true, Now: clk.now})
	memoed := newCounter(t, memoStore, Options{Consumers: true, Now: clk.now})
	reqs := memoRequests()
	docs := []registry.DownloadKey{
		registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64"),
		registry.ProviderDownload("acme", "widget", "1.0.0", "darwin", "arm64"),
		registry.ProviderDownload("acme", "widget", "1.1.0", "linux", "amd64"),
	}
	memos := make([]Memo, len(docs))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20_000 {
		switch n := rng.IntN(1000); {
		case n < 2:
			clk.set(clk.now().Add(6 * time.Hour)) // a day passes every 4 of these
		case n < 7:
			if err := plain.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := memoed.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		d := rng.IntN(len(docs))
		r := reqs[rng.IntN(len(reqs))]
		consumer := fmt.Sprintf("user:u%d", rng.IntN(3))
		if rng.IntN(100) == 0 {
			consumer = fmt.Sprintf("user:new%d", i) // a new key: the counter's keys change
		}
		plain.AddRequestAt(r, consumer, docs[d], time.Time{})
		memoed.AddRequestMemo(r, consumer, docs[d], time.Time{}, &memos[d])
	}
	for _, c := range []*Counter{plain, memoed} {
		if err := c.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.Equal(plainStore.counts, memoStore.counts) || !maps.Equal(plainStore.consumers, memoStore.consumers) {
		t.Fatalf("the memo's counts differ from Add's:\n%v\n%v", plainStore.counts, memoStore.counts)
	}
	var total int64
	for _, n := range memoStore.counts {
		total += n
	}
	if total != 20_000 {
		t.Fatalf("%d counted, want 20000", total)
	}
	if days := clk.now().Sub(start) / (24 * time.Hour); days < 5 {
		t.Fatalf("the sequence spanned %d days; want several", days)
	}
}

// TestAddRequestMemoConcurrent counts from several goroutines through one
// Memo, with two consumers alternating and a flush running (-race).
func TestAddRequestMemoConcurrent(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{Consumers: true})
	reqs := memoRequests()
	k := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	var m Memo
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				c.AddRequestMemo(reqs[(g+i)%2], fmt.Sprintf("user:u%d", i%2), k, time.Now(), &m)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if err := c.Flush(t.Context()); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := st.get(k.Total()); n != 20_000 {
		t.Fatalf("%d counted, want 20000", n)
	}
}

// TestAddRequestMemoDoesNotAllocate: downloads of a remembered key, and
// of another key of the same document (a second consumer), allocate
// nothing once the counter knows their keys.
func TestAddRequestMemoDoesNotAllocate(t *testing.T) {
	c := newCounter(t, newMemStore(), Options{Consumers: true})
	r := memoRequests()[0]
	k := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	var m Memo
	for range 3 { // both keys into read, then remembered
		c.AddRequestMemo(r, "user:a", k, time.Now(), &m)
		c.AddRequestMemo(r, "user:b", k, time.Now(), &m)
	}
	if n := testing.AllocsPerRun(100, func() {
		c.AddRequestMemo(r, "user:a", k, time.Now(), &m)
		c.AddRequestMemo(r, "user:b", k, time.Now(), &m)
	}); n != 0 {
		t.Errorf("AddRequestMemo of known keys allocates %v times, want 0", n)
	}
	if held := m.p.Load(); held == nil || held.gen != c.retirements.Load() {
		t.Error("the memo holds no key of the counter's current keys")
	}
}

// BenchmarkCounterAddRequestMemo is BenchmarkCounterAddRequest through a
// Memo.
func BenchmarkCounterAddRequestMemo(b *testing.B) {
	r, o := consumerRequest()
	c := newCounter(b, newMemStore(), o)
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	var m Memo
	c.AddRequestMemo(r, registry.AnonymousConsumer, k, time.Now(), &m)
	_ = c.Flush(b.Context())
	b.ReportAllocs()
	for b.Loop() {
		c.AddRequestMemo(r, registry.AnonymousConsumer, k, time.Now(), &m)
	}
}

// TestAddRequestMemoAfterRetirement: a key a Memo holds that flushes
// then retired and dropped (a past day's) is not counted on its old slot:
// a download of it is counted all the same.
func TestAddRequestMemoAfterRetirement(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{Consumers: true})
	r := memoRequests()[0]
	k := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	past := time.Now().AddDate(0, 0, -2)
	var m Memo
	for range 3 {
		c.AddRequestMemo(r, "user:a", k, past, &m)
	}
	for range 2 { // the first retires the past day's keys, the second collects and drops them
		if err := c.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	c.AddRequestMemo(r, "user:a", k, past, &m)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := st.get(k.Total()); n != 4 {
		t.Fatalf("%d counted, want 4", n)
	}
}
