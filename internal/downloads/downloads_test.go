package downloads

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
)

// memStore is a store.Downloads in memory whose AddDownloads fails while
// fail is set.
type memStore struct {
	mu        sync.Mutex
	counts    map[registry.DownloadKey]int64 // totals
	consumers map[registry.DownloadKey]int64 // consumer records: keys with Consumer and Day, no platform
	calls     int
	fail      error
	pruned    []string // the days PruneConsumerDownloads was called with
}

func newMemStore() *memStore {
	return &memStore{counts: map[registry.DownloadKey]int64{}, consumers: map[registry.DownloadKey]int64{}}
}

func (m *memStore) AddDownloads(_ context.Context, deltas []registry.DownloadCount) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	for _, d := range deltas {
		m.counts[d.Total()] += d.Count
		if d.Consumer != "" && d.Day != "" {
			k := d.DownloadKey
			k.OS, k.Arch = "", ""
			m.consumers[k] += d.Count
		}
	}
	return nil
}

func (m *memStore) ConsumerDownloads(_ context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []registry.ConsumerCount
	for k, n := range m.consumers {
		if k.Kind == q.Kind && k.Namespace == q.Namespace && k.Name == q.Name && k.System == q.System && k.Day >= q.Since {
			out = append(out, registry.ConsumerCount{Version: k.Version, Day: k.Day, Consumer: k.Consumer,
				Client: k.Client, ClientVersion: k.ClientVersion, Count: n})
		}
	}
	return out, nil
}

func (m *memStore) PruneConsumerDownloads(_ context.Context, before string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruned = append(m.pruned, before)
	var n int64
	for k := range m.consumers {
		if k.Day < before {
			delete(m.consumers, k)
			n++
		}
	}
	return n, nil
}

func (m *memStore) list(match func(registry.DownloadKey) bool) []registry.DownloadCount {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []registry.DownloadCount
	for k, n := range m.counts {
		if match(k) {
			out = append(out, registry.DownloadCount{DownloadKey: k, Count: n})
		}
	}
	return out
}

func (m *memStore) ProviderDownloads(_ context.Context, ns, typ string) ([]registry.DownloadCount, error) {
	return m.list(func(k registry.DownloadKey) bool {
		return k.Kind == registry.DownloadProvider && k.Namespace == ns && k.Name == typ
	}), nil
}

func (m *memStore) ModuleDownloads(_ context.Context, ns, name, system string) ([]registry.DownloadCount, error) {
	return m.list(func(k registry.DownloadKey) bool {
		return k.Kind == registry.DownloadModule && k.Namespace == ns && k.Name == name && k.System == system
	}), nil
}

func (m *memStore) get(k registry.DownloadKey) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[k]
}

func newCounter(t testing.TB, st *memStore, o Options) *Counter {
	t.Helper()
	o.Store = st
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	linux  = registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	darwin = registry.ProviderDownload("acme", "widget", "1.0.0", "darwin", "arm64")
	module = registry.ModuleDownload("acme", "net", "aws", "1.0.0")
)

func all(registry.DownloadKey) bool { return true }

func TestConcurrentAddsAreAllCounted(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{})
	const workers, each = 8, 2000
	keys := []registry.DownloadKey{linux, darwin, module}
	for i := range 50 { // enough keys to promote several times while adding
		keys = append(keys, registry.ProviderDownload("acme", "widget", fmt.Sprintf("2.0.%d", i), "linux", "amd64"))
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				c.Add(keys[(w+i)%len(keys)])
				if i%500 == 0 && w == 0 {
					if err := c.Flush(t.Context()); err != nil { // flushes race with adds
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, k := range keys {
		total += st.get(k)
	}
	if total != workers*each {
		t.Errorf("stored %d downloads, want %d", total, workers*each)
	}
	if p := c.Pending(all); len(p) != 0 {
		t.Errorf("Pending after the last flush = %v, want none", p)
	}
}

func TestFlushFailureKeepsDeltas(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{})
	c.Add(linux)
	c.Add(linux)
	c.Add(module)
	st.fail = registry.Errorf(registry.Unavailable, "the index is down")
	if err := c.Flush(t.Context()); !registry.IsKind(err, registry.Unavailable) {
		t.Fatalf("Flush with the index down = %v, want its error", err)
	}
	c.Add(linux) // counted meanwhile
	pending := c.Pending(all)
	slices.SortFunc(pending, func(a, b registry.DownloadCount) int { return int(a.Kind) - int(b.Kind) })
	want := []registry.DownloadCount{{DownloadKey: linux, Count: 3}, {DownloadKey: module, Count: 1}}
	if !slices.Equal(pending, want) {
		t.Errorf("Pending after a failed flush = %v, want %v", pending, want)
	}
	st.fail = nil
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st.get(linux) != 3 || st.get(module) != 1 {
		t.Errorf("stored after the retry: linux %d, module %d; want 3 and 1", st.get(linux), st.get(module))
	}
	if err := c.Flush(t.Context()); err != nil || st.calls != 2 {
		t.Errorf("a flush with nothing to write: %v, %d store calls (want 2: nothing written)", err, st.calls)
	}
}

func TestReadsAddPending(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{})
	c.Add(linux)
	c.Add(darwin)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Add(linux)
	c.Add(module)
	c.Add(registry.ProviderDownload("acme", "other", "1.0.0", "linux", "amd64"))
	got, err := c.ProviderDownloads(t.Context(), "acme", "widget")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[registry.DownloadKey]int64{}
	for _, d := range got {
		counts[d.DownloadKey] += d.Count
	}
	if len(counts) != 2 || counts[linux] != 2 || counts[darwin] != 1 {
		t.Errorf("ProviderDownloads = %v, want linux 2 (1 stored + 1 pending) and darwin 1", got)
	}
	got, err = c.ModuleDownloads(t.Context(), "acme", "net", "aws")
	if err != nil || registry.DownloadTotal(got) != 1 {
		t.Errorf("ModuleDownloads = %v, %v; want 1 pending", got, err)
	}
}

func TestMaxKeysBoundsMemory(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{MaxKeys: 2})
	c.Add(linux)
	c.Add(darwin)
	c.Add(module) // a third key: not counted
	c.Add(linux)  // known keys still are
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st.get(linux) != 2 || st.get(darwin) != 1 || st.get(module) != 0 {
		t.Errorf("stored linux %d, darwin %d, module %d; want 2, 1, 0", st.get(linux), st.get(darwin), st.get(module))
	}
}

func TestRunFlushesAtTheEnd(t *testing.T) {
	st := newMemStore()
	c := newCounter(t, st, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	c.Add(module)
	cancel()
	<-done
	if st.get(module) != 1 {
		t.Errorf("stored %d after Run ended, want 1 (the final flush)", st.get(module))
	}
}

func TestMetric(t *testing.T) {
	st := newMemStore()
	reg := prometheus.NewRegistry()
	c := newCounter(t, st, Options{Metrics: reg})
	c.Add(linux)
	c.Add(darwin)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Add(linux)
	c.Add(module)
	st.fail = errors.New("down")
	_ = c.Flush(t.Context()) // a failed flush neither loses nor doubles
	for kind, want := range map[string]float64{"provider": 3, "module": 1} {
		got := metricValue(t, reg, kind)
		if got != want {
			t.Errorf("trove_downloads_total{kind=%q} = %v, want %v", kind, got, want)
		}
	}
}

// metricValue returns the value of trove_downloads_total{kind}.
func metricValue(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if mf.GetName() == "trove_downloads_total" && l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no trove_downloads_total{kind=%q}", kind)
	return 0
}

func TestAddDoesNotAllocate(t *testing.T) {
	c := newCounter(t, newMemStore(), Options{})
	k := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	c.Add(k)
	_ = c.Flush(t.Context()) // promotes
	if n := testing.AllocsPerRun(1000, func() { c.Add(k) }); n != 0 {
		t.Errorf("Add of a known key allocates %v times, want 0", n)
	}
}

// BenchmarkCounterAdd measures the request path: one key seen before.
func BenchmarkCounterAdd(b *testing.B) {
	c := newCounter(b, newMemStore(), Options{})
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	c.Add(k)
	_ = c.Flush(b.Context())
	b.ReportAllocs()
	for b.Loop() {
		c.Add(k)
	}
}

// BenchmarkCounterAddParallel adds from every P, over 1,000 keys.
func BenchmarkCounterAddParallel(b *testing.B) {
	c := newCounter(b, newMemStore(), Options{})
	keys := make([]registry.DownloadKey, 1000)
	for i := range keys {
		keys[i] = registry.ProviderDownload("hashicorp", "aws", fmt.Sprintf("5.%d.0", i/5), "linux", []string{"amd64", "arm64", "386", "arm", "riscv64"}[i%5])
		c.Add(keys[i])
	}
	_ = c.Flush(b.Context())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.Add(keys[i%len(keys)])
			i++
		}
	})
}

// clock is a settable time for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func consumerKey(day, consumer, client, clientVersion string) registry.DownloadKey {
	k := registry.ProviderDownload("acme", "cloud", "1.0.0", "linux", "amd64")
	k.Day, k.Consumer, k.Client, k.ClientVersion = day, consumer, client, clientVersion
	return k
}

// TestConsumers checks that keys naming a consumer count toward their
// total and their day's consumer record, that the records this process
// has not flushed are read with the index's, that past days' keys are
// retired without losing a count, and that old records are pruned once a
// day.
func TestConsumers(t *testing.T) {
	st := newMemStore()
	clk := &clock{t: time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)}
	c := newCounter(t, st, Options{Now: clk.now, ConsumerRetention: 30})
	ctx := t.Context()
	q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "acme", Name: "cloud", Since: "2026-11-01"}

	alice := consumerKey("2026-11-27", "user:alice", registry.ClientTerraform, "1.9.5")
	ci := consumerKey("2026-11-27", "ci:acme/infra (deploy.yml)", registry.ClientOpenTofu, "1.12.6")
	for range 3 {
		c.Add(alice)
	}
	c.Add(ci)
	c.Add(registry.ProviderDownload("acme", "cloud", "1.0.0", "linux", "amd64")) // no consumer: the total only

	got, err := c.ConsumerDownloads(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"user:alice": 3, "ci:acme/infra (deploy.yml)": 1}; !sameConsumers(got, want) {
		t.Fatalf("pending consumers = %+v, want %v", got, want)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	total := registry.ProviderDownload("acme", "cloud", "1.0.0", "linux", "amd64")
	if n := st.get(total); n != 5 {
		t.Fatalf("stored total = %d, want 5 (every key counts toward it)", n)
	}
	if len(st.pruned) != 1 || st.pruned[0] != "2026-10-28" {
		t.Fatalf("pruned before %v, want once before 2026-10-28 (30 days)", st.pruned)
	}

	// The next day: yesterday's keys are retired at the first flush; an
	// Add racing with the flush on a retired slot is still written.
	clk.set(time.Date(2026, 11, 28, 0, 0, 5, 0, time.UTC))
	c.Add(alice) // a request answered just before midnight, counted just after
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	_, stillRead := (*c.read.Load())[alice]
	retired := len(c.retired)
	c.mu.Unlock()
	if stillRead || retired == 0 {
		t.Fatalf("yesterday's key still read (%v) or not retired (%d retired)", stillRead, retired)
	}
	if s := c.retired[alice]; s != nil {
		s.n.Add(1) // an Add that had loaded the old read map
	}
	today := consumerKey("2026-11-28", "user:alice", registry.ClientTerraform, "1.9.5")
	c.Add(today)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = c.ConsumerDownloads(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	byDay := map[string]int64{}
	for _, r := range got {
		if r.Consumer == "user:alice" {
			byDay[r.Day] += r.Count
		}
	}
	if byDay["2026-11-27"] != 5 || byDay["2026-11-28"] != 1 {
		t.Fatalf("alice by day = %v, want 5 on the 27th and 1 on the 28th", byDay)
	}
	if n := st.get(total); n != 8 {
		t.Fatalf("stored total = %d, want 8", n)
	}
	if len(st.pruned) != 2 || st.pruned[1] != "2026-10-29" {
		t.Fatalf("pruned before %v, want a second pruning before 2026-10-29", st.pruned)
	}

	// A failed flush keeps every delta, those of retired keys included.
	c.Add(alice)
	st.mu.Lock()
	st.fail = errors.New("index down")
	st.mu.Unlock()
	if err := c.Flush(ctx); err == nil {
		t.Fatal("flush against a failing index succeeded")
	}
	st.mu.Lock()
	st.fail = nil
	st.mu.Unlock()
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := st.get(total); n != 9 {
		t.Fatalf("stored total after a failed flush = %d, want 9", n)
	}
}

func sameConsumers(got []registry.ConsumerCount, want map[string]int64) bool {
	sum := map[string]int64{}
	for _, r := range got {
		sum[r.Consumer] += r.Count
	}
	if len(sum) != len(want) {
		return false
	}
	for k, n := range want {
		if sum[k] != n {
			return false
		}
	}
	return true
}

// consumerRequest is a protocol request of terraform without a token.
func consumerRequest() (*http.Request, Options) {
	r := httptest.NewRequest(http.MethodGet, "/v1/providers/hashicorp/aws/5.31.0/download/linux/amd64", nil)
	r.Header.Set("User-Agent", "Terraform/1.9.5 (+https://www.terraform.io)")
	return r, Options{Consumers: true}
}

// TestAddRequestDoesNotAllocate checks that recording the consumer of a
// request of a consumer seen before costs no allocation: the day is
// formatted once a day and the client is read from the User-Agent in
// place.
func TestAddRequestDoesNotAllocate(t *testing.T) {
	r, o := consumerRequest()
	st := newMemStore()
	c := newCounter(t, st, o)
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	c.AddRequest(r, registry.AnonymousConsumer, k)
	if n := testing.AllocsPerRun(100, func() { c.AddRequest(r, registry.AnonymousConsumer, k) }); n != 0 {
		t.Errorf("AddRequest of a known consumer allocates %v times, want 0", n)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := st.ConsumerDownloads(t.Context(), registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "hashicorp", Name: "aws"})
	if len(got) != 1 || got[0].Client != registry.ClientTerraform || got[0].ClientVersion != "1.9.5" || got[0].Count != 102 {
		t.Errorf("recorded %+v; want 102 downloads by terraform 1.9.5", got)
	}
}

// TestAddRequestConsumer checks that AddRequest records the consumer the
// caller names ("" as anonymous), and none when the Counter does not
// record consumers.
func TestAddRequestConsumer(t *testing.T) {
	r, o := consumerRequest()
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "hashicorp", Name: "aws"}
	st := newMemStore()
	c := newCounter(t, st, o)
	c.AddRequest(r, "user:alice", k)
	c.AddRequest(r, "user:alice", k)
	c.AddRequest(r, "", k)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := st.ConsumerDownloads(t.Context(), q)
	if want := map[string]int64{"user:alice": 2, registry.AnonymousConsumer: 1}; !sameConsumers(got, want) {
		t.Errorf("recorded %+v, want %v", got, want)
	}

	st = newMemStore()
	c = newCounter(t, st, Options{})
	c.AddRequest(r, "user:alice", k)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.ConsumerDownloads(t.Context(), q); len(got) != 0 {
		t.Errorf("a counter without consumers recorded %+v", got)
	}
	if n := st.get(k.Total()); n != 1 {
		t.Errorf("count = %d, want 1", n)
	}
}

// BenchmarkCounterAddRequest measures the request path with consumer
// recording on: one consumer and client seen before.
func BenchmarkCounterAddRequest(b *testing.B) {
	r, o := consumerRequest()
	c := newCounter(b, newMemStore(), o)
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	c.AddRequest(r, registry.AnonymousConsumer, k)
	_ = c.Flush(b.Context())
	b.ReportAllocs()
	for b.Loop() {
		c.AddRequest(r, registry.AnonymousConsumer, k)
	}
}

// TestAddRequestAtRecordsTheRequestsDay checks that AddRequestAt records
// a consumer on the UTC day of the time handed down (when the request
// arrived), and on Options.Now's day when that is set.
func TestAddRequestAtRecordsTheRequestsDay(t *testing.T) {
	r, o := consumerRequest()
	k := registry.ProviderDownload("hashicorp", "aws", "5.31.0", "linux", "amd64")
	today := time.Now().UTC()
	yesterday := today.AddDate(0, 0, -1)
	q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "hashicorp", Name: "aws", Since: registry.DayOf(yesterday)}
	days := func(st *memStore) map[string]int64 {
		t.Helper()
		got, err := st.ConsumerDownloads(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int64{}
		for _, c := range got {
			m[c.Day] += c.Count
		}
		return m
	}

	st := newMemStore()
	c := newCounter(t, st, o)
	c.AddRequestAt(r, "user:alice", k, yesterday)
	c.AddRequestAt(r, "user:alice", k, today)
	c.AddRequestAt(r, "user:alice", k, today)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := days(st), map[string]int64{registry.DayOf(yesterday): 1, registry.DayOf(today): 2}; !maps.Equal(got, want) {
		t.Errorf("recorded by day %v, want %v", got, want)
	}

	st = newMemStore()
	o.Now = func() time.Time { return yesterday }
	c = newCounter(t, st, o)
	c.AddRequestAt(r, "user:alice", k, today)
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := days(st), map[string]int64{registry.DayOf(yesterday): 1}; !maps.Equal(got, want) {
		t.Errorf("with Options.Now: recorded by day %v, want %v (its day)", got, want)
	}
}
