// Package gc is the blob garbage collector: it deletes the blobs no index
// row references any more (after provider versions, providers or modules
// were deleted), and is safe against publishes running at the same time
// on any replica sharing the index and the blob store.
//
// It is a mark and sweep with a grace period:
//
//  1. take the collector lease (store.GarbageCollection), so that one
//     collection runs at a time among every replica;
//  2. mark: read every digest the index references, in one snapshot;
//  3. list the blob store and keep, as candidates, the blobs not marked;
//  4. sweep each candidate, in one index transaction that no commit of
//     rows naming blobs can come between (store.CollectBlob): ask the
//     index again whether a row references it now, skip it if it was
//     modified or released (its last row deleted) within the grace
//     period, and only then delete it.
//
// With Options.Versions, each collection first applies the namespaces'
// retention rules (package retention): it deletes the versions they
// expire, whose blobs a collection at least the grace period later
// reclaims; a dry run deletes nothing and counts the blobs only those
// versions name as young.
//
// A publish stores its blobs before its index transaction commits, so a
// blob may be unreferenced for as long as a publish takes; a Put of a
// blob that is present already renews its modification time
// (store.Blobs). The grace period must therefore be longer than the
// slowest publish (and the clock difference between the replicas and
// the blob store); the default is an hour. Step 4's second question
// closes the window of a publish that committed after the mark, and its
// transaction that of a publish committing during the sweep of its blob:
// such a publish checks, under the same lock, that its blobs are still
// stored (store.GarbageCollection.GuardBlobs), so it either commits
// before the question or fails after the delete.
//
// The grace period also counts from a blob's release: the index records
// when the last row naming a blob was deleted, in the delete's own
// transaction, and the collector keeps the blob until the grace period
// has passed since then too. A blob that a snapshot of the index names is
// therefore still stored until at least the grace period after the
// snapshot, whatever is deleted and collected meanwhile: a copy of the
// blob store made within that time holds every blob the snapshot names
// (docs/backup.md).
package gc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// DefaultGrace is the grace period when none is given: blobs modified or
// released more recently than this are never collected.
const DefaultGrace = time.Hour

// MinGrace is the shortest grace period a collection accepts from an
// operator (tests may pass shorter ones through Options.AllowShortGrace).
const MinGrace = time.Minute

// leaseTTL is how long the collector lease lasts before it must be
// renewed; a crashed collector blocks the next one for at most this.
const leaseTTL = 5 * time.Minute

// Options configures a Collector.
type Options struct {
	Index store.GarbageCollection
	Blobs store.Blobs
	// Logger hears what is collected; nil discards.
	Logger *slog.Logger
	// Metrics, if set, gets trove_gc_runs_total, trove_gc_blobs_reclaimed_total
	// and trove_gc_bytes_reclaimed_total.
	Metrics prometheus.Registerer
	// Now is the clock; nil means time.Now. The index dates the releases
	// of blobs by its own clock, time.Now unless a test set another.
	Now func() time.Time
	// AllowShortGrace accepts grace periods below MinGrace (tests).
	AllowShortGrace bool
	// Versions, if set, applies the namespaces' retention rules at the
	// start of every collection: the versions they expire are deleted
	// (in a dry run: reported, with the blobs that frees).
	// The index announces the versions they delete to every cache
	// (store.ChangeHook, store.ChangeFeed).
	Versions Versions
}

// Collector runs garbage collections. It is safe for concurrent use; its
// runs are serialized by the index's lease.
type Collector struct {
	opt                Options
	runs, blobs, bytes prometheus.Counter
	mu                 sync.Mutex // serializes this process's runs
}

// New returns a Collector, registering its metrics.
func New(opt Options) (*Collector, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	c := &Collector{
		opt: opt,
		runs: prometheus.NewCounter(prometheus.CounterOpts{Name: "trove_gc_runs_total",
			Help: "Garbage collections this process completed (dry runs excluded)."}),
		blobs: prometheus.NewCounter(prometheus.CounterOpts{Name: "trove_gc_blobs_reclaimed_total",
			Help: "Blobs the garbage collections of this process deleted."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "trove_gc_bytes_reclaimed_total",
			Help: "Bytes of the blobs the garbage collections of this process deleted."}),
	}
	if opt.Metrics != nil {
		for _, m := range []prometheus.Collector{c.runs, c.blobs, c.bytes} {
			if err := opt.Metrics.Register(m); err != nil {
				return nil, registry.Wrap(registry.Internal, err, "registering the garbage collector's metrics")
			}
		}
	}
	return c, nil
}

// Run is one collection's settings.
type Run struct {
	// DryRun reports what would be deleted and deletes nothing (and takes
	// no lease).
	DryRun bool
	// Grace keeps every blob modified or released within it; 0 means
	// DefaultGrace.
	Grace time.Duration
	// Delete, if set, deletes a version a retention rule expired, with
	// its audit entry and webhook event in its transaction, as a user's
	// delete is (operations.ExpireVersion: every entrance passes it);
	// NotFound if the version is gone already. nil deletes the index
	// rows alone (tests of the collector).
	Delete func(ctx context.Context, e Expired) error
}

// Blob is one blob a collection reclaimed (or would reclaim).
type Blob struct {
	Digest string
	Size   int64
}

// Report is what a collection found and did.
type Report struct {
	DryRun bool
	Grace  time.Duration
	// Stored is how many blobs the store held; Referenced how many
	// digests the index names.
	Stored, Referenced int
	// Reclaimed are the blobs deleted (would be, in a dry run), by digest;
	// ReclaimedBytes their total size.
	Reclaimed      []Blob
	ReclaimedBytes int64
	// Young counts unreferenced blobs kept because they were modified or
	// released within the grace period; Rescued those a row referenced
	// again by the time they were looked at a second time.
	Young, Rescued int
	// Expired are the versions the retention rules deleted (would
	// delete, in a dry run). The blobs that frees are released by the
	// run, so it keeps them as young, and a later one reclaims them.
	Expired []Expired
}

// Run runs one collection. Conflict if another collection (of any
// process sharing the index) is running; Invalid for a grace period below
// MinGrace. On another failure the report says what was done before it
// (versions deleted by retention rules, blobs reclaimed).
func (c *Collector) Run(ctx context.Context, run Run) (Report, error) {
	if run.Grace == 0 {
		run.Grace = DefaultGrace
	}
	if run.Grace < 0 || (run.Grace < MinGrace && !c.opt.AllowShortGrace) {
		return Report{}, registry.Errorf(registry.Invalid, "the grace period must be at least %s, got %s: a shorter one could delete the blobs of a publish in progress", MinGrace, run.Grace)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := Report{DryRun: run.DryRun, Grace: run.Grace}
	holder := ""
	if !run.DryRun {
		holder = newHolder()
		if err := c.opt.Index.AcquireGCLease(ctx, holder, c.opt.Now(), c.opt.Now().Add(leaseTTL)); err != nil {
			return rep, err
		}
		defer func() {
			if err := c.opt.Index.ReleaseGCLease(context.WithoutCancel(ctx), holder); err != nil {
				c.opt.Logger.WarnContext(ctx, "releasing the garbage collector lease failed; it expires by itself", "err", err)
			}
		}()
	}
	renewed := c.opt.Now()
	renew := func() error {
		if holder == "" || c.opt.Now().Sub(renewed) < leaseTTL/3 {
			return nil
		}
		renewed = c.opt.Now()
		return c.opt.Index.AcquireGCLease(ctx, holder, renewed, renewed.Add(leaseTTL))
	}

	// Retention.
	var freed map[string]bool // in a dry run: blobs only expired versions name
	if c.opt.Versions != nil {
		var err error
		if rep.Expired, err = c.applyRetention(ctx, run); err != nil {
			return rep, err
		}
		if run.DryRun {
			if freed, err = c.freedBy(ctx, rep.Expired); err != nil {
				return rep, err
			}
		}
	}
	// Mark.
	marked := map[string]bool{}
	if err := c.opt.Index.ReferencedBlobs(ctx, func(d string) error { marked[d] = !freed[d]; return nil }); err != nil {
		return rep, err
	}
	rep.Referenced = len(marked)
	// List.
	var candidates []Blob
	err := c.opt.Blobs.Walk(ctx, func(d string, size int64) error {
		if err := renew(); err != nil { // a long listing must not lose the lease
			return err
		}
		rep.Stored++
		if !marked[d] {
			candidates = append(candidates, Blob{Digest: d, Size: size})
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Digest < candidates[j].Digest })
	// Sweep.
	for _, b := range candidates {
		if err := renew(); err != nil {
			return rep, err
		}
		collected, err := c.sweep(ctx, b.Digest, run, freed[b.Digest], &rep)
		if err != nil {
			return rep, err
		}
		if !collected {
			continue
		}
		if !run.DryRun {
			c.blobs.Inc()
			c.bytes.Add(float64(b.Size))
			c.opt.Logger.InfoContext(ctx, "garbage collector deleted a blob", "digest", b.Digest, "bytes", b.Size)
		}
		rep.Reclaimed = append(rep.Reclaimed, b)
		rep.ReclaimedBytes += b.Size
	}
	if !run.DryRun {
		c.runs.Inc()
	}
	return rep, nil
}

// sweep deletes an unmarked blob (in a dry run: decides whether it
// would) if no row references it now and the grace period has passed
// since its last write and since its release (store.GarbageCollection:
// the delete of the last row that named it), and reports whether it did. Outside a dry run the question,
// the reading of the time and the delete run in store.CollectBlob, which
// no commit of rows naming blobs can come between (see docs/lifecycle.md):
// a write that commits before it is seen by the question, and one that
// commits after finds the blob gone and fails, writing nothing.
func (c *Collector) sweep(ctx context.Context, digest string, run Run, freed bool, rep *Report) (bool, error) {
	var young, gone bool
	collect := func(ctx context.Context, released time.Time) (bool, error) {
		young, gone = false, false // collect runs again if its transaction is retried
		b, err := c.opt.Blobs.Open(ctx, digest)
		if registry.IsKind(err, registry.NotFound) {
			gone = true // deleted meanwhile
			return false, nil
		}
		if err != nil {
			return false, err
		}
		since := b.ModTime
		b.Close()
		if released.After(since) {
			since = released
		}
		if young = c.opt.Now().Sub(since) < run.Grace; young || run.DryRun {
			return false, nil
		}
		return true, c.opt.Blobs.Delete(ctx, digest)
	}
	var referenced bool
	var err error
	switch {
	case !run.DryRun:
		referenced, err = c.opt.Index.CollectBlob(ctx, digest, collect)
	case freed:
		// The rows of a dry run's expired versions still name it; the
		// run would release it now, and so keep it.
		_, err = collect(ctx, c.opt.Now())
	default:
		if referenced, err = c.opt.Index.BlobReferenced(ctx, digest); err == nil && !referenced {
			var released time.Time
			if released, err = c.opt.Index.BlobReleased(ctx, digest); err == nil {
				_, err = collect(ctx, released)
			}
		}
	}
	switch {
	case err != nil:
		return false, err
	case referenced:
		rep.Rescued++
		return false, nil
	case young:
		rep.Young++
		return false, nil
	}
	return !gone, nil
}

// newHolder returns a random lease holder id for one run.
func newHolder() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "gc-" + hex.EncodeToString(b)
}
