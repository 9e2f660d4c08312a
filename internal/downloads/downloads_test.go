package downloads

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
)

// memStore is a store.Downloads in memory whose AddDownloads fails while
// fail is set.
type memStore struct {
	mu     sync.Mutex
	counts map[registry.DownloadKey]int64
	calls  int
	fail   error
}

func newMemStore() *memStore { return &memStore{counts: map[registry.DownloadKey]int64{}} }

func (m *memStore) AddDownloads(_ context.Context, deltas []registry.DownloadCount) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return m.fail
	}
	for _, d := range deltas {
		m.counts[d.DownloadKey] += d.Count
	}
	return nil
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
