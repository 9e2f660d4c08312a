package gc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// env is an index and a blob store with one module version whose archive
// is stored (kept), and two stored blobs nothing names (orphans).
type env struct {
	idx            *sqlite.Index
	blobs          *fsblob.Store
	blobDir        string
	kept           string
	orphans        []string
	orphanBytes    int64
	later, present func() time.Time
}

func put(t *testing.T, b store.Blobs, content string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	d := hex.EncodeToString(sum[:])
	if err := b.Put(t.Context(), d, int64(len(content)), bytes.NewReader([]byte(content))); err != nil {
		t.Fatal(err)
	}
	return d
}

func newEnv(t *testing.T) *env {
	st := sqlitetest.New(t)
	idx, blobs := st.Index, st.Blobs
	e := &env{idx: idx, blobs: blobs, blobDir: st.BlobDir()}
	ctx := t.Context()
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.kept = put(t, blobs, "module archive")
	if err := idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: e.kept, ArchiveFormat: "tar.gz", ArchiveSize: 14, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"orphan one", "orphan number two"} {
		e.orphans = append(e.orphans, put(t, blobs, s))
		e.orphanBytes += int64(len(s))
	}
	// Two clocks: "later" is past the grace period of every blob above,
	// "present" within it.
	e.later = func() time.Time { return time.Now().Add(2 * gc.DefaultGrace) }
	e.present = time.Now
	return e
}

func (e *env) collector(t *testing.T, now func() time.Time, idx store.GarbageCollection, reg prometheus.Registerer) *gc.Collector {
	t.Helper()
	if idx == nil {
		idx = e.idx
	}
	c, err := gc.New(gc.Options{Index: idx, Blobs: e.blobs, Now: now, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) stored(t *testing.T, d string) bool {
	t.Helper()
	_, err := e.blobs.Stat(t.Context(), d)
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestDryRunDeletesNothing(t *testing.T) {
	e := newEnv(t)
	rep, err := e.collector(t, e.later, nil, nil).Run(t.Context(), gc.Run{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reclaimed) != 2 || rep.ReclaimedBytes != e.orphanBytes || rep.Stored != 3 || rep.Referenced != 1 {
		t.Errorf("dry run report = %+v, want the 2 orphans (%d bytes) of 3 stored blobs, 1 referenced", rep, e.orphanBytes)
	}
	for _, d := range append([]string{e.kept}, e.orphans...) {
		if !e.stored(t, d) {
			t.Errorf("the dry run deleted blob %s", d)
		}
	}
}

func TestRunReclaimsOnlyUnreferenced(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	c := e.collector(t, e.later, nil, reg)
	rep, err := c.Run(t.Context(), gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reclaimed) != 2 || rep.ReclaimedBytes != e.orphanBytes {
		t.Errorf("report = %+v, want the 2 orphans", rep)
	}
	if !e.stored(t, e.kept) {
		t.Error("the referenced archive was deleted")
	}
	for _, d := range e.orphans {
		if e.stored(t, d) {
			t.Errorf("orphan %s survived", d)
		}
	}
	if got := counter(t, reg, "trove_gc_bytes_reclaimed_total"); got != float64(e.orphanBytes) {
		t.Errorf("trove_gc_bytes_reclaimed_total = %v, want %d", got, e.orphanBytes)
	}
	// Deleting the version leaves its archive to the next collection.
	if err := e.idx.DeleteModuleVersion(t.Context(), "acme", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if !e.stored(t, e.kept) {
		t.Error("deleting the version deleted its archive inline")
	}
	if rep, err = c.Run(t.Context(), gc.Run{}); err != nil || len(rep.Reclaimed) != 1 || rep.Reclaimed[0].Digest != e.kept {
		t.Errorf("second run = %+v, %v; want the deleted version's archive", rep, err)
	}
	if e.stored(t, e.kept) {
		t.Error("the deleted version's archive survived the second run")
	}
}

// counter returns the value of a registered counter.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestGraceKeepsYoungBlobs(t *testing.T) {
	e := newEnv(t)
	rep, err := e.collector(t, e.present, nil, nil).Run(t.Context(), gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reclaimed) != 0 || rep.Young != 2 {
		t.Errorf("report = %+v, want nothing reclaimed and the 2 orphans kept as young", rep)
	}
	for _, d := range e.orphans {
		if !e.stored(t, d) {
			t.Errorf("young orphan %s was deleted", d)
		}
	}
}

// TestPutRenewsAge: putting a blob that is stored already (a publish
// reusing the bytes of a deleted version) makes it young again.
func TestPutRenewsAge(t *testing.T) {
	e := newEnv(t)
	past := time.Now().Add(-2 * gc.DefaultGrace)
	for _, d := range e.orphans {
		b, err := e.blobs.Open(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		if err := os.Chtimes(filepath.Join(e.blobDir, "sha256", d[:2], d), past, past); err != nil {
			t.Fatal(err)
		}
	}
	put(t, e.blobs, "orphan one") // e.orphans[0] again
	rep, err := e.collector(t, e.present, nil, nil).Run(t.Context(), gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Reclaimed) != 1 || rep.Reclaimed[0].Digest != e.orphans[1] || !e.stored(t, e.orphans[0]) {
		t.Errorf("report = %+v; want only the orphan not put again reclaimed", rep)
	}
}

// staleMark forgets one digest in ReferencedBlobs, as a mark taken before
// a publish committed would.
type staleMark struct {
	store.GarbageCollection
	forget string
}

func (s staleMark) ReferencedBlobs(ctx context.Context, fn func(string) error) error {
	return s.GarbageCollection.ReferencedBlobs(ctx, func(d string) error {
		if d == s.forget {
			return nil
		}
		return fn(d)
	})
}

func TestSweepAsksAgain(t *testing.T) {
	e := newEnv(t)
	rep, err := e.collector(t, e.later, staleMark{e.idx, e.kept}, nil).Run(t.Context(), gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rescued != 1 || !e.stored(t, e.kept) {
		t.Errorf("report = %+v; the blob referenced after the mark must be kept", rep)
	}
}

func TestOneCollectionAtATime(t *testing.T) {
	e := newEnv(t)
	now := e.later()
	if err := e.idx.AcquireGCLease(t.Context(), "another replica", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, err := e.collector(t, e.later, nil, nil).Run(t.Context(), gc.Run{})
	if !registry.IsKind(err, registry.Conflict) {
		t.Fatalf("Run while another holds the lease = %v, want Conflict", err)
	}
	for _, d := range e.orphans {
		if !e.stored(t, d) {
			t.Errorf("a refused run deleted %s", d)
		}
	}
	// A dry run needs no lease.
	if _, err := e.collector(t, e.later, nil, nil).Run(t.Context(), gc.Run{DryRun: true}); err != nil {
		t.Errorf("dry run while another holds the lease: %v", err)
	}
}

func TestShortGraceRefused(t *testing.T) {
	e := newEnv(t)
	for _, g := range []time.Duration{-time.Hour, time.Second} {
		if _, err := e.collector(t, e.later, nil, nil).Run(t.Context(), gc.Run{Grace: g}); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("grace %s: err = %v, want Invalid", g, err)
		}
	}
}

// clock is a settable clock, shared by an index (which dates the
// releases of blobs by it) and a collector.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

// Now reads the clock.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// shareClock makes idx date releases by c.
func shareClock(t *testing.T, idx store.GarbageCollection, c *clock) {
	t.Helper()
	x, ok := idx.(interface{ SetClock(func() time.Time) })
	if !ok {
		t.Fatalf("index %T has no SetClock", idx)
	}
	x.SetClock(c.Now)
}

// reclaimedSet returns the digests a report reclaimed.
func reclaimedSet(rep gc.Report) map[string]bool {
	out := map[string]bool{}
	for _, b := range rep.Reclaimed {
		out[b.Digest] = true
	}
	return out
}

// TestGraceCountsFromTheDelete: a blob written long ago (its last write
// is older than the grace period) whose version is deleted now is kept
// until the grace period has passed since the delete, by a dry run as by
// a collection.
func TestGraceCountsFromTheDelete(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	clk := newClock(e.later()) // every blob's last write is past the grace period
	shareClock(t, e.idx, clk)
	c := e.collector(t, clk.Now, nil, nil)
	if err := e.idx.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	clk.Add(gc.DefaultGrace - time.Minute)
	for _, dry := range []bool{true, false} {
		rep, err := c.Run(ctx, gc.Run{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if r := reclaimedSet(rep); r[e.kept] || len(r) != 2 || rep.Young != 1 {
			t.Errorf("run (dry %v) within the grace period of the delete reclaimed %v (%d young); want the 2 orphans only, the deleted version's archive young", dry, r, rep.Young)
		}
	}
	if !e.stored(t, e.kept) {
		t.Fatal("the archive of a version deleted within the grace period was collected")
	}
	clk.Add(2 * time.Minute)
	rep, err := c.Run(ctx, gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if r := reclaimedSet(rep); !r[e.kept] || len(r) != 1 || e.stored(t, e.kept) {
		t.Errorf("run past the grace period of the delete reclaimed %v; want the deleted version's archive", r)
	}
}

// TestReferencedAgainIsKept: a released blob that a version names again
// is kept however old its release; deleted again, it is kept until the
// grace period has passed since that second delete.
func TestReferencedAgainIsKept(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	clk := newClock(e.later())
	shareClock(t, e.idx, clk)
	c := e.collector(t, clk.Now, nil, nil)
	if err := e.idx.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * time.Minute)
	again := registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "1.1.0",
		ArchiveDigest: e.kept, ArchiveFormat: "tar.gz", ArchiveSize: 14, PublishedAt: clk.Now()}
	if err := e.idx.CreateModuleVersion(ctx, again); err != nil {
		t.Fatal(err)
	}
	clk.Add(3 * gc.DefaultGrace)
	if _, err := c.Run(ctx, gc.Run{}); err != nil || !e.stored(t, e.kept) {
		t.Fatalf("run = %v; the archive a version names again stored %v, want true", err, e.stored(t, e.kept))
	}
	if err := e.idx.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	clk.Add(gc.DefaultGrace / 2)
	if rep, err := c.Run(ctx, gc.Run{}); err != nil || rep.Young != 1 || !e.stored(t, e.kept) {
		t.Fatalf("run within the grace period of the second delete = %+v, %v; want the archive kept as young", rep, err)
	}
	clk.Add(gc.DefaultGrace)
	if rep, err := c.Run(ctx, gc.Run{}); err != nil || !reclaimedSet(rep)[e.kept] {
		t.Errorf("run past the grace period of the second delete = %+v, %v; want the archive reclaimed", rep, err)
	}
}

// TestRetention applies a namespace's rule (keep the last version): a dry
// run reports the expired versions and changes nothing; a collection
// deletes the versions and keeps their blobs, which it has just released,
// as young; a collection a grace period later reclaims them, and keeps a
// blob the kept version shares.
func TestRetention(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	clk := newClock(e.later())
	shareClock(t, e.idx, clk)
	shared := put(t, e.blobs, "archive of 1.1.0 and 1.2.0")
	for i, v := range []string{"1.1.0", "1.2.0"} {
		if err := e.idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: v,
			ArchiveDigest: shared, ArchiveFormat: "tar.gz", ArchiveSize: 26, PublishedAt: time.Now().Add(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.idx.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "acme", KeepLast: 1, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var changed []string // what the index announces to this process's caches
	defer e.idx.OnCommit(func(c store.Change) {
		if c.Kind == store.ChangeModule {
			changed = append(changed, c.Namespace+"/"+c.Name+"/"+c.System)
		}
	})()
	c, err := gc.New(gc.Options{Index: e.idx, Blobs: e.blobs, Now: clk.Now, Versions: e.idx})
	if err != nil {
		t.Fatal(err)
	}
	expired := func(rep gc.Report) []string {
		var out []string
		for _, x := range rep.Expired {
			out = append(out, x.Kind+" "+x.Address()+" "+x.Version)
		}
		return out
	}
	reclaimed := reclaimedSet
	rep, err := c.Run(ctx, gc.Run{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := expired(rep); len(got) != 2 || got[0] != "module acme/net/aws 1.1.0" || got[1] != "module acme/net/aws 1.0.0" {
		t.Errorf("dry run expired %v, want 1.1.0 and 1.0.0", got)
	}
	if r := reclaimed(rep); r[e.kept] || r[shared] || len(r) != 2 || rep.Young != 1 {
		t.Errorf("dry run would reclaim %v (%d young); want the 2 orphans, and 1.0.0's archive, which the run would release, young", r, rep.Young)
	}
	if vs, err := e.idx.ListModuleVersions(ctx, "acme", "net", "aws"); err != nil || len(vs) != 3 || !e.stored(t, e.kept) || len(changed) != 0 {
		t.Fatalf("the dry run changed something: %d versions (%v), archive stored %v, changes %v", len(vs), err, e.stored(t, e.kept), changed)
	}
	rep, err = c.Run(ctx, gc.Run{})
	if err != nil {
		t.Fatal(err)
	}
	if got := expired(rep); len(got) != 2 {
		t.Errorf("collection expired %v, want 2 versions", got)
	}
	vs, err := e.idx.ListModuleVersions(ctx, "acme", "net", "aws")
	if err != nil || len(vs) != 1 || vs[0].Version != "1.2.0" {
		t.Errorf("versions after the collection = %+v, %v; want 1.2.0 only", vs, err)
	}
	if r := reclaimed(rep); r[e.kept] || len(r) != 2 || rep.Young != 1 || !e.stored(t, e.kept) || !e.stored(t, shared) {
		t.Errorf("the collection reclaimed %v (%d young), kept 1.0.0's archive %v, the shared one %v; want the 2 orphans reclaimed and both archives kept",
			r, rep.Young, e.stored(t, e.kept), e.stored(t, shared))
	}
	if len(changed) != 2 {
		t.Errorf("module changes announced = %v, want one per deleted version", changed)
	}
	clk.Add(gc.DefaultGrace + time.Minute)
	if rep, err = c.Run(ctx, gc.Run{}); err != nil || !reclaimed(rep)[e.kept] || len(rep.Reclaimed) != 1 {
		t.Errorf("collection a grace period later = %+v, %v; want 1.0.0's archive reclaimed", rep, err)
	}
	if e.stored(t, e.kept) || !e.stored(t, shared) {
		t.Errorf("a grace period later: 1.0.0's archive stored %v (want false), the shared one %v (want true)", e.stored(t, e.kept), e.stored(t, shared))
	}
	// The newest version is never deleted.
	if rep, err = c.Run(ctx, gc.Run{}); err != nil || len(rep.Expired) != 0 {
		t.Errorf("another collection expired %v, %v; want nothing", expired(rep), err)
	}
}
