package loadtest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/config"
)

// TestProfileHeapAfterSweep writes the heap profile of a Trove that has
// answered what the harness asks before it reads Trove's memory: every
// document of the realistic mix, then the mirror-like sweep of 16,000
// download documents. It needs an index seeded by `trove-loadtest seed
// -data-dir DIR` (which it changes: the download counts) and runs only
// when TROVE_PROFILE_DATA_DIR names it; the profile goes to
// TROVE_PROFILE_HEAP (default DIR/heap.pprof). Trove runs in this
// process with the defaults of trove serve, so that the server needs no
// profiling endpoint; the profile also holds this test's own
// allocations (the fetched documents), under the loadtest package.
//
//	TROVE_PROFILE_DATA_DIR=/tmp/seed go test -run TestProfileHeapAfterSweep -v ./internal/loadtest/
//	go tool pprof -sample_index=inuse_space -top /tmp/seed/heap.pprof
func TestProfileHeapAfterSweep(t *testing.T) {
	dir := os.Getenv("TROVE_PROFILE_DATA_DIR")
	if dir == "" {
		t.Skip("set TROVE_PROFILE_DATA_DIR to a data directory of trove-loadtest seed")
	}
	out := os.Getenv("TROVE_PROFILE_HEAP")
	if out == "" {
		out = filepath.Join(dir, "heap.pprof")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	cfg, err := config.Load([]string{"--data-dir", dir, "--listen", ln.Addr().String(), "--insecure-http", "--public-url", "https://" + ln.Addr().String()},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	spec := DefaultSpec()
	spec.ModuleMirror = ModuleMirrorSpec{} // as trove-loadtest seed
	sets, err := mixPicks(spec, DefaultOptions().MixDocs, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := fetchMix(ctx, poolClient(nil, 8), origin, sets); err != nil {
		t.Fatal(err)
	}
	sets = nil
	paths, err := fillPaths(spec, DefaultOptions().FillDocs)
	if err != nil {
		t.Fatal(err)
	}
	failed, err := sweep(ctx, poolClient(nil, 32), origin, paths, 32)
	if err != nil || failed > 0 {
		t.Fatalf("sweep: %d failed, %v", failed, err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("after the sweep: heap in use %.1f MiB, live objects %d", float64(ms.HeapInuse)/(1<<20), ms.HeapObjects)
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("heap profile: %s", out)
}
