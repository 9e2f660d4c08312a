package server

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
)

type hookOnly struct{}

func (hookOnly) OnCommit(func(store.Change)) func() { return func() {} }

type hookAndWriter struct {
	hookOnly
	sole bool
}

func (h hookAndWriter) SoleWriter() bool { return h.sole }

type soleWithoutHook struct{}

func (soleWithoutHook) SoleWriter() bool { return true }

// The protocol caches are settled only for an index whose hook sees
// every change: the sole writer of its database, with a hook.
func TestSettledIndex(t *testing.T) {
	x, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, tc := range []struct {
		name    string
		idx     any
		settled bool
	}{
		{"the SQLite index", x, true},
		{"a hook of one writer among others (PostgreSQL)", hookAndWriter{sole: false}, false},
		{"a hook without the sole-writer ability", hookOnly{}, false},
		{"a sole writer without a hook", soleWithoutHook{}, false},
		{"a sole writer with a hook", hookAndWriter{sole: true}, true},
	} {
		f := settledIndex(tc.idx, new(atomic.Bool))
		if got := f != nil && f(); got != tc.settled {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.settled)
		}
	}
}

// replicaIndex is the SQLite index dressed as a replica's index on a
// database other processes write too (PostgreSQL's abilities): a hook
// for this process's writes, not the sole writer, and a change feed
// that the test drives through changes (unbuffered: a send returns once
// the feed took the change, and the next send once the server applied
// it).
type replicaIndex struct {
	store.Index
	hook    store.ChangeHook
	changes chan store.Change
}

func (x *replicaIndex) OnCommit(fn func(store.Change)) func() { return x.hook.OnCommit(fn) }

func (x *replicaIndex) WatchChanges(ctx context.Context, fn func(store.Change)) error {
	for {
		select {
		case c := <-x.changes:
			fn(c)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// On an index that other processes write too, the protocol caches are
// settled only while the change feed listens: from its ChangeAll to its
// ChangeLost, and not once the server stopped following it.
func TestSettledWhileFeedListens(t *testing.T) {
	x, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	idx := &replicaIndex{Index: x, hook: x, changes: make(chan store.Change)}
	ts := newTestServer(t, nil, "https://registry.example")
	ts.srv.opt.Index = idx
	following := new(atomic.Bool)
	settled := settledIndex(idx, following)
	if settled == nil {
		t.Fatal("no Settled function for an index with a hook and a change feed")
	}
	following.Store(true)
	if !settled() {
		t.Fatal("Settled does not follow the flag it was given")
	}

	s := ts.srv
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.followChanges(ctx) }()
	send := func(k store.ChangeKind) {
		t.Helper()
		idx.changes <- store.Change{Kind: k}
		// The feed applies a change before it takes the next one.
		idx.changes <- store.Change{Kind: store.ChangeNamespace, Namespace: "sync"}
	}
	if s.following.Load() {
		t.Error("following before the feed said it listens")
	}
	for _, step := range []struct {
		kind store.ChangeKind
		want bool
	}{
		{store.ChangeAll, true},
		{store.ChangeProvider, true},
		{store.ChangeLost, false},
		{store.ChangeProvider, false},
		{store.ChangeAll, true},
	} {
		send(step.kind)
		if got := s.following.Load(); got != step.want {
			t.Errorf("after a change of kind %d: following %v, want %v", step.kind, got, step.want)
		}
	}
	cancel()
	<-done
	if s.following.Load() {
		t.Error("still following after followChanges returned")
	}
}

// settledUI is a UI that keeps the function UseSettled gives it.
type settledUI struct {
	echoUI
	settled func() bool
}

func (u *settledUI) UseSettled(settled func() bool) { u.settled = settled }

// TestSettledReachesTheUI: a UI with the SettledUI ability is told
// whether the index is settled, as the protocol caches are (the web UI
// keeps its version lists by it).
func TestSettledReachesTheUI(t *testing.T) {
	ui := &settledUI{}
	newTestServerUI(t, nil, "https://registry.example.com", ui)
	if ui.settled == nil || !ui.settled() {
		t.Fatal("the UI was not told that the SQLite index is settled")
	}
}
