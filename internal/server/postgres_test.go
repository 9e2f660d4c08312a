package server

// Tests of the server on a real PostgreSQL index: several replicas sharing
// it, and PostgreSQL stopped and restarted under load. They skip without
// a PostgreSQL test environment (see package pgtest) and fail instead when
// TROVE_REQUIRE_BACKENDS=1.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// replica is a Trove server serving plain HTTP on a loopback port.
type replica struct {
	url    string
	index  *postgres.Index
	client *http.Client
}

// startReplica starts a server on the PostgreSQL database dsn, with blobs
// in blobDir, until the test ends. With longCache its protocol caches keep
// documents for an hour, so that only the change feed can refresh them.
func startReplica(t *testing.T, dsn, blobDir string, longCache bool) *replica {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	idx, err := postgres.Open(ctx, dsn, postgres.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.Open(blobDir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public, _ := url.Parse("http://" + ln.Addr().String())
	opt := Options{
		Index: idx, Blobs: blobs, Signer: signedurl.New([]byte("shared key"), 15*time.Minute),
		PublicURL: public, Logger: log,
	}
	if longCache {
		opt.ProviderOptions = []providers.Option{providers.WithMaxAge(time.Hour)}
		opt.ModuleOptions = []modules.Option{modules.WithMaxAge(time.Hour)}
	}
	srv, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		idx.Close()
	})
	return &replica{
		url: public.String(), index: idx,
		// A client timeout turns a hanging request into a failure.
		client: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
	}
}

// testLog writes log lines to the test log, except the access log and
// request failures, which the outage makes plentiful.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if !strings.Contains(line, `msg="http request"`) && !strings.Contains(line, `msg="request failed"`) {
		l.t.Log(line)
	}
	return len(p), nil
}

type reply struct {
	status     int
	retryAfter string
	body       string
	took       time.Duration
}

func (r *replica) get(t *testing.T, path string) reply {
	t.Helper()
	start := time.Now()
	resp, err := r.client.Get(r.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return reply{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(body), took: time.Since(start)}
}

// publicNamespace returns a namespace anyone may read, so that the
// protocol requests of the tests need no token.
func publicNamespace(name string) registry.Namespace {
	return registry.Namespace{Name: name, Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}
}

// pgVersion returns a provider version of acme/<typ>.
func pgVersion(typ, version string) registry.ProviderVersion {
	now := time.Now()
	return registry.ProviderVersion{
		Namespace: "acme", Type: typ, Version: version, Protocols: []string{"5.0"},
		SHASumsDigest: strings.Repeat("1", 64), SHASumsSignatureDigest: strings.Repeat("2", 64),
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
			ASCIIArmor: "armor", CreatedAt: now},
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-" + typ + "_" + version + "_linux_amd64.zip",
			SHA256: strings.Repeat("3", 64), Size: 1}},
		PublishedAt: now,
	}
}

func mustCreate(t *testing.T, idx *postgres.Index, vs ...registry.ProviderVersion) {
	t.Helper()
	for _, v := range vs {
		if err := idx.CreateProviderVersion(t.Context(), v); err != nil {
			t.Fatalf("CreateProviderVersion %s %s: %v", v.Type, v.Version, err)
		}
	}
}

// eventually polls cond every 20 ms until it holds, failing the test
// after limit (a bound for a hang, not a measurement), and returns how
// long it took.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: still not the case after %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// openWriter opens a second index on dsn, as another replica would: its
// writes reach a replica's caches only through that replica's change
// feed, while writes through the replica's own index also reach them
// through its commit hook (read-your-writes), which proves nothing about
// the feed.
func openWriter(t *testing.T, dsn string) *postgres.Index {
	t.Helper()
	w, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// waitForFeed returns once r's change feed is listening: a version added
// by writer (another replica's index) shows up in a document r has cached
// before the cache's 30-second age. Since the feed reports a ChangeAll
// once listening, before any notification, r's caches are not dropped
// again by that first ChangeAll after waitForFeed returns.
func waitForFeed(t *testing.T, r *replica, writer *postgres.Index) {
	t.Helper()
	const path = "/v1/providers/acme/probe/versions"
	mustCreate(t, writer, pgVersion("probe", "1.0.0"))
	eventually(t, 20*time.Second, "probe 1.0.0 is served", func() bool {
		return r.get(t, path).status == http.StatusOK
	})
	mustCreate(t, writer, pgVersion("probe", "1.1.0"))
	eventually(t, 20*time.Second, "the change feed shows probe 1.1.0", func() bool {
		return strings.Contains(r.get(t, path).body, `"1.1.0"`)
	})
}

// TestReplicasSeeEachOthersPublishes runs two replicas on one database and
// commits versions through the index of one: the other, which has the
// versions document cached for an hour, serves the new version once the
// change feed told it.
func TestReplicasSeeEachOthersPublishes(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	blobDir := filepath.Join(t.TempDir(), "blobs")
	a := startReplica(t, dsn, blobDir, false)
	b := startReplica(t, dsn, blobDir, true)
	if err := a.index.CreateNamespace(t.Context(), publicNamespace("acme")); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, a.index, pgVersion("cloud", "1.0.0"))
	const path = "/v1/providers/acme/cloud/versions"
	// b's feed may start listening after this first read; once it has
	// (its ChangeAll), the document is rendered again with 1.0.0 in it.
	eventually(t, 20*time.Second, "replica b lists 1.0.0", func() bool {
		return strings.Contains(b.get(t, path).body, `"1.0.0"`)
	})

	for _, ver := range []string{"1.1.0", "1.2.0"} {
		cached := b.get(t, path)
		mustCreate(t, a.index, pgVersion("cloud", ver))
		took := eventually(t, 20*time.Second, "replica b lists "+ver, func() bool {
			return strings.Contains(b.get(t, path).body, `"`+ver+`"`)
		})
		t.Logf("replica b served provider version %s %s after the commit through replica a (its cached document: %d bytes)", ver, took, len(cached.body))
		// Here the commit bypassed replica a's publisher, so a too learns
		// of it through the feed.
		eventually(t, 20*time.Second, "replica a lists "+ver, func() bool {
			return strings.Contains(a.get(t, path).body, `"`+ver+`"`)
		})
	}

	// Modules: a version added, then deleted, through replica a's index.
	const modPath = "/v1/modules/acme/network/aws/versions"
	mod := registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		ArchiveDigest: strings.Repeat("4", 64), ArchiveFormat: "tar.gz", ArchiveSize: 1, PublishedAt: time.Now()}
	if err := a.index.CreateModuleVersion(t.Context(), mod); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "replica b lists module 1.0.0", func() bool {
		return strings.Contains(b.get(t, modPath).body, `"1.0.0"`)
	})
	mod.Version = "1.1.0"
	if err := a.index.CreateModuleVersion(t.Context(), mod); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, 20*time.Second, "replica b lists module 1.1.0", func() bool {
		return strings.Contains(b.get(t, modPath).body, `"1.1.0"`)
	})
	t.Logf("replica b served module version 1.1.0 %s after the commit through replica a", took)
	if err := a.index.DeleteModuleVersion(t.Context(), "acme", "network", "aws", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "replica b no longer lists the deleted module 1.1.0", func() bool {
		got := b.get(t, modPath)
		return got.status == http.StatusOK && !strings.Contains(got.body, `"1.1.0"`)
	})
}

// TestPostgresRestartUnderLoad stops PostgreSQL while requests run: the
// server must answer /readyz and uncached requests with a fast 503
// (JSON error, Retry-After), keep serving what it has cached, and recover
// by itself once PostgreSQL is back, without a restart.
func TestPostgresRestartUnderLoad(t *testing.T) {
	pg := pgtest.StartServer(t)
	dsn := pg.DSN
	r := startReplica(t, dsn, filepath.Join(t.TempDir(), "blobs"), false)
	writer := openWriter(t, dsn)
	ctx := t.Context()
	if err := r.index.CreateNamespace(ctx, publicNamespace("acme")); err != nil {
		t.Fatal(err)
	}
	const types = 20
	for i := range types {
		mustCreate(t, r.index, pgVersion(fmt.Sprintf("p%02d", i), "1.0.0"))
	}
	if got := r.get(t, "/readyz"); got.status != http.StatusOK {
		t.Fatalf("/readyz before the outage: %d %s", got.status, got.body)
	}

	// Load: a bounded loop of versions requests over every provider, so
	// that the requests during the outage meet both cached and uncached
	// documents. Only 200 and 503 are acceptable answers.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	var problems []string
	loadStart := time.Now()
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 100000 && !stop.Load() && time.Since(loadStart) < 2*time.Minute; i++ {
				time.Sleep(time.Millisecond)
				resp, err := r.client.Get(fmt.Sprintf("%s/v1/providers/acme/p%02d/versions", r.url, (i*7+w)%types))
				if err != nil {
					mu.Lock()
					problems = append(problems, err.Error())
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				counts[resp.StatusCode]++
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable && len(problems) < 10 {
					problems = append(problems, fmt.Sprintf("status %d", resp.StatusCode))
				}
				mu.Unlock()
			}
		})
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	// Warm part of the cache once the change feed listens (its first
	// ChangeAll would drop it): p00 is requested now; p19 never is below.
	waitForFeed(t, r, writer)
	if got := r.get(t, "/v1/providers/acme/p00/versions"); got.status != http.StatusOK {
		t.Fatalf("p00 before the outage: %d %s", got.status, got.body)
	}

	loadOK := func() int {
		mu.Lock()
		defer mu.Unlock()
		return counts[http.StatusOK]
	}
	pg.Stop(t)
	wantUnavailable := func(what string, got reply) {
		t.Helper()
		var body struct{ Errors []string }
		if got.status != http.StatusServiceUnavailable || got.retryAfter == "" ||
			json.Unmarshal([]byte(got.body), &body) != nil || len(body.Errors) != 1 {
			t.Errorf("%s during the outage: %d, Retry-After %q, body %s; want 503 with Retry-After and a JSON error",
				what, got.status, got.retryAfter, got.body)
		}
		t.Logf("%s during the outage: %d in %s", what, got.status, got.took)
	}
	wantUnavailable("/readyz", r.get(t, "/readyz"))
	wantUnavailable("an uncached versions document", r.get(t, "/v1/providers/acme/zzz/versions"))
	wantUnavailable("an uncached download document", r.get(t, "/v1/providers/acme/p19/1.0.0/download/linux/amd64"))
	if got := r.get(t, "/v1/providers/acme/p00/versions"); got.status != http.StatusOK {
		t.Errorf("a cached versions document during the outage: %d %s; want it served from the cache", got.status, got.body)
	}
	// Let the load meet the outage: it must be served from the cache
	// while PostgreSQL is down (a condition, not a pause).
	okAtStop := loadOK()
	eventually(t, 20*time.Second, "the load is served during the outage", func() bool {
		return loadOK() >= okAtStop+40
	})

	pg.Start(t)
	took := eventually(t, 60*time.Second, "/readyz answers 200 after PostgreSQL restarted", func() bool {
		return r.get(t, "/readyz").status == http.StatusOK
	})
	t.Logf("ready again %s after PostgreSQL started", took)
	if got := r.get(t, "/v1/providers/acme/p19/1.0.0/download/linux/amd64"); got.status != http.StatusOK {
		t.Errorf("uncached download document after the restart: %d %s", got.status, got.body)
	}
	// The change feed reconnected: a new version committed by another
	// replica (one started after the restart, whose pool holds no
	// connection the restart closed) shows up although p00's document is
	// cached.
	mustCreate(t, openWriter(t, dsn), pgVersion("p00", "2.0.0"))
	eventually(t, 20*time.Second, "the new p00 version is served after the restart", func() bool {
		return strings.Contains(r.get(t, "/v1/providers/acme/p00/versions").body, `"2.0.0"`)
	})

	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("load: %v", counts)
	for _, p := range problems {
		t.Errorf("load: %s", p)
	}
	if counts[http.StatusOK] == 0 {
		t.Errorf("load: no request succeeded: %v", counts)
	}
}
