package sqlstore

import (
	"context"
	"sync"
	"testing"

	"trove.dev/trove/internal/store"
)

// TestFeedLaggingWatcherGetsChangeAll checks that a watcher too slow for
// the buffer is told ChangeAll instead of silently losing changes, and
// that the writer never blocks on it.
func TestFeedLaggingWatcherGetsChangeAll(t *testing.T) {
	f := newFeed()
	ctx, cancel := context.WithCancel(context.Background())
	started, gate := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var got []store.Change
	done := make(chan error, 1)
	go func() {
		done <- f.watch(ctx, func(c store.Change) {
			mu.Lock()
			got = append(got, c)
			n := len(got)
			mu.Unlock()
			if n == 1 {
				close(started)
			}
			<-gate
			if n == 1+feedBuffer {
				cancel()
			}
		})
	}()
	<-started
	for range feedBuffer + 10 { // must not block although nobody reads
		f.publish(store.Change{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"})
	}
	close(gate)
	if err := <-done; err != context.Canceled {
		t.Fatalf("watch returned %v, want context.Canceled", err)
	}
	if len(got) != 1+feedBuffer {
		t.Fatalf("fn was called %d times, want %d", len(got), 1+feedBuffer)
	}
	if got[0].Kind != store.ChangeAll || got[1].Kind != store.ChangeAll {
		t.Errorf("first changes = %+v, %+v; want ChangeAll when watching starts and ChangeAll for the lost changes", got[0], got[1])
	}
	for i, c := range got[2:] {
		if c.Kind != store.ChangeProvider {
			t.Fatalf("change %d = %+v, want a provider change", i+2, c)
		}
	}
}
