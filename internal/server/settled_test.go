package server

import (
	"path/filepath"
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
		f := settledIndex(tc.idx)
		if got := f != nil && f(); got != tc.settled {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.settled)
		}
	}
}
