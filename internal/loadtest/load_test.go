package loadtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadCountsAndReusesConnections(t *testing.T) {
	body := strings.Repeat("x", 1000)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		if r.Header.Get("Accept-Encoding") != "" {
			http.Error(w, "unexpected Accept-Encoding", http.StatusBadRequest)
			return
		}
		if r.ProtoMajor != 1 {
			http.Error(w, "want HTTP/1.1", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	tlsCfg := startCounting(t, srv, &conns)
	opt := LoadOptions{Conns: 3, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, TLS: tlsCfg}

	res, err := Load(context.Background(), srv.URL+"/ok", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("ok endpoint: %d requests, %d errors (first: %s); want some requests and no errors", res.Requests, res.Errors, res.FirstError)
	}
	if res.Bytes < int64(res.Requests)*int64(len(body)) {
		t.Errorf("read %d bytes for %d requests of %d bytes", res.Bytes, res.Requests, len(body))
	}
	if res.P50 <= 0 || res.P99 < res.P50 {
		t.Errorf("percentiles p50=%v p99=%v", res.P50, res.P99)
	}
	if res.CPU != 0 {
		t.Errorf("CPU = %v without a CPU reader, want 0", res.CPU)
	}
	if res.Elapsed != opt.Duration {
		t.Errorf("Elapsed = %v, want the window %v", res.Elapsed, opt.Duration)
	}
	// Keep-alive: each worker's connection carries many requests. The
	// client's transport may replace a connection now and then (CI on
	// a loaded machine once saw 4 for 3 workers), which costs a load
	// run nothing; a connection per request, or per few, would.
	if n := conns.Load(); n > int64(opt.Conns) && n*4 > int64(res.Requests) {
		t.Errorf("server saw %d connections for %d workers and %d requests: keep-alive not used", n, opt.Conns, res.Requests)
	}

	res, err = Load(context.Background(), srv.URL+"/fail", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "500") {
		t.Errorf("failing endpoint: %d requests, %d errors, first %q; want only errors naming status 500", res.Requests, res.Errors, res.FirstError)
	}
}

func TestLoadRejectsBadOptions(t *testing.T) {
	tests := map[string]LoadOptions{
		"no conns":        {Conns: 0, Duration: time.Second},
		"too many conns":  {Conns: 5000, Duration: time.Second},
		"no duration":     {Conns: 1},
		"negative warmup": {Conns: 1, Duration: time.Second, Warmup: -time.Second},
		"unbounded":       {Conns: 1, Duration: time.Hour},
	}
	for name, opt := range tests {
		if _, err := Load(context.Background(), "http://127.0.0.1:1/", opt); err == nil {
			t.Errorf("%s: Load accepted %+v", name, opt)
		}
	}
}

func TestLoadCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	// A window long enough for a connection attempt to fail even on a
	// machine busy with other tests.
	res, err := Load(context.Background(), "http://"+addr+"/", LoadOptions{Conns: 1, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 {
		t.Errorf("closed port: %d requests, %d errors; want only errors", res.Requests, res.Errors)
	}
}

func TestLoadSamplesCPUAtWindowEdges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var calls atomic.Int64
	cpu := func() (time.Duration, error) {
		n := calls.Add(1)
		return time.Duration(n) * 7 * time.Millisecond, nil // 7ms, then 14ms
	}
	res, err := Load(context.Background(), srv.URL, LoadOptions{Conns: 1, Warmup: 20 * time.Millisecond, Duration: 50 * time.Millisecond, CPU: cpu})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || res.CPU != 7*time.Millisecond {
		t.Errorf("CPU reader called %d times, CPU = %v; want 2 calls and 7ms", calls.Load(), res.CPU)
	}
}

func TestReadCPUTimeOfThisProcess(t *testing.T) {
	first, err := ReadCPUTime(os.Getpid())
	if err != nil {
		t.Fatalf("reading this process's CPU time (the harness needs Linux /proc): %v", err)
	}
	x := 0
	for i := range 20_000_000 { // burn some CPU
		x += i % 7
	}
	second, err := ReadCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if first <= 0 || second <= first {
		t.Errorf("CPU time went from %v to %v after busy work (x=%d)", first, second, x)
	}
}

func TestLoadNextURLAndRedirects(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	final := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("0123456789"))
	}))
	defer final.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/redirect/") {
			http.Redirect(w, r, final.URL+"/blob", http.StatusFound)
		}
	}))
	defer srv.Close()
	tests := map[bool]int64{false: 0, true: 10} // follow -> body bytes per request
	for follow, perRequest := range tests {
		mu.Lock() // requests of the previous load may still arrive
		clear(seen)
		mu.Unlock()
		urls := make([]string, 100_000)
		for i := range urls {
			urls[i] = srv.URL + "/doc/" + strconv.Itoa(i)
			if follow {
				urls[i] = srv.URL + "/redirect/" + strconv.Itoa(i)
			}
		}
		cycle, err := NewURLCycle(urls)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Load(context.Background(), "http://127.0.0.1:1/unused", LoadOptions{Conns: 2, Duration: 200 * time.Millisecond,
			NextURL: cycle.Next, FollowRedirects: follow})
		if err != nil {
			t.Fatal(err)
		}
		if res.Requests == 0 || res.Errors != 0 {
			t.Fatalf("follow=%v: %d requests, %d errors (first %s)", follow, res.Requests, res.Errors, res.FirstError)
		}
		if follow && res.Bytes < int64(res.Requests)*perRequest {
			t.Errorf("follow=%v: %d bytes for %d requests: the redirect was not followed", follow, res.Bytes, res.Requests)
		}
		mu.Lock()
		prefix := strings.TrimPrefix(urls[0], srv.URL)[:5] // "/doc/" or "/redi"
		paths := 0
		for path, n := range seen {
			if !strings.HasPrefix(path, prefix) {
				continue // a straggler of the previous load
			}
			paths++
			if n != 1 {
				t.Errorf("follow=%v: %s asked %d times", follow, path, n)
			}
		}
		// Requests cancelled at the end of the window may not have
		// reached the server: at most one per connection.
		if issued := cycle.Issued(); int64(paths) > issued || int64(paths) < issued-2 || cycle.Repeats() != 0 {
			t.Errorf("follow=%v: server saw %d paths, cycle issued %d", follow, paths, issued)
		}
		mu.Unlock()
	}
}

func TestLoadSamplesBackendCPU(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var calls atomic.Int64
	backend := func() (time.Duration, error) {
		return time.Duration(calls.Add(1)) * 3 * time.Millisecond, nil // 3ms, then 6ms
	}
	res, err := Load(context.Background(), srv.URL, LoadOptions{Conns: 1, Duration: 50 * time.Millisecond, BackendCPU: backend})
	if err != nil {
		t.Fatal(err)
	}
	if res.BackendCPU != 3*time.Millisecond || res.CPU != 0 {
		t.Errorf("BackendCPU %v, CPU %v; want 3ms and none", res.BackendCPU, res.CPU)
	}
	failing := func() (time.Duration, error) { return 0, os.ErrNotExist }
	if _, err := Load(context.Background(), srv.URL, LoadOptions{Conns: 1, Duration: 20 * time.Millisecond, BackendCPU: failing}); err == nil {
		t.Error("a failing backend CPU reader was ignored")
	}
}

// TestLoadHTTP2 checks that LoadOptions.HTTP2 makes every request of an
// HTTPS load an HTTP/2 one, one connection per worker, and that without
// it (above) the same server only sees HTTP/1.1.
func TestLoadHTTP2(t *testing.T) {
	var conns, notH2 atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			notH2.Add(1)
			http.Error(w, "want HTTP/2", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	tlsCfg := startCounting(t, srv, &conns)
	opt := LoadOptions{Conns: 3, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, TLS: tlsCfg, HTTP2: true}
	res, err := Load(context.Background(), srv.URL+"/ok", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 || notH2.Load() != 0 {
		t.Fatalf("%d requests, %d errors (first: %s), %d not over HTTP/2; want some requests, all over HTTP/2", res.Requests, res.Errors, res.FirstError, notH2.Load())
	}
	if n := conns.Load(); n > int64(opt.Conns) && n*4 > int64(res.Requests) {
		t.Errorf("server saw %d connections for %d workers and %d requests: keep-alive not used", n, opt.Conns, res.Requests)
	}
}

// startCounting starts srv over HTTPS offering HTTP/2 and HTTP/1.1,
// counts the connections it accepts into conns, closes it when the test
// ends and returns a client configuration that trusts it.
func startCounting(t *testing.T, srv *httptest.Server, conns *atomic.Int64) *tls.Config {
	t.Helper()
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &tls.Config{RootCAs: pool}
}
