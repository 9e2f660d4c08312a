// Package respcache keeps rendered responses in memory: the providers.v1
// versions and download documents, the network mirror's documents, the
// modules.v1 versions documents and the web UI's pages are rendered once,
// with a strong ETag and their Content-Length, and served from here until
// they are invalidated or age out. It is Trove's one response cache: each
// use is an instance with its own byte budget.
//
// # Contract
//
// A Cache[O, D, V] holds entries under a two-part key: an owner O (a
// provider, a module) and a document D of that owner. It is safe for
// concurrent use.
//
//   - Lookup returns the entry stored under a key, whatever its age, or
//     nil. It takes a read lock, does not allocate and marks the entry as
//     recently used. Has only tells whether an entry is stored, without
//     marking it: only a real read keeps an entry from eviction.
//   - An entry's body, ETag, Content-Length and Value never change after
//     it was stored, so callers may use them without a lock. The ETag is
//     a strong, quoted tag derived from the body's SHA-256: equal bodies
//     have equal tags. ETag and Length are one-element slices meant to be
//     assigned to response headers as they are.
//   - Freshness is measured from the moment the render that produced an
//     entry started (Options.Now). An entry is Fresh for at least
//     3/4 of MaxAge and at most 7/8 of it (a per-entry random point in
//     between, so that entries stored together do not all go stale
//     together); then it is Stale until MaxAge has passed; from then on it
//     is Expired and is never served again. State tells which.
//     Options.FreshFor shortens the fresh part (3/4 to 7/8 of it) without
//     shortening MaxAge. StateAt tells it at a given time (a request's
//     arrival, read once per request) without reading the clock.
//   - A document rendered as Rendered.Lasting changes only through the
//     cache's invalidations. While Options.Settled reports that every
//     such change arrives as an invalidation the moment it commits, its
//     entry is Fresh for 3/4 to 7/8 of Options.SettledAge and Stale until
//     SettledAge (10 minutes by default) instead: rendering it again on
//     age would only repeat its bytes. Once Settled stops holding, the
//     entry is back on MaxAge, measured from its render.
//   - Load is for a request that has no usable entry (none, Expired, or
//     one the caller judges unusable): it returns an entry stored under
//     the key since the caller's Lookup if that one is not Expired, else
//     it joins the render of the key already in progress, else it renders
//     itself. However many requests ask, one render per key runs at a
//     time (single flight); each waiting request may give up with its own
//     context, the render goes on.
//   - Revalidate is for a request that serves a Stale entry: the request
//     does not wait, and at most one background render per key runs
//     however many requests call it (and none while a Load of the key
//     renders), and at most MaxRefreshes background renders run at once
//     in the whole cache, so that a burst of entries going stale together
//     cannot take every CPU from the requests: a stale hit that finds them
//     all busy queues its render, which starts as soon as one of them
//     ends, in the order of the hits. Every stale entry that was hit is
//     thus rendered again, not only those whose hits happened to find a
//     free slot: an entry reaches its maximum age (and its requests wait
//     for a render) only when the queued renders take longer than its
//     stale part, MaxAge/8 to MaxAge/4 (or FreshFor's), on a machine that
//     cannot render its documents as fast as they go stale. A queued
//     render whose entry was replaced, removed, expired or is being
//     rendered by a Load meanwhile is skipped. The queue holds a key at
//     most once (a later entry of a queued key takes the queued one's
//     place and turn) and at most Options.MaxQueued keys: a stale hit
//     that finds it full queues nothing and its entry stays served stale;
//     a later hit queues it once there is room, and should none find
//     room before the entry's maximum age, the next request renders it
//     (Load). When the render succeeds its entry replaces the stale one.
//     When it fails, the error is logged and the stale entry stays, to be
//     served until it expires; no new background render of it starts for
//     RetryAfter. An error for which Options.Drop reports true (the
//     document no longer exists) removes the entry instead.
//   - A render that repeats the document of the entry it replaces (the
//     stale entry of a background render, or the entry a Load's caller
//     saw): the same bytes of Body and Tail, and the same ETag if the
//     render brings its own, stores an entry that shares that entry's
//     Body, Tail, ETag, Length and gzip variant (nothing hashed or
//     compressed again, the render's bytes left to the collector, the
//     same accounted size when Rendered.Size is the same), with the
//     render's Value and new freshness times. Documents that change only
//     through the index are thus rendered again at their maximum age,
//     as before, but cost only their render when nothing changed.
//   - The cache keeps the keys given to Load and Revalidate (a stored
//     string key may be replaced by the one of a later store): pass keys
//     that do not point into request memory. Lookup keeps nothing.
//   - A render whose result says Rendered.NoStore (a degraded document)
//     is handed to the requests waiting for it and not stored as a
//     document is: after a Load's render the key holds no entry, so the
//     next request renders again, or, with Options.NoStoreAge, the
//     degraded entry, Fresh for that age from its render's start and
//     then Expired (never Stale, never rendered in the background), so
//     that the requests of that age are served it and the first after
//     it renders again; a background render's stale entry stays, as
//     after a failed render (served until it expires, no new background
//     render of it for RetryAfter), nothing logged.
//   - Renders run detached from the requests that started them (a
//     request's cancellation does not cancel them), bounded by
//     RenderTimeout. A render that panics counts as a failed render.
//   - Invalidate (one key), InvalidateOwner (every document of an owner)
//     and InvalidateAll remove entries at once and start a new
//     generation: a render that started before any invalidation never
//     stores its result (the requests waiting for it still get it), and a
//     Load after an invalidation never joins a render that started before
//     it. Renders in progress do not delay invalidations.
//   - A document may end with a Tail shared by many entries (the signing
//     keys every download document of a provider repeats): the ETag and
//     Length cover Body and Tail, callers send Body then Tail, and the
//     Tail is not accounted to any entry (it is held once, elsewhere).
//   - Memory: each entry is accounted as its body, its Rendered.Size and
//     EntryOverhead. After every store, entries are evicted until the
//     total is within MaxBytes and their count within MaxEntries, with the
//     CLOCK approximation of LRU (an entry used since the previous sweep
//     is spared once); the entry just stored is never evicted by its own
//     store, so a single entry larger than MaxBytes is kept alone, unless
//     it is larger than Options.MaxEntryBytes: then it is not stored. A
//     store that takes a shared Budget over sheds it down to its low-water
//     mark (see Budget).
//   - A cache lives as long as the process (Trove builds its caches
//     once, with its server): there is no Close, and a Budget keeps
//     every cache that joined it.
//   - Compression: with Options.GzipMinBytes, an entry of at least that
//     many bytes is Compressible. Its gzip variant (Entry.Gzip) is made
//     once, on the first request that accepts gzip, kept with the entry
//     and accounted to the byte budget with it; its ETag is the entry's
//     with "-gz" inside the quotes. Serve answers requests that accept
//     gzip (AcceptsGzip) with it (Content-Encoding: gzip, its own
//     Content-Length and ETag, If-None-Match compared with its ETag) and
//     every answer of a compressible entry with Vary: Accept-Encoding.
package respcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/httpjson"
)

// EntryOverhead approximates the memory an entry costs besides its body
// and Rendered.Size: the entry, its ETag and length strings, the keys and
// the map slots, with size-class rounding (measured at about 800 bytes
// per download document in a cold sweep; see docs/benchmarks.md).
const EntryOverhead = 1024

// Defaults of Options.
const (
	DefaultRenderTimeout = 30 * time.Second
	// DefaultMaxQueued is the default of Options.MaxQueued: a thousand
	// queued renders are minutes of work for the slots, past the
	// stale part of any entry.
	DefaultMaxQueued = 1024
	// DefaultSettledAge is the default of Options.SettledAge.
	DefaultSettledAge = 10 * time.Minute
)

// ErrRenderPanicked is the error of a render that panicked.
var ErrRenderPanicked = errors.New("rendering the document failed unexpectedly")

// Options configures a Cache.
type Options struct {
	// Name labels the cache's log lines ("providers", "modules").
	Name string
	// MaxAge is the longest an entry is served after its render started
	// (required, > 0).
	MaxAge time.Duration
	// MaxBytes and MaxEntries bound the accounted memory and the number
	// of entries (<= 0: unbounded).
	MaxBytes   int64
	MaxEntries int
	// RetryAfter is how long after a failed background render of a stale
	// entry the next one may start (default MaxAge/8).
	RetryAfter time.Duration
	// MaxRefreshes bounds the background renders running at once
	// (default half of GOMAXPROCS, at least 1).
	MaxRefreshes int
	// RenderTimeout bounds one render (default DefaultRenderTimeout).
	RenderTimeout time.Duration
	// Drop reports whether a render error means the document is gone, so
	// that a stale entry is removed rather than kept (nil: never).
	Drop func(error) bool
	// Now is the clock (default time.Now). When set, StateAt reads it
	// instead of taking the time its caller hands in: leave it nil in
	// production, where that time is the request's.
	Now func() time.Time
	// Log receives failed background renders (nil: discarded).
	Log *slog.Logger
	// FreshFor is the age before which an entry is always fresh (default
	// MaxAge): an entry is fresh for a random point between 3/4 and 7/8
	// of it, then stale until MaxAge. A FreshFor well below MaxAge keeps
	// entries served stale while they are rendered again for long (the
	// web UI's pages, whose changes all come through invalidations).
	FreshFor time.Duration
	// MaxEntryBytes, if positive, is the largest accounted size of an
	// entry that is kept: a larger render is handed to the requests that
	// waited for it and not stored.
	MaxEntryBytes int64
	// Budget, if set, is a byte budget shared with other caches: this
	// cache's accounted memory counts in it too, and after a store it
	// evicts its own entries (never the one just stored) until the
	// shared total is within the budget as well as its own MaxBytes.
	Budget *Budget
	// GzipMinBytes, if positive, gives every document of at least this
	// many bytes a gzip variant, made on first request (Entry.Gzip) and
	// served by Entry.Serve to requests that accept it (0: never
	// compress). DefaultGzipMinBytes is a good value.
	GzipMinBytes int
	// NoStoreAge, if positive, is how long a Load's Rendered.NoStore
	// render is kept (a negative-cache age, at most MaxAge): Fresh from
	// its render's start until then, Expired after, never Stale. The
	// requests within it are served the degraded document without a
	// render; the first after it renders again, so a recovered cause is
	// seen within the age. A background render's NoStore result still
	// leaves the stale entry it was to replace. 0: not kept at all.
	NoStoreAge time.Duration
	// MaxQueued bounds the background renders waiting for one of
	// MaxRefreshes to end (default DefaultMaxQueued): a stale hit that
	// finds the queue full queues nothing (see the package
	// documentation).
	MaxQueued int
	// Settled, if set, reports whether every change of a Lasting
	// document reaches this cache as an invalidation the moment it is
	// committed (Trove's embedded index: one process, the only writer,
	// drops what each write changes before the write returns). While it
	// does, a Lasting entry is fresh and served for SettledAge rather
	// than FreshFor and MaxAge: its render on age then only guards
	// against a missed invalidation. It is called only for a Lasting
	// entry past its FreshFor, so it may read a clock or an atomic.
	Settled func() bool
	// SettledAge is how long a Lasting entry is served while Settled
	// holds (default DefaultSettledAge; never less than MaxAge).
	SettledAge time.Duration
}

// Budget is a byte budget shared by several caches (Options.Budget): the
// protocol caches are held within one (trove serve --cache-bytes), the
// web UI's page, search and documentation caches within another. It is
// safe for concurrent use.
//
// A store that takes the total over the budget sheds it, after the
// storing cache's lock was released, down to a low-water mark 1/16 below
// the budget, so that the stores that follow do not sweep again (the
// cost of a sweep is amortised over them): first one sweep of each other
// cache (each evicts its entries not used since its previous sweep, and
// clears the marks of the others), so that a cache nobody asks any more
// gives its memory back to the busy ones; then up to two sweeps of the
// storing cache (never its entry just stored); then, if the total is
// still over the budget itself, two sweeps of the others. Each sweep
// takes the cache's lock (never two at once, so stores cannot deadlock
// each other; hits wait only for that one sweep). One shed runs at a
// time: a store that finds one running leaves it to that one, which
// sheds again once it is done if the budget is still over.
//
// A cache joins its budget when it is made and stays in it for as long
// as both live (Trove makes its caches once per process).
type Budget struct {
	max, low int64
	used     atomic.Int64

	mu      sync.Mutex
	members []budgetMember

	shedMu  sync.Mutex  // one shed at a time
	pending atomic.Bool // a store found the budget over while a shed ran
}

// budgetMember is a cache of a Budget, as its shed sees it.
type budgetMember interface {
	// sweepForBudget makes up to passes CLOCK passes over the cache's
	// entries, under its lock, while over reports true, sparing the
	// entry it stored last if spareLast.
	sweepForBudget(passes int, spareLast bool, over func() bool)
}

// join adds a cache to the budget.
func (b *Budget) join(m budgetMember) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.members = append(b.members, m)
}

// shed brings the budget down to its low-water mark, if it is over, on
// behalf of a store in the cache of self (see Budget). The caller holds
// no cache's lock.
func (b *Budget) shed(self budgetMember) {
	if !b.over() {
		return
	}
	b.pending.Store(true)
	for b.pending.Load() && b.shedMu.TryLock() {
		b.pending.Store(false)
		if b.over() {
			b.shedRound(self)
		}
		b.shedMu.Unlock()
	}
}

// shedRound is one shed; the caller holds shedMu.
func (b *Budget) shedRound(self budgetMember) {
	b.mu.Lock()
	members := slices.Clone(b.members)
	b.mu.Unlock()
	for _, m := range members {
		if m != self && b.aboveLow() {
			m.sweepForBudget(1, false, b.aboveLow)
		}
	}
	if b.aboveLow() && slices.Contains(members, self) {
		self.sweepForBudget(2, true, b.aboveLow)
	}
	for _, m := range members {
		if m != self && b.over() {
			m.sweepForBudget(2, false, b.over)
		}
	}
}

// NewBudget returns a budget of max bytes (<= 0: unbounded, counted
// only).
func NewBudget(max int64) *Budget { return &Budget{max: max, low: max - max/16} }

// Used returns the bytes the caches sharing b account now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Max returns the budget's bound.
func (b *Budget) Max() int64 { return b.max }

func (b *Budget) over() bool { return b != nil && b.max > 0 && b.used.Load() > b.max }

// aboveLow reports whether the budget is above its low-water mark.
func (b *Budget) aboveLow() bool { return b.max > 0 && b.used.Load() > b.low }

// Rendered is what a render produces.
type Rendered[V any] struct {
	// Body is the document; the cache keeps it and never modifies it.
	Body []byte
	// Tail, if any, is the end of the document, sent after Body. It is
	// meant to be shared by many entries, so it is not accounted: the
	// caller holds one copy per distinct tail (and may count it in Size).
	Tail []byte
	// Value is whatever else the caller wants to keep with the document.
	Value V
	// Size is the memory Value takes, for the byte budget.
	Size int64
	// ETag, if set, is the entry's ETag instead of one derived from the
	// SHA-256 of Body and Tail: a strong, quoted tag that changes whenever
	// one of their bytes does (for documents whose tag the caller computes
	// anyway, as the web UI's pages do).
	ETag string
	// NoStore says the document must be served but not kept: a degraded
	// render (a part of it could not be read, and it says so), which a
	// later request should render again rather than be served from the
	// cache. The requests waiting for the render get it; a Load's render
	// removes the entry it would have replaced (or, with
	// Options.NoStoreAge, replaces it with the degraded entry for that
	// age only), and a background render leaves the stale entry it was
	// to replace, served until it expires and rendered again after
	// RetryAfter, as after a failed render.
	NoStore bool
	// Lasting says the document changes only when the cache is told
	// (Invalidate, InvalidateOwner, InvalidateAll), never with time or
	// elsewhere: while Options.Settled holds, its entry is served for
	// Options.SettledAge (see the package documentation).
	Lasting bool
}

// RenderFunc renders a document. ctx is detached from the request that
// started the render and carries the render timeout.
type RenderFunc[V any] func(ctx context.Context) (Rendered[V], error)

// State is how an entry may be used at a given time.
type State int

// The states of an entry.
const (
	// Expired: no entry, or too old to serve; call Load.
	Expired State = iota
	// Fresh: serve it.
	Fresh
	// Stale: serve it and call Revalidate.
	Stale
)

func (s State) String() string {
	switch s {
	case Fresh:
		return "fresh"
	case Stale:
		return "stale"
	default:
		return "expired"
	}
}

// Entry is one rendered document.
type Entry[V any] struct {
	Body   []byte
	Tail   []byte   // sent after Body; shared with other entries
	ETag   []string // {strong quoted ETag of Body and Tail}
	Length []string // {Content-Length of Body and Tail}
	Value  V

	size      int64
	rendered  int64 // Unix nanoseconds when its render started
	staleAt   int64
	expiresAt int64
	// The stale and expiry times of a Lasting entry while the cache is
	// Settled; 0 otherwise.
	settledStaleAt   int64
	settledExpiresAt int64
	gz               *gzState     // nil: not compressible
	stored           bool         // in the cache's maps; guarded by Cache.mu
	used             atomic.Bool  // set on lookups, cleared by eviction sweeps (CLOCK)
	refreshing       atomic.Bool  // a background render of it was started
	retryAt          atomic.Int64 // no background render before this (after a failure)
}

// gzState is the gzip variant of a compressible entry, made once.
type gzState struct {
	once    sync.Once
	v       atomic.Pointer[Variant]
	account func(n int64) // adds a variant's bytes to the cache's budget
}

// Rendered returns when the render of e started.
func (e *Entry[V]) Rendered() time.Time { return time.Unix(0, e.rendered) }

// WriteBody writes the document, Body then Tail, to w.
func (e *Entry[V]) WriteBody(w io.Writer) error {
	if _, err := w.Write(e.Body); err != nil || len(e.Tail) == 0 {
		return err
	}
	_, err := w.Write(e.Tail)
	return err
}

// smallBody is the size under which net/http adds the Content-Length of a
// response itself (its documented behaviour for a handler that writes
// less than a few KB and does not flush), through a faster path than a
// header the handler sets.
const smallBody = 2048

// Serve answers r with the document: 304 Not Modified when r's
// If-None-Match holds its ETag, else 200 with the body (none for HEAD).
// contentType and cacheControl are header values assigned as they are,
// never modified (as net/http treats them). It returns the status it
// answered (so that a caller can count what it served), and does not
// allocate.
func (e *Entry[V]) Serve(w http.ResponseWriter, r *http.Request, contentType, cacheControl []string) int {
	h := w.Header()
	if e.gz != nil {
		h["Vary"] = headerVaryEncoding
		if AcceptsGzip(r.Header["Accept-Encoding"]) {
			return e.serveGzip(w, r, e.Gzip(), contentType, cacheControl)
		}
	}
	h["Etag"] = e.ETag
	h["Cache-Control"] = cacheControl
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && httpjson.MatchETag(inm[0], e.ETag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h["Content-Type"] = contentType
	if r.Method == http.MethodHead {
		h["Content-Length"] = e.Length
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	}
	if len(e.Body)+len(e.Tail) >= smallBody {
		h["Content-Length"] = e.Length
	}
	w.WriteHeader(http.StatusOK)
	_ = e.WriteBody(w)
	return http.StatusOK
}

// serveGzip is Serve with the gzip variant v.
func (e *Entry[V]) serveGzip(w http.ResponseWriter, r *http.Request, v *Variant, contentType, cacheControl []string) int {
	h := w.Header()
	h["Etag"] = v.ETag
	h["Cache-Control"] = cacheControl
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && httpjson.MatchETag(inm[0], v.ETag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	h["Content-Type"] = contentType
	h["Content-Encoding"] = headerGzip
	h["Content-Length"] = v.Length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(v.Body)
	}
	return http.StatusOK
}

// flightKey identifies one render in progress. The generation is part of
// the key so that a Load after an invalidation never joins a render that
// started before it.
type flightKey[O, D comparable] struct {
	owner O
	doc   D
	gen   uint64
}

type flight[V any] struct {
	done       chan struct{}
	waiters    int  // Loads waiting for this render; guarded by Cache.mu
	background bool // a background render, holding a token
	e          *Entry[V]
	err        error
}

// Cache holds rendered documents; see the package documentation for its
// contract.
type Cache[O, D comparable, V any] struct {
	opt    Options
	ownNow bool // Options.Now was set: StateAt reads it

	mu      sync.RWMutex
	owners  map[O]map[D]*Entry[V]
	entries int
	bytes   int64
	gen     uint64 // incremented by every invalidation
	flights map[flightKey[O, D]]*flight[V]
	// refreshes holds a token per background render running.
	refreshes chan struct{}
	// queue holds the keys of the background renders waiting for a
	// token, oldest first, and queued their renders (one per key, at
	// most MaxQueued); guarded by mu. nqueued is len(queued), read
	// without the lock by the hits that find the queue full.
	queue   []docRef[O, D]
	queued  map[docRef[O, D]]refresh[O, D, V]
	nqueued atomic.Int64
	// last is the entry stored last: the sweeps of a shed its store
	// started spare it.
	last *Entry[V]
}

// docRef is the key of a document.
type docRef[O, D comparable] struct {
	o O
	d D
}

// refresh is a background render of a stale entry e stored under (o, d).
type refresh[O, D comparable, V any] struct {
	o      O
	d      D
	e      *Entry[V]
	render RenderFunc[V]
}

// New returns an empty Cache.
func New[O, D comparable, V any](opt Options) *Cache[O, D, V] {
	if opt.MaxAge <= 0 {
		panic("respcache: MaxAge must be positive")
	}
	if opt.FreshFor <= 0 || opt.FreshFor > opt.MaxAge {
		opt.FreshFor = opt.MaxAge
	}
	if opt.RetryAfter <= 0 {
		opt.RetryAfter = opt.MaxAge / 8
	}
	if opt.MaxRefreshes <= 0 {
		opt.MaxRefreshes = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if opt.RenderTimeout <= 0 {
		opt.RenderTimeout = DefaultRenderTimeout
	}
	ownNow := opt.Now != nil
	if !ownNow {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.MaxQueued <= 0 {
		opt.MaxQueued = DefaultMaxQueued
	}
	if opt.SettledAge <= 0 {
		opt.SettledAge = DefaultSettledAge
	}
	opt.SettledAge = max(opt.SettledAge, opt.MaxAge)
	c := &Cache[O, D, V]{
		opt:       opt,
		ownNow:    ownNow,
		owners:    make(map[O]map[D]*Entry[V]),
		flights:   make(map[flightKey[O, D]]*flight[V]),
		refreshes: make(chan struct{}, opt.MaxRefreshes),
	}
	if opt.Budget != nil {
		opt.Budget.join(c)
	}
	return c
}

// sweepForBudget is c's part of Budget.shed: up to passes sweeps of its
// entries while over reports true, sparing the one it stored last if
// spareLast (the store that sheds is c's).
func (c *Cache[O, D, V]) sweepForBudget(passes int, spareLast bool, over func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keep *Entry[V]
	if spareLast {
		keep = c.last
	}
	c.sweep(keep, passes, over)
}

// MaxAge returns the longest an entry is served.
func (c *Cache[O, D, V]) MaxAge() time.Duration { return c.opt.MaxAge }

// Lookup returns the entry stored under (o, d), whatever its state, or
// nil. It does not allocate.
func (c *Cache[O, D, V]) Lookup(o O, d D) *Entry[V] {
	c.mu.RLock()
	e := c.owners[o][d]
	c.mu.RUnlock()
	if e != nil && !e.used.Load() {
		e.used.Store(true) // without writing a shared cache line when already set
	}
	return e
}

// Has reports whether an entry is stored under (o, d), whatever its
// state. Unlike Lookup it does not mark the entry as used: for a caller
// that only checks a key is known, not a read of the entry.
func (c *Cache[O, D, V]) Has(o O, d D) bool {
	c.mu.RLock()
	e := c.owners[o][d]
	c.mu.RUnlock()
	return e != nil
}

// State returns the state of e (which may be nil) now.
func (c *Cache[O, D, V]) State(e *Entry[V]) State {
	return c.stateAt(e, c.opt.Now().UnixNano())
}

// StateAt returns the state of e (which may be nil) at now: for a
// request, the time it arrived (reqtime.Of), which the server has read
// anyway, so that a hit does not read the clock again. A request is thus
// served what was servable when it arrived (an entry that expired since,
// microseconds ago, included). When Options.Now was set, that clock
// wins over now (tests set one to age entries).
func (c *Cache[O, D, V]) StateAt(e *Entry[V], now time.Time) State {
	if c.ownNow {
		return c.stateAt(e, c.opt.Now().UnixNano())
	}
	return c.stateAt(e, now.UnixNano())
}

// stateAt is the state of e at now (Unix nanoseconds): by its stale and
// expiry times, or, for a Lasting entry past them while the cache is
// Settled, by its settled ones.
func (c *Cache[O, D, V]) stateAt(e *Entry[V], now int64) State {
	switch {
	case e == nil:
		return Expired
	case now < e.staleAt:
		return Fresh
	case e.settledExpiresAt != 0 && c.opt.Settled() && now < e.settledExpiresAt:
		if now < e.settledStaleAt {
			return Fresh
		}
		return Stale
	case now < e.expiresAt:
		return Stale
	default:
		return Expired
	}
}

// Load returns an entry for (o, d) for a request whose Lookup gave seen
// (nil or not usable): an entry stored since then if it is not Expired,
// or the result of the render in progress for the key, or of render,
// which it then runs. It returns the render's error, or ctx's if ctx ends
// while it waits.
func (c *Cache[O, D, V]) Load(ctx context.Context, o O, d D, seen *Entry[V], render RenderFunc[V]) (*Entry[V], error) {
	c.mu.Lock()
	if e := c.owners[o][d]; e != nil && e != seen && c.stateAt(e, c.opt.Now().UnixNano()) != Expired {
		c.mu.Unlock()
		return e, nil
	}
	key := flightKey[O, D]{owner: o, doc: d, gen: c.gen}
	if f, ok := c.flights[key]; ok {
		f.waiters++
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.e, f.err
		case <-ctx.Done():
			c.mu.Lock()
			f.waiters--
			c.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	f := &flight[V]{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()
	c.run(ctx, key, f, nil, seen, render)
	return f.e, f.err
}

// ShouldRevalidate reports whether a call of Revalidate for the stale
// entry e would start or queue a background render: none was started or
// queued for it and no failure asks to wait. It takes no lock and does
// not allocate, so that a request serving e builds its render function
// only when Revalidate may use it.
func (c *Cache[O, D, V]) ShouldRevalidate(e *Entry[V]) bool {
	return !e.refreshing.Load() && c.opt.Now().UnixNano() >= e.retryAt.Load()
}

// Revalidate starts one background render of (o, d), whose stale entry
// e the caller serves, or queues it while MaxRefreshes of them run,
// unless one is running or queued, a failed one asks to wait or the
// queue is full (see the package documentation). Only the request that
// starts or queues the render takes the cache's lock.
func (c *Cache[O, D, V]) Revalidate(o O, d D, e *Entry[V], render RenderFunc[V]) {
	if c.opt.Now().UnixNano() < e.retryAt.Load() || !e.refreshing.CompareAndSwap(false, true) {
		return
	}
	r := refresh[O, D, V]{o: o, d: d, e: e, render: render}
	select {
	case c.refreshes <- struct{}{}: // released by run, or handed on to a queued render
	default:
		if c.nqueued.Load() >= int64(c.opt.MaxQueued) {
			// Full: only a key already queued takes a new render (under
			// the write lock); the others wait for a later hit.
			c.mu.RLock()
			_, queued := c.queued[docRef[O, D]{o: o, d: d}]
			c.mu.RUnlock()
			if !queued {
				e.refreshing.Store(false)
				return
			}
		}
		c.mu.Lock()
		ok := c.enqueue(r)
		c.mu.Unlock()
		if !ok {
			e.refreshing.Store(false)
			return
		}
		// A render that ended between the select and the lock handed
		// its token on or released it: take a free one for the queue.
		select {
		case c.refreshes <- struct{}{}:
			c.startQueued()
		default:
		}
		return
	}
	c.mu.Lock()
	if c.start(r) {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.startQueued() // with the token r did not use
}

// start starts the background render r, holding a token, and reports
// whether it did: not when (o, d) no longer holds r.e (replaced or
// removed), r.e expired, or a Load renders it (should that fail, a later
// hit may try). c.mu must be held for writing.
func (c *Cache[O, D, V]) start(r refresh[O, D, V]) bool {
	key := flightKey[O, D]{owner: r.o, doc: r.d, gen: c.gen}
	if _, ok := c.flights[key]; ok || c.owners[r.o][r.d] != r.e || c.stateAt(r.e, c.opt.Now().UnixNano()) == Expired {
		r.e.refreshing.Store(false)
		return false
	}
	f := &flight[V]{done: make(chan struct{}), background: true}
	c.flights[key] = f
	go c.run(context.Background(), key, f, r.e, r.e, r.render)
	return true
}

// enqueue queues the background render r and reports whether it did: a
// render of r's key already queued is replaced by r, in its turn (its
// entry was replaced by r's); a new key is not queued when MaxQueued
// are. c.mu must be held for writing.
func (c *Cache[O, D, V]) enqueue(r refresh[O, D, V]) bool {
	k := docRef[O, D]{o: r.o, d: r.d}
	if old, ok := c.queued[k]; ok {
		if old.e != r.e {
			old.e.refreshing.Store(false)
		}
		c.queued[k] = r
		return true
	}
	if len(c.queued) >= c.opt.MaxQueued {
		return false
	}
	if c.queued == nil {
		c.queued = make(map[docRef[O, D]]refresh[O, D, V])
	}
	c.queued[k] = r
	c.queue = append(c.queue, k)
	c.nqueued.Store(int64(len(c.queued)))
	return true
}

// startQueued starts the oldest queued render that still applies with a
// token the caller holds, or releases the token when none is left.
func (c *Cache[O, D, V]) startQueued() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) > 0 {
		k := c.queue[0]
		c.queue[0] = docRef[O, D]{}
		c.queue = c.queue[1:]
		r, ok := c.queued[k]
		delete(c.queued, k)
		if len(c.queue) == 0 {
			c.queue, c.queued = nil, nil // let the array and the map go
		}
		c.nqueued.Store(int64(len(c.queued)))
		if ok && c.start(r) {
			return
		}
	}
	<-c.refreshes
}

// run renders for the flight f registered under key and stores the
// result unless an invalidation happened meanwhile. stale is the entry a
// background render replaces (nil for a Load); prev is the entry the
// render may turn out to repeat (stale, or the one a Load's caller saw),
// whose document, ETag and gzip variant the result then shares.
func (c *Cache[O, D, V]) run(ctx context.Context, key flightKey[O, D], f *flight[V], stale, prev *Entry[V], render RenderFunc[V]) {
	start := c.opt.Now().UnixNano()
	r, err := c.render(ctx, render)
	var e *Entry[V]
	switch {
	case err != nil:
	case r.NoStore:
		e = c.newEntry(r, start)
		if stale == nil && c.opt.NoStoreAge > 0 {
			// Kept for NoStoreAge only, and never stale: once it is
			// over, a request renders again and waits for it.
			e.staleAt = start + int64(min(c.opt.NoStoreAge, c.opt.MaxAge))
			e.expiresAt = e.staleAt
			e.settledStaleAt, e.settledExpiresAt = 0, 0 // a degraded document never lasts
		}
	case prev != nil && prev.sameDocument(r):
		e = c.renewEntry(prev, r, start)
	default:
		e = c.newEntry(r, start)
	}
	c.mu.Lock()
	delete(c.flights, key)
	stored := false
	switch {
	case c.gen != key.gen:
		// Invalidated meanwhile: hand the result to the waiters only.
		// The stale entry, if an invalidation of other documents left it
		// stored, may be rendered again by its next hit (it would
		// otherwise stay marked as refreshing until it expires, and its
		// requests would then wait for a render).
		if stale != nil {
			stale.refreshing.Store(false)
		}
	case err == nil && r.NoStore && stale != nil:
		// Degraded: the stale entry is better; try again later.
		stale.retryAt.Store(c.opt.Now().UnixNano() + int64(c.opt.RetryAfter))
		stale.refreshing.Store(false)
	case err == nil && r.NoStore && c.opt.NoStoreAge > 0:
		stored = c.insert(key.owner, key.doc, e) // for NoStoreAge (set above)
	case err == nil && r.NoStore:
		c.remove(key.owner, key.doc) // the entry it replaces is not served instead
	case err == nil:
		stored = c.insert(key.owner, key.doc, e)
	case stale != nil && c.opt.Drop != nil && c.opt.Drop(err):
		if c.owners[key.owner][key.doc] == stale {
			c.remove(key.owner, key.doc)
		}
	case stale != nil:
		stale.retryAt.Store(c.opt.Now().UnixNano() + int64(c.opt.RetryAfter))
		stale.refreshing.Store(false)
	}
	f.e, f.err = e, err
	c.mu.Unlock()
	// The waiters have their result: what follows (a shed, a log line,
	// handing the token on) does not delay them.
	close(f.done)
	if stored && c.opt.Budget != nil {
		c.opt.Budget.shed(c)
	}
	if err != nil && stale != nil && (c.opt.Drop == nil || !c.opt.Drop(err)) {
		c.opt.Log.Warn("refreshing a cached document failed; serving the stale one until it expires",
			"cache", c.opt.Name, "owner", fmt.Sprint(key.owner), "document", fmt.Sprint(key.doc),
			"expires", time.Unix(0, stale.expiresAt).UTC(), "err", err)
	}
	if stale != nil {
		c.startQueued() // hands the token on, or releases it
	}
}

// render runs fn detached from ctx's cancellation, with the render
// timeout, turning a panic into ErrRenderPanicked.
func (c *Cache[O, D, V]) render(ctx context.Context, fn RenderFunc[V]) (r Rendered[V], err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opt.RenderTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			c.opt.Log.Error("rendering a document panicked", "cache", c.opt.Name, "panic", fmt.Sprint(p))
			r, err = Rendered[V]{}, ErrRenderPanicked
		}
	}()
	return fn(ctx)
}

// ETagOf returns the ETag the cache gives a document whose bytes are
// parts, in order: strong and quoted, from their SHA-256. A caller whose
// answer depends on more than its body (Rendered.ETag) passes that too.
func ETagOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18]) + `"`
}

func (c *Cache[O, D, V]) newEntry(r Rendered[V], start int64) *Entry[V] {
	etag := r.ETag
	if etag == "" {
		etag = ETagOf(r.Body, r.Tail)
	}
	e := c.timedEntry(r, start)
	e.Body, e.Tail = r.Body, r.Tail
	e.ETag = []string{etag}
	e.Length = []string{strconv.Itoa(len(r.Body) + len(r.Tail))}
	e.size = int64(len(r.Body)) + max(r.Size, 0) + EntryOverhead
	if c.opt.GzipMinBytes > 0 && len(r.Body)+len(r.Tail) >= c.opt.GzipMinBytes {
		e.gz = &gzState{account: func(n int64) { c.grow(e, n) }}
	}
	return e
}

// timedEntry returns an entry of r's Value whose render started at
// start, with its stale and expiry times; the caller sets the rest.
func (c *Cache[O, D, V]) timedEntry(r Rendered[V], start int64) *Entry[V] {
	maxAge, freshFor := int64(c.opt.MaxAge), int64(c.opt.FreshFor)
	e := &Entry[V]{
		Value:     r.Value,
		rendered:  start,
		staleAt:   start + freshPart(freshFor),
		expiresAt: start + maxAge,
	}
	if r.Lasting && c.opt.Settled != nil {
		settled := int64(c.opt.SettledAge)
		e.settledStaleAt, e.settledExpiresAt = start+freshPart(settled), start+settled
	}
	return e
}

// freshPart is how long an entry of freshFor is fresh: a random point
// between 3/4 and 7/8 of it, so that entries stored together do not all
// go stale together.
func freshPart(freshFor int64) int64 {
	return min(freshFor*3/4+rand.Int64N(freshFor/8+1), freshFor*7/8)
}

// sameDocument reports whether the render r repeats e's document: the
// same bytes of Body and Tail, and, if r brings its own ETag, e's ETag.
func (e *Entry[V]) sameDocument(r Rendered[V]) bool {
	return (r.ETag == "" || r.ETag == e.ETag[0]) && bytes.Equal(r.Body, e.Body) && bytes.Equal(r.Tail, e.Tail)
}

// renewEntry returns the entry of the render r, started at start, that
// repeats prev's document (sameDocument): it shares prev's Body, Tail,
// ETag, Length and gzip variant if prev has one already (no hash, no
// compression, r's copy of the bytes left to the collector), and has
// r's Value and Size. Its accounted size is prev's but for Size, so its
// store takes nothing more from the budget when Size is the same.
func (c *Cache[O, D, V]) renewEntry(prev *Entry[V], r Rendered[V], start int64) *Entry[V] {
	e := c.timedEntry(r, start)
	e.Body, e.Tail, e.ETag, e.Length = prev.Body, prev.Tail, prev.ETag, prev.Length
	e.size = int64(len(prev.Body)) + max(r.Size, 0) + EntryOverhead
	if prev.gz != nil {
		e.gz = &gzState{account: func(n int64) { c.grow(e, n) }}
		if v := prev.gz.v.Load(); v != nil {
			e.gz.v.Store(v) // Gzip returns it without compressing
			e.size += int64(len(v.Body))
		}
	}
	return e
}

// grow accounts n more bytes to e (its gzip variant), if e is stored.
func (c *Cache[O, D, V]) grow(e *Entry[V], n int64) {
	c.mu.Lock()
	e.size += n
	stored := e.stored
	if stored {
		c.account(n)
	}
	c.mu.Unlock()
	if stored && c.opt.Budget != nil {
		c.opt.Budget.shed(c)
	}
}

// insert stores e under (o, d), replacing any previous entry, evicts
// until the cache is within its own bounds and reports whether it
// stored e (not one over MaxEntryBytes); the
// caller sheds the shared budget after releasing the lock. c.mu must be
// held for writing.
func (c *Cache[O, D, V]) insert(o O, d D, e *Entry[V]) bool {
	if c.opt.MaxEntryBytes > 0 && e.size > c.opt.MaxEntryBytes {
		c.remove(o, d) // the older entry is not served instead of this one
		return false
	}
	e.used.Store(true) // survive the first sweep after insertion
	e.stored = true
	docs := c.owners[o]
	if docs == nil {
		docs = make(map[D]*Entry[V])
		c.owners[o] = docs
	}
	if old := docs[d]; old != nil {
		old.stored = false
		c.account(-old.size)
		c.entries--
	}
	docs[d] = e
	c.account(e.size)
	c.entries++
	c.last = e
	if c.overOwn() {
		c.evict(e)
	}
	return true
}

// overOwn reports whether c is over its own bounds.
func (c *Cache[O, D, V]) overOwn() bool {
	return c.opt.MaxBytes > 0 && c.bytes > c.opt.MaxBytes || c.opt.MaxEntries > 0 && c.entries > c.opt.MaxEntries
}

// account adds n (negative to release) to the cache's accounted memory
// and to the shared budget. c.mu must be held for writing.
func (c *Cache[O, D, V]) account(n int64) {
	c.bytes += n
	if c.opt.Budget != nil {
		c.opt.Budget.used.Add(n)
	}
}

// evict drops entries not used since the previous sweep (clearing the
// mark of those that were) until the cache is within its own bounds,
// sparing keep. Two passes always suffice: the first clears every mark
// it does not act on.
func (c *Cache[O, D, V]) evict(keep *Entry[V]) {
	c.sweep(keep, 2, c.overOwn)
}

// sweep makes up to passes passes over the entries while over reports
// true, evicting those not used since the previous pass and clearing
// the mark of the others, sparing keep. c.mu must be held for writing.
func (c *Cache[O, D, V]) sweep(keep *Entry[V], passes int, over func() bool) {
	for pass := 0; pass < passes && over(); pass++ {
		for o, docs := range c.owners {
			for d, e := range docs {
				if !over() {
					return
				}
				if e == keep || e.used.Swap(false) {
					continue
				}
				delete(docs, d)
				c.unstore(e)
			}
			if len(docs) == 0 {
				delete(c.owners, o)
			}
		}
	}
}

// unstore accounts e, just taken out of the maps, as no longer stored.
// c.mu must be held for writing.
func (c *Cache[O, D, V]) unstore(e *Entry[V]) {
	e.stored = false
	c.account(-e.size)
	c.entries--
	if c.last == e {
		c.last = nil
	}
}

// remove deletes the entry under (o, d), if any. c.mu must be held for
// writing.
func (c *Cache[O, D, V]) remove(o O, d D) {
	docs := c.owners[o]
	if e := docs[d]; e != nil {
		delete(docs, d)
		c.unstore(e)
		if len(docs) == 0 {
			delete(c.owners, o)
		}
	}
}

// Invalidate removes the entry under (o, d) and starts a new generation.
func (c *Cache[O, D, V]) Invalidate(o O, d D) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.remove(o, d)
}

// InvalidateOwner removes every entry of owner o and starts a new
// generation.
func (c *Cache[O, D, V]) InvalidateOwner(o O) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, e := range c.owners[o] {
		c.unstore(e)
	}
	delete(c.owners, o)
}

// InvalidateAll removes every entry and starts a new generation.
func (c *Cache[O, D, V]) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropAll()
}

// dropAll removes every entry and starts a new generation. c.mu must be
// held for writing.
func (c *Cache[O, D, V]) dropAll() {
	c.gen++
	for _, docs := range c.owners {
		for _, e := range docs {
			e.stored = false
		}
	}
	c.owners = make(map[O]map[D]*Entry[V])
	c.account(-c.bytes)
	c.entries = 0
	c.last = nil
}

// Stats describes a Cache at one moment.
type Stats struct {
	Entries int
	Bytes   int64 // accounted memory
	Renders int   // renders in progress (foreground and background)
	Waiting int   // Loads waiting for a render they did not start
	Queued  int   // background renders waiting for one of MaxRefreshes to end
}

// Stats returns the cache's current figures.
func (c *Cache[O, D, V]) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := Stats{Entries: c.entries, Bytes: c.bytes, Renders: len(c.flights), Queued: len(c.queued)}
	for _, f := range c.flights {
		s.Waiting += f.waiters
	}
	return s
}
