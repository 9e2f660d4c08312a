package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

const testSecret = "s3cret-0123456789abcdef"

// clock is a manual clock for the workers.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// received is one request the receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a webhook target that answers the first fail requests
// with 500, then 204, and checks nothing itself.
type receiver struct {
	mu       sync.Mutex
	fail     int
	got      []received
	inFlight map[string]int // per delivery ID
	overlap  int            // requests that found their delivery in flight
	hold     chan struct{}  // if set, each request waits for a value
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	id := r.Header.Get(apispec.HeaderDelivery)
	rc.mu.Lock()
	if rc.inFlight == nil {
		rc.inFlight = map[string]int{}
	}
	if rc.inFlight[id] > 0 {
		rc.overlap++
	}
	rc.inFlight[id]++
	rc.got = append(rc.got, received{r.Header.Clone(), body})
	fail := len(rc.got) <= rc.fail
	hold := rc.hold
	rc.mu.Unlock()
	if hold != nil {
		<-hold
	}
	rc.mu.Lock()
	rc.inFlight[id]--
	rc.mu.Unlock()
	if fail {
		http.Error(w, "not now", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func newIndex(t *testing.T) store.Index {
	t.Helper()
	x := sqlitetest.NewIndex(t)
	if err := x.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return x
}

func addHook(t *testing.T, x store.Index, target string) registry.Webhook {
	t.Helper()
	w := registry.Webhook{ID: NewID("wh_"), Namespace: "acme", URL: target, Secret: testSecret, Active: true, CreatedAt: time.Now()}
	if err := x.CreateWebhook(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWorkerRetriesThenSucceeds(t *testing.T) {
	x := newIndex(t)
	rc := &receiver{fail: 2}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	hook := addHook(t, x, srv.URL+"/hook")
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	public, _ := url.Parse("https://registry.example")
	em := NewEmitter(EmitterOptions{Store: x, PublicURL: public, Now: clk.Now})
	em.Emit(t.Context(), nil, Event{Type: registry.EventProviderPublished, Namespace: "acme", Name: "cloud", Version: "1.2.0", Actor: "user:alice"})
	w, err := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Now: clk.Now, Rand: func() float64 { return 0.5 },
		Backoff: Backoff{Base: time.Minute, Max: time.Hour, Attempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i, wantAttempts := range []int{1, 1, 1} {
		n, err := w.RunOnce(ctx)
		if err != nil || n != wantAttempts {
			t.Fatalf("round %d: RunOnce = %d, %v; want %d attempt", i, n, err, wantAttempts)
		}
		if n, _ := w.RunOnce(ctx); n != 0 {
			t.Fatalf("round %d: a failed delivery was retried before its backoff", i)
		}
		clk.Add(time.Duration(1<<i) * time.Minute) // the backoff without jitter
	}
	if n, _ := w.RunOnce(ctx); n != 0 {
		t.Errorf("a succeeded delivery was attempted again")
	}
	if len(rc.got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(rc.got))
	}
	var first apispec.WebhookPayload
	for i, r := range rc.got {
		if err := Verify(testSecret, r.header.Get(apispec.HeaderSignature), r.body, clk.Now(), 10*time.Minute); err != nil {
			t.Errorf("request %d: signature: %v", i, err)
		}
		if r.header.Get("Content-Type") != "application/json" || r.header.Get(apispec.HeaderEventType) != registry.EventProviderPublished {
			t.Errorf("request %d: headers %v", i, r.header)
		}
		if string(r.body) != string(rc.got[0].body) || r.header.Get(apispec.HeaderEvent) != rc.got[0].header.Get(apispec.HeaderEvent) {
			t.Errorf("request %d differs from the first in body or event ID", i)
		}
	}
	if err := json.Unmarshal(rc.got[0].body, &first); err != nil {
		t.Fatal(err)
	}
	want := apispec.WebhookPayload{
		ID: rc.got[0].header.Get(apispec.HeaderEvent), Type: registry.EventProviderPublished, Time: first.Time, Namespace: "acme",
		Subject: apispec.WebhookEventSubject{Kind: "provider", Address: "registry.example/acme/cloud", Name: "cloud"},
		Version: "1.2.0", Actor: "user:alice",
		URLs: apispec.WebhookEventURLs{UI: "https://registry.example/providers/acme/cloud/1.2.0",
			API: "https://registry.example/api/v1/namespaces/acme/providers/cloud/versions/1.2.0"},
	}
	if fmt.Sprint(first) != fmt.Sprint(want) || !first.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("payload = %+v\nwant %+v", first, want)
	}
	list, err := x.ListWebhookDeliveries(ctx, hook.ID, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("deliveries = %+v, %v", list, err)
	}
	d, err := x.GetWebhookDelivery(ctx, hook.ID, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != registry.DeliverySucceeded || len(d.Log) != 3 || d.Log[0].Status != 500 || d.Log[0].Error != "HTTP 500" ||
		d.Log[0].Response != "not now\n" || d.Log[2].Status != 204 || d.Log[2].Error != "" {
		t.Errorf("delivery log = %+v", d)
	}
}

func TestWorkerGivesUpAndHonoursGone(t *testing.T) {
	x := newIndex(t)
	status := http.StatusBadGateway
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	hook := addHook(t, x, srv.URL)
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	em := NewEmitter(EmitterOptions{Store: x, Now: clk.Now})
	w, _ := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Now: clk.Now, Backoff: Backoff{Base: time.Minute, Max: time.Minute, Attempts: 2}})
	em.Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0"})
	for range 5 {
		w.RunOnce(t.Context())
		clk.Add(2 * time.Minute)
	}
	list, _ := x.ListWebhookDeliveries(t.Context(), hook.ID, 10)
	if len(list) != 1 || list[0].State != registry.DeliveryFailed || list[0].Attempts != 2 {
		t.Fatalf("after exhausting attempts: %+v, want failed after 2", list)
	}
	status = http.StatusGone
	em.Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "net", System: "aws", Version: "1.1.0"})
	w.RunOnce(t.Context())
	got, _ := x.GetWebhook(t.Context(), hook.ID)
	if got.Active || got.DisabledReason == "" {
		t.Errorf("after a 410 the webhook is %+v, want inactive with a reason", got)
	}
	list, _ = x.ListWebhookDeliveries(t.Context(), hook.ID, 10)
	if list[0].State != registry.DeliveryFailed || list[0].Attempts != 1 {
		t.Errorf("the delivery answered 410: %+v, want failed at once", list[0])
	}
}

func TestWorkerSSRFGuard(t *testing.T) {
	x := newIndex(t)
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	hook := addHook(t, x, srv.URL)
	w, _ := NewWorker(WorkerOptions{Store: x, Backoff: Backoff{Base: time.Minute, Max: time.Minute, Attempts: 1}})
	NewEmitter(EmitterOptions{Store: x}).Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "n", System: "s", Version: "1.0.0"})
	if n, err := w.RunOnce(t.Context()); n != 1 || err != nil {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	if len(rc.got) != 0 {
		t.Errorf("the guarded worker reached the loopback receiver")
	}
	list, _ := x.ListWebhookDeliveries(t.Context(), hook.ID, 1)
	d, _ := x.GetWebhookDelivery(t.Context(), hook.ID, list[0].ID)
	if len(d.Log) != 1 || d.Log[0].Status != 0 || d.Log[0].Error == "" {
		t.Errorf("attempt = %+v, want a refusal", d.Log)
	}
}

func TestWorkerDoesNotFollowRedirects(t *testing.T) {
	x := newIndex(t)
	rc := &receiver{}
	target := httptest.NewServer(rc)
	defer target.Close()
	srv := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	hook := addHook(t, x, srv.URL)
	w, _ := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Backoff: Backoff{Base: time.Minute, Max: time.Minute, Attempts: 1}})
	NewEmitter(EmitterOptions{Store: x}).Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "n", System: "s", Version: "1.0.0"})
	w.RunOnce(t.Context())
	if len(rc.got) != 0 {
		t.Errorf("the redirect was followed")
	}
	list, _ := x.ListWebhookDeliveries(t.Context(), hook.ID, 1)
	if list[0].State != registry.DeliveryFailed {
		t.Errorf("delivery answered 307: %+v, want failed", list[0])
	}
}

// TestTwoWorkersOneIndex runs two workers (two replicas) concurrently on
// one index, SQLite and PostgreSQL (there through two connection pools,
// as two replicas have): every delivery reaches the receiver exactly once
// and no delivery is ever in flight twice.
func TestTwoWorkersOneIndex(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		x := newIndex(t)
		testTwoWorkers(t, x, x)
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.ServerDSN(t)
		dsn := pgtest.NewSchema(t)
		var idx [2]store.Index
		for i := range idx {
			x, err := postgres.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			idx[i] = x
		}
		if err := idx[0].CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		testTwoWorkers(t, idx[0], idx[1])
	})
}

func testTwoWorkers(t *testing.T, a, b store.Index) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	addHook(t, a, srv.URL)
	addHook(t, a, srv.URL+"/second")
	em := NewEmitter(EmitterOptions{Store: a})
	const events = 15
	for i := range events {
		em.Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "n", System: "s", Version: fmt.Sprintf("1.0.%d", i)})
	}
	var workers []*Worker
	for i, x := range []store.Index{a, b} {
		w, err := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Owner: fmt.Sprintf("replica-%d", i), Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	var wg sync.WaitGroup
	counts := make([]int, len(workers))
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := w.RunOnce(t.Context())
				if err != nil {
					t.Errorf("RunOnce: %v", err)
					return
				}
				if n == 0 {
					return
				}
				counts[i] += n
			}
		}()
	}
	wg.Wait()
	seen := map[string]int{}
	for _, r := range rc.got {
		seen[r.header.Get(apispec.HeaderDelivery)]++
	}
	if len(rc.got) != 2*events || len(seen) != 2*events {
		t.Errorf("receiver got %d requests for %d deliveries, want %d each", len(rc.got), len(seen), 2*events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("delivery %s sent %d times", id, n)
		}
	}
	if rc.overlap != 0 {
		t.Errorf("%d requests found their delivery in flight already", rc.overlap)
	}
	if counts[0]+counts[1] != 2*events {
		t.Errorf("workers attempted %v, want %d in all", counts, 2*events)
	}
}

// TestWorkerStopsAtItsLease: when the attempts of a claim take so long
// that the next could outlive the lease, the worker leaves the rest to be
// claimed again after the lease, never attempting a delivery another
// worker may hold.
func TestWorkerStopsAtItsLease(t *testing.T) {
	x := newIndex(t)
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var w *Worker
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hits++
		clk.Add(w.Lease()) // this attempt "took" the whole lease
	}))
	defer srv.Close()
	addHook(t, x, srv.URL)
	em := NewEmitter(EmitterOptions{Store: x, Now: clk.Now})
	for _, v := range []string{"1.0.0", "1.0.1"} {
		em.Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "n", System: "s", Version: v})
	}
	w, _ = NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Owner: "slow", Now: clk.Now, Batch: 2})
	if n, err := w.RunOnce(t.Context()); n != 1 || err != nil || hits != 1 {
		t.Fatalf("RunOnce = %d, %v with %d requests; want 1 attempt", n, err, hits)
	}
	other, _ := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Owner: "other", Now: clk.Now, Batch: 2})
	if n, _ := other.RunOnce(t.Context()); n != 1 || hits != 2 {
		t.Errorf("after the lease the other worker attempted %d (requests %d), want the one left", n, hits)
	}
}

// TestWorkerTimeoutAndMetrics: a receiver that never answers fails the
// attempt with a timeout (counted as a retry); a 2xx counts as a success.
func TestWorkerTimeoutAndMetrics(t *testing.T) {
	x := newIndex(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	hook := addHook(t, x, slow.URL)
	reg := prometheus.NewRegistry()
	w, err := NewWorker(WorkerOptions{Store: x, AllowPrivate: true, Timeout: 50 * time.Millisecond, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	NewEmitter(EmitterOptions{Store: x}).Emit(t.Context(), nil, Event{Type: registry.EventModulePublished, Namespace: "acme", Name: "n", System: "s", Version: "1.0.0"})
	w.RunOnce(t.Context())
	list, _ := x.ListWebhookDeliveries(t.Context(), hook.ID, 1)
	d, _ := x.GetWebhookDelivery(t.Context(), hook.ID, list[0].ID)
	if len(d.Log) != 1 || d.Log[0].Status != 0 || !strings.Contains(d.Log[0].Error, "no answer within 50ms") || d.State != registry.DeliveryPending {
		t.Errorf("after a timeout: %+v", d)
	}
	if got := outcomeCount(t, reg, OutcomeRetry); got != 1 {
		t.Errorf("retry count = %v, want 1", got)
	}
	if got := outcomeCount(t, reg, OutcomeSuccess); got != 0 {
		t.Errorf("success count = %v, want 0", got)
	}
	if _, err := NewWorker(WorkerOptions{Store: x, Metrics: reg}); err == nil {
		t.Errorf("a second worker registered the same metric")
	}
}

func outcomeCount(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "trove_webhook_deliveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no trove_webhook_deliveries_total{outcome=%q}", outcome)
	return 0
}
