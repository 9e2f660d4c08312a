package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestSnapshotWhileWriting takes snapshots while another goroutine
// commits: each snapshot is an intact index, private to its owner, that
// holds every namespace committed before it began.
func TestSnapshotWhileWriting(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	x := open(t, filepath.Join(dir, "trove.db"))
	var committed atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := x.CreateNamespace(ctx, registry.Namespace{Name: fmt.Sprintf("ns%d", i), CreatedAt: time.Now()}); err != nil {
				done <- err
				return
			}
			committed.Add(1)
		}
	}()
	for i := range 3 {
		for committed.Load() < int64(10*(i+1)) {
			time.Sleep(time.Millisecond)
		}
		before := committed.Load()
		out := filepath.Join(dir, fmt.Sprintf("snap-%d.db", i))
		if err := Snapshot(ctx, filepath.Join(dir, "trove.db"), out); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("snapshot file: %v, %v; want mode 0600", err, fi)
		}
		v, err := Inspect(ctx, out)
		if err != nil || v != SchemaVersion() {
			t.Fatalf("Inspect = %d, %v; want %d", v, err, SchemaVersion())
		}
		snap := open(t, out)
		got, err := snap.ListNamespaces(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) < before {
			t.Errorf("snapshot %d holds %d namespaces, %d were committed before it began", i, len(got), before)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := Snapshot(ctx, filepath.Join(dir, "trove.db"), filepath.Join(dir, "snap-0.db")); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("Snapshot into an existing file = %v, want Conflict", err)
	}
	if err := Snapshot(ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "x.db")); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("Snapshot of a missing index = %v, want NotFound", err)
	}
}

// TestInspectRefusesDamage checks that Inspect reports a file that is not
// an intact index.
func TestInspectRefusesDamage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(p, []byte("not a database, just some bytes that are long enough to matter"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(t.Context(), p); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Inspect of junk = %v, want Invalid", err)
	}
}
