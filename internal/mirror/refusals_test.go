package mirror

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// testClock is a clock the test sets, read by the mirror (Options.Now).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// remembered is the count of refusals of host the mirror answered from
// memory (trove_mirror_refusals_remembered_total).
func remembered(t *testing.T, m *Mirror, host string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.metrics.remembered)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "host" && l.GetValue() == host {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestRefusedPackageRemembered: a package refused for its checksum is
// answered with the same refusal, saying when, without asking the
// upstream again, until RefusalTTL has passed on the mirror's clock;
// then it is fetched again (and mirrored, once the upstream mended it).
func TestRefusedPackageRemembered(t *testing.T) {
	for name, spoil := range map[string]func(*fakeUpstream, bool){
		"bytes that differ from SHA256SUMS":         func(u *fakeUpstream, on bool) { u.tamperZip.Store(on) },
		"a download document with another checksum": func(u *fakeUpstream, on bool) { u.badShasum.Store(on) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clk := &testClock{t: t0}
			f.m.opt.Now = clk.Now
			v := f.version(t)
			pl := f.platform(t, v, "darwin_arm64")
			o := f.origin(pl)
			spoil(f.up, true)

			first := f.m.FetchPackage(ctx, o)
			if !registry.IsKind(first, registry.UpstreamInvalid) || strings.Contains(registry.Message(first), "retried after") {
				t.Fatalf("first FetchPackage: %v, want a refusal", first)
			}
			asked := f.up.requests.Load()
			refusedAt := "refused at " + t0.Format(time.RFC3339)
			retried := "retried after " + t0.Add(DefaultRefusalTTL).Format(time.RFC3339)
			const n = 5
			for i := range n {
				clk.Add(DefaultRefusalTTL / (n + 1)) // still within the TTL at the last
				var err error
				if i < n-1 {
					err = f.m.FetchPackage(ctx, o)
				} else {
					_, _, err = f.m.OpenPackage(ctx, o.String(), pl.SHA256)
				}
				msg := registry.Message(err)
				if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(msg, registry.Message(first)) ||
					!strings.Contains(msg, refusedAt) || !strings.Contains(msg, retried) {
					t.Fatalf("request %d within the TTL: %v; want the first refusal, %q and %q", i+2, err, refusedAt, retried)
				}
			}
			if got := f.up.requests.Load(); got != asked {
				t.Errorf("%d requests within the TTL sent %d requests to the upstream, want none", n, got-asked)
			}
			if got := remembered(t, f.m, upstreamHost); got != n {
				t.Errorf("remembered refusals counted: %v, want %d", got, n)
			}

			clk.Add(DefaultRefusalTTL / (n + 1)) // t0 + TTL: forgotten
			again := f.m.FetchPackage(ctx, o)
			if !registry.IsKind(again, registry.UpstreamInvalid) || strings.Contains(registry.Message(again), "retried after") {
				t.Fatalf("FetchPackage after the TTL: %v, want a new refusal", again)
			}
			if got := f.up.requests.Load(); got == asked {
				t.Fatal("after the TTL the upstream was not asked again")
			}
			asked = f.up.requests.Load()
			if err := f.m.FetchPackage(ctx, o); !strings.Contains(registry.Message(err), "refused at "+clk.Now().Format(time.RFC3339)) {
				t.Errorf("FetchPackage after the new refusal: %v, want it remembered from %s", err, clk.Now().Format(time.RFC3339))
			}
			if got := f.up.requests.Load(); got != asked {
				t.Errorf("the new refusal was not remembered: %d upstream requests", got-asked)
			}

			// The upstream mends the package: fetched once the TTL passed.
			spoil(f.up, false)
			clk.Add(DefaultRefusalTTL)
			if err := f.m.FetchPackage(ctx, o); err != nil {
				t.Fatalf("FetchPackage of the mended package after the TTL: %v", err)
			}
			if _, err := f.blobs.Stat(ctx, pl.SHA256); err != nil {
				t.Errorf("the mended package was not stored: %v", err)
			}
		})
	}
}

// TestUnpackableSignedZipRemembered: a signed package the mirror cannot
// unpack within its limits (here: more entries than a publish allows)
// is remembered like a tampered one: the next request is refused (502,
// before any byte) without asking the upstream, until the TTL passed.
func TestUnpackableSignedZipRemembered(t *testing.T) {
	files := map[string]string{}
	for i := range 1001 {
		files[fmt.Sprintf("f%04d", i)] = ""
	}
	u := newRawRegistry(t, "upstream.example", 0, nil, testarchive.Zip(t, files))
	e := newEnv(t, false, 0, u)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := &testClock{t: t0}
	e.m.opt.Now = clk.Now
	e.version(t, u.host)
	ctx := context.Background()

	err := e.m.FetchPackage(ctx, origin(u.host))
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "entries") {
		t.Fatalf("FetchPackage of a zip with too many entries: %v, want a refusal naming its entries", err)
	}
	for proto, client := range e.clients(t) {
		resp, err := client.Get(e.url(u))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "retried after") {
			t.Errorf("%s: GET of the remembered package: %d %.200q, want 502 saying when it is retried", proto, resp.StatusCode, body)
		}
	}
	if err := e.m.FetchPackage(ctx, origin(u.host)); !registry.IsKind(err, registry.UpstreamInvalid) {
		t.Errorf("FetchPackage within the TTL: %v, want the refusal", err)
	}
	if n := u.archiveGets.Load(); n != 1 {
		t.Errorf("the upstream was asked for the package %d times within the TTL, want once", n)
	}
	clk.Add(DefaultRefusalTTL)
	if err := e.m.FetchPackage(ctx, origin(u.host)); !registry.IsKind(err, registry.UpstreamInvalid) {
		t.Errorf("FetchPackage after the TTL: %v, want a refusal", err)
	}
	if n := u.archiveGets.Load(); n != 2 {
		t.Errorf("after the TTL the upstream was asked for the package %d times in all, want twice", n)
	}
	if e.stored(t, u) {
		t.Error("the unpackable package was stored")
	}
}

// TestFailedFetchNotRemembered: a failure that is no refusal of the
// package (the upstream down, a 5xx answer for the package, a broken
// connection, a body without Content-Length ended early) is not
// remembered: the next
// request asks the upstream again, and gets the package.
func TestFailedFetchNotRemembered(t *testing.T) {
	for name, c := range map[string]struct {
		fail, mend func(*fixture)
	}{
		"upstream down": {
			func(f *fixture) { f.up.down.Store(true) }, func(f *fixture) { f.up.down.Store(false) }},
		"package answered 502": {
			func(f *fixture) { f.up.zipStatus.Store(http.StatusBadGateway) }, func(f *fixture) { f.up.zipStatus.Store(0) }},
		"connection broken off": {
			func(f *fixture) { f.up.cutZip.Store(true) }, func(f *fixture) { f.up.cutZip.Store(false) }},
		"connection closed early without Content-Length": {
			func(f *fixture) { f.up.cutUnframed.Store(true) }, func(f *fixture) { f.up.cutUnframed.Store(false) }},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			f.m.opt.Now = clk.Now // frozen: only a TTL that never passes could explain a remembered failure
			o := f.origin(f.platform(t, f.version(t), "linux_amd64"))
			c.fail(f)
			err := f.m.FetchPackage(ctx, o)
			if !registry.IsKind(err, registry.Unavailable) {
				t.Fatalf("FetchPackage: %v, want Unavailable", err)
			}
			asked := f.up.requests.Load()
			c.mend(f)
			if err := f.m.FetchPackage(ctx, o); err != nil {
				t.Fatalf("FetchPackage once the failure is over: %v", err)
			}
			if f.up.requests.Load() == asked {
				t.Error("the upstream was not asked again")
			}
			if n := f.m.refusals.count(); n != 0 {
				t.Errorf("%d refusals remembered after a failure", n)
			}
		})
	}
}

// TestRefusalsSet: the set forgets a refusal at its TTL, the oldest
// over its bound, an earlier refusal of a key refused again, and
// remembers nothing with a TTL <= 0 (Options.RefusalTTL < 0).
func TestRefusalsSet(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key := func(i int) refusalKey {
		return refusalKey{origin: registry.PackageOrigin{Host: "h", Namespace: "n", Type: "t", Version: fmt.Sprint(i), OS: "linux", Arch: "amd64"}, digest: "d"}
	}
	s := newRefusals(time.Minute, 3)
	s.add(key(1), "one", t0)
	if r, ok := s.get(key(1), t0.Add(time.Minute-time.Nanosecond)); !ok || r.msg != "one" || !r.at.Equal(t0) || !r.until.Equal(t0.Add(time.Minute)) {
		t.Errorf("get within the TTL = %+v, %v", r, ok)
	}
	if _, ok := s.get(key(1), t0.Add(time.Minute)); ok {
		t.Error("remembered at its TTL")
	}
	if _, ok := s.get(refusalKey{origin: key(1).origin, digest: "other"}, t0); ok {
		t.Error("another digest of the same origin is remembered")
	}

	for i := range 5 {
		s.add(key(i), fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
	}
	if n := s.count(); n != 3 {
		t.Errorf("%d remembered, want the bound, 3", n)
	}
	for i := range 5 {
		if _, ok := s.get(key(i), t0.Add(5*time.Second)); ok != (i >= 2) {
			t.Errorf("key %d remembered: %v, want %v (the oldest are forgotten)", i, ok, i >= 2)
		}
	}
	s.add(key(2), "again", t0.Add(10*time.Second)) // refused again: now the newest
	s.add(key(5), "5", t0.Add(11*time.Second))
	if r, ok := s.get(key(2), t0.Add(12*time.Second)); !ok || r.msg != "again" {
		t.Errorf("a key refused again: %+v, %v; want its new refusal, kept as the newest", r, ok)
	}
	if _, ok := s.get(key(3), t0.Add(12*time.Second)); ok {
		t.Error("key 3, then the oldest, was not forgotten")
	}

	off := newRefusals(-1, 3)
	off.add(key(1), "one", t0)
	if _, ok := off.get(key(1), t0); ok || off.count() != 0 {
		t.Error("remembered with a negative TTL")
	}

	for ttl, want := range map[time.Duration]time.Duration{0: DefaultRefusalTTL, time.Minute: time.Minute, -1: -1} {
		m, err := New(Options{RefusalTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		if m.refusals.ttl != want {
			t.Errorf("Options.RefusalTTL %v: remembered for %v, want %v", ttl, m.refusals.ttl, want)
		}
		m.Close()
	}
}

// TestOversizedPackageRemembered: a package larger than the mirror's
// limit is refused (502, not 503: the upstream's package, not a passing
// failure) and remembered, so that the upstream is not asked to send it
// again on every request.
func TestOversizedPackageRemembered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.m.opt.Now = clk.Now
	f.m.opt.MaxPackageBytes = 100
	o := f.origin(f.platform(t, f.version(t), "linux_amd64"))
	err := f.m.FetchPackage(ctx, o)
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "limit of 100 bytes") {
		t.Fatalf("FetchPackage of a package over the limit: %v, want a refusal naming the limit", err)
	}
	asked := f.up.requests.Load()
	clk.Add(DefaultRefusalTTL / 2)
	err = f.m.FetchPackage(ctx, o)
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "retried after") {
		t.Fatalf("FetchPackage again within the TTL: %v, want the remembered refusal", err)
	}
	if got := f.up.requests.Load(); got != asked {
		t.Errorf("the upstream was asked %d more times within the TTL, want none", got-asked)
	}
	if _, err := f.blobs.Stat(ctx, f.platform(t, f.version(t), "linux_amd64").SHA256); err == nil {
		t.Error("the package over the limit was stored")
	}
}
