package sqlstore

import (
	"context"
	"sync"
	"sync/atomic"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// changeAccess is the change of every write to tokens, users and
// memberships.
var changeAccess = store.Change{Kind: store.ChangeAccess}

// feedBuffer is how many changes a watcher may lag behind before it is
// told ChangeAll instead of the changes it missed.
const feedBuffer = 256

// feed is an in-process change feed: the store.ChangeFeed of a database
// that only this process writes to, so that cache invalidation takes the
// same path as with PostgreSQL's LISTEN/NOTIFY.
type feed struct {
	mu sync.Mutex // held by a writer across its commit and publish

	subsMu sync.Mutex
	subs   map[*watcher]struct{}
	done   chan struct{}
	once   sync.Once
}

// watcher is one WatchChanges call.
type watcher struct {
	ch   chan store.Change
	lost atomic.Bool // a change did not fit in ch
}

func newFeed() *feed {
	return &feed{subs: map[*watcher]struct{}{}, done: make(chan struct{})}
}

// publish hands c to every watcher without blocking: one that lags too
// far behind gets a ChangeAll instead.
func (f *feed) publish(c store.Change) {
	f.subsMu.Lock()
	defer f.subsMu.Unlock()
	for w := range f.subs {
		select {
		case w.ch <- c:
		default:
			w.lost.Store(true)
		}
	}
}

// hooks are the functions OnCommit registered.
type hooks struct {
	mu  sync.RWMutex
	fns map[*func(store.Change)]struct{}
}

// add registers fn; the returned function unregisters it.
func (h *hooks) add(fn func(store.Change)) (stop func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fns == nil {
		h.fns = map[*func(store.Change)]struct{}{}
	}
	p := &fn
	h.fns[p] = struct{}{}
	return func() {
		h.mu.Lock()
		delete(h.fns, p)
		h.mu.Unlock()
	}
}

// call hands c to every registered function.
func (h *hooks) call(c store.Change) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for fn := range h.fns {
		(*fn)(c)
	}
}

// close ends every watch.
func (f *feed) close() { f.once.Do(func() { close(f.done) }) }

// watch implements WatchChanges: a ChangeAll first, then every change
// published until ctx ends or the feed closes.
func (f *feed) watch(ctx context.Context, fn func(store.Change)) error {
	w := &watcher{ch: make(chan store.Change, feedBuffer)}
	f.subsMu.Lock()
	f.subs[w] = struct{}{}
	f.subsMu.Unlock()
	defer func() {
		f.subsMu.Lock()
		delete(f.subs, w)
		f.subsMu.Unlock()
	}()
	fn(store.Change{Kind: store.ChangeAll})
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.done:
			return registry.Errorf(registry.Unavailable, "watching index changes: the index is closed")
		case c := <-w.ch:
			if w.lost.Swap(false) {
				c = store.Change{Kind: store.ChangeAll}
			}
			fn(c)
		}
	}
}
