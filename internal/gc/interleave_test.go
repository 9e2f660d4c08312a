package gc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// hookedBlobs is the collector's blob store, which calls afterWalk when
// it has listed the blobs and afterOpen when it has read the time of
// digest (right before the delete).
type hookedBlobs struct {
	store.Blobs
	digest               string
	afterWalk, afterOpen func()
	once                 sync.Once // a retried transaction opens again
}

func (h *hookedBlobs) Walk(ctx context.Context, fn func(string, int64) error) error {
	err := h.Blobs.Walk(ctx, fn)
	if h.afterWalk != nil {
		h.afterWalk()
	}
	return err
}

func (h *hookedBlobs) Open(ctx context.Context, d string) (*store.Blob, error) {
	b, err := h.Blobs.Open(ctx, d)
	if d == h.digest && h.afterOpen != nil {
		h.once.Do(h.afterOpen)
	}
	return b, err
}

// side is one replica: its index and blob store.
type side struct {
	idx   store.Index
	blobs store.Blobs
}

// backends returns, for each pair of backends, the collector's and the
// publisher's replica, sharing their stores, with writes guarded.
func backends() map[string]func(t *testing.T) (collector, publisher side) {
	return map[string]func(t *testing.T) (side, side){
		"sqlite+fs": func(t *testing.T) (side, side) {
			st := sqlitetest.New(t)
			idx, blobs := st.Index, st.Blobs
			idx.GuardBlobs(store.BlobsPresent(blobs))
			return side{idx, blobs}, side{idx, blobs}
		},
		"postgres+s3": func(t *testing.T) (side, side) {
			dsn, bucket := pgtest.NewSchema(t), s3test.NewBucket(t)
			a, b := openReplica(t, dsn, bucket), openReplica(t, dsn, bucket)
			return side{a.idx, a.blobs}, side{b.idx, b.blobs}
		},
	}
}

// interleaving sets up an old blob that no row names (a deleted
// version's archive) and a collector that sees it as past any grace
// period, so that only the collector's transaction can protect a publish
// of the same bytes.
func interleaving(t *testing.T, open func(t *testing.T) (side, side)) (c, p side, digest string, hooks *hookedBlobs, collector *gc.Collector) {
	t.Helper()
	c, p = open(t)
	if err := p.idx.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	digest = put(t, p.blobs, "archive of a deleted version")
	hooks = &hookedBlobs{Blobs: c.blobs, digest: digest}
	collector, err := gc.New(gc.Options{Index: c.idx, Blobs: hooks,
		Now: func() time.Time { return time.Now().Add(2 * gc.DefaultGrace) }})
	if err != nil {
		t.Fatal(err)
	}
	return c, p, digest, hooks, collector
}

func moduleVersion(digest string) registry.ModuleVersion {
	return registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "2.0.0",
		ArchiveDigest: digest, ArchiveFormat: "tar.gz", ArchiveSize: 28, PublishedAt: time.Now()}
}

// let gives a blocked goroutine a moment to reach the lock it waits
// for: it only chooses which interleaving a run exercises, never the
// outcome the test expects.
func let(done <-chan struct{}) {
	select {
	case <-done:
	case <-time.After(200 * time.Millisecond):
	}
}

// TestPublishWhileCollectorDeletes is the gap of issue 14: the collector
// has read an unreferenced blob's time and is about to delete it when a
// publish stores the same bytes and commits a row naming them. The
// publish must fail, committing nothing (and succeed when run again),
// rather than list a version whose blob is gone.
func TestPublishWhileCollectorDeletes(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			_, p, digest, hooks, collector := interleaving(t, open)
			ctx := t.Context()
			paused, resume := make(chan struct{}), make(chan struct{})
			hooks.afterOpen = func() { close(paused); <-resume }
			var rep gc.Report
			var runErr error
			collected := make(chan struct{})
			go func() { defer close(collected); rep, runErr = collector.Run(ctx, gc.Run{}) }()
			<-paused

			put(t, p.blobs, "archive of a deleted version") // renews the time the collector has read
			var pubErr error
			published := make(chan struct{})
			go func() { defer close(published); pubErr = p.idx.CreateModuleVersion(ctx, moduleVersion(digest)) }()
			let(published)
			close(resume)
			<-collected
			<-published
			if runErr != nil {
				t.Fatal(runErr)
			}
			if len(rep.Reclaimed) != 1 || rep.Reclaimed[0].Digest != digest {
				t.Fatalf("reclaimed %v, want the old blob", rep.Reclaimed)
			}
			_, getErr := p.idx.GetModuleVersion(ctx, "acme", "net", "aws", "2.0.0")
			_, statErr := p.blobs.Stat(ctx, digest)
			if !registry.IsKind(pubErr, registry.Unavailable) || !registry.IsKind(getErr, registry.NotFound) {
				t.Fatalf("publish: %v; version: %v (blob: %v); want an Unavailable publish that committed nothing", pubErr, getErr, statErr)
			}

			put(t, p.blobs, "archive of a deleted version") // publishing again
			if err := p.idx.CreateModuleVersion(ctx, moduleVersion(digest)); err != nil {
				t.Fatal(err)
			}
			if _, err := p.blobs.Stat(ctx, digest); err != nil {
				t.Fatalf("the archive of the version published again: %v", err)
			}
		})
	}
}

// TestCollectorWhilePublishCommits is the other order: a publish has
// checked its blob inside its transaction when the collector, which
// listed the blob as unreferenced, comes to delete it. The collector
// must wait for the commit and keep the blob.
func TestCollectorWhilePublishCommits(t *testing.T) {
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			_, p, digest, hooks, collector := interleaving(t, open)
			ctx := t.Context()
			checked, commit := make(chan struct{}), make(chan struct{})
			var once sync.Once
			p.idx.GuardBlobs(func(ctx context.Context, ds []string) error {
				err := store.BlobsPresent(p.blobs)(ctx, ds)
				once.Do(func() { close(checked); <-commit })
				return err
			})
			var pubErr error
			published := make(chan struct{})
			hooks.afterWalk = func() { // the blob is a candidate now
				go func() { defer close(published); pubErr = p.idx.CreateModuleVersion(ctx, moduleVersion(digest)) }()
				<-checked
			}
			var rep gc.Report
			var runErr error
			collected := make(chan struct{})
			go func() { defer close(collected); rep, runErr = collector.Run(ctx, gc.Run{}) }()
			let(collected)
			close(commit)
			<-collected
			<-published
			if runErr != nil || pubErr != nil {
				t.Fatalf("collection: %v; publish: %v", runErr, pubErr)
			}
			if len(rep.Reclaimed) != 0 || rep.Rescued != 1 {
				t.Fatalf("reclaimed %v, rescued %d; want the blob rescued", rep.Reclaimed, rep.Rescued)
			}
			if _, err := p.blobs.Stat(ctx, digest); err != nil {
				t.Fatalf("the archive of the published version: %v", err)
			}
		})
	}
}
