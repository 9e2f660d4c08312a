package server

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestGrowStackKeepsCachedStackSize checks that growStack gives an
// HTTP/2 request's goroutine a stack of at most 16 KB, the largest size
// the runtime keeps in its per-processor caches: a larger stack is
// allocated and freed under the heap's lock, on every request. It
// compares the stack memory in use while n requests are held in a
// handler, with and without the middleware in front of it.
func TestGrowStackKeepsCachedStackSize(t *testing.T) {
	const n = 64
	m, err := newMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// No collection while measuring: it would shrink the held stacks.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	held := func(wrap func(http.Handler) http.Handler) int64 {
		arrived, release := make(chan struct{}, n), make(chan struct{})
		srv := httptest.NewUnstartedServer(wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				t.Errorf("HTTP/%d.%d, want HTTP/2", r.ProtoMajor, r.ProtoMinor)
			}
			if r.URL.Path == "/held" {
				arrived <- struct{}{}
				<-release
			}
		})))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		client := srv.Client()
		resp, err := client.Get(srv.URL + "/") // the connection, outside the measurement
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()

		var before, during runtime.MemStats
		runtime.ReadMemStats(&before)
		var wg sync.WaitGroup
		failed := make(chan struct{}, n) // a request that never arrives
		for range n {
			wg.Go(func() {
				resp, err := client.Get(srv.URL + "/held")
				if err != nil {
					t.Error(err)
					failed <- struct{}{}
					return
				}
				resp.Body.Close()
			})
		}
		defer wg.Wait()
		defer close(release)
		for range n {
			select {
			case <-arrived:
			case <-failed:
				t.FailNow()
			}
		}
		runtime.ReadMemStats(&during)
		return int64(during.StackInuse) - int64(before.StackInuse)
	}
	plain := held(func(h http.Handler) http.Handler { return h })
	grown := held(func(h http.Handler) http.Handler {
		return &middleware{next: h, log: discardLogger(), metrics: m}
	})
	perRequest := (grown - plain) / n
	t.Logf("stack in use with %d requests held: %d KB plain, %d KB through the middleware: %d KB more per request",
		n, plain>>10, grown>>10, perRequest>>10)
	if perRequest > 20<<10 {
		t.Errorf("the middleware adds %d KB of stack per HTTP/2 request: growStack grows past 16 KB", perRequest>>10)
	}
	if perRequest < 4<<10 {
		t.Errorf("the middleware adds %d KB of stack per HTTP/2 request: growStack does not grow the stack", perRequest>>10)
	}
}
