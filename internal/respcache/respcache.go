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
//     recently used.
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
//     shortening MaxAge.
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
//     rendered by a Load meanwhile is skipped. When the render succeeds
//     its entry replaces the stale one.
//     When it fails, the error is logged and the stale entry stays, to be
//     served until it expires; no new background render of it starts for
//     RetryAfter. An error for which Options.Drop reports true (the
//     document no longer exists) removes the entry instead.
//   - The cache keeps the keys given to Load and Revalidate (a stored
//     string key may be replaced by the one of a later store): pass keys
//     that do not point into request memory. Lookup keeps nothing.
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
//     it is larger than Options.MaxEntryBytes: then it is not stored.
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
	// Now is the clock (default time.Now).
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
}

// Budget is a byte budget shared by several caches (Options.Budget): the
// protocol caches are held within one (trove serve --cache-bytes), the
// web UI's page, search and documentation caches within another. A store
// that takes the total over the budget first sweeps the other caches
// once (each evicts its entries not used since its previous sweep, and
// clears the marks of the others), then evicts entries of its own cache;
// so a cache nobody asks any more gives its memory back to the busy
// ones. A cache whose lock is held at that moment is skipped (the next
// store over the budget sweeps it). It is safe for concurrent use.
type Budget struct {
	max  int64
	used atomic.Int64

	mu      sync.Mutex
	members []budgetMember
}

// budgetMember is a cache of a Budget: shed sweeps it once, unless it is
// busy.
type budgetMember struct {
	cache any
	shed  func()
}

// join adds a cache to the budget.
func (b *Budget) join(cache any, shed func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.members = append(b.members, budgetMember{cache: cache, shed: shed})
}

// shed sweeps every cache of the budget but self once, while the budget
// is over.
func (b *Budget) shed(self any) {
	b.mu.Lock()
	members := b.members
	b.mu.Unlock()
	for _, m := range members {
		if !b.over() {
			return
		}
		if m.cache != self {
			m.shed()
		}
	}
}

// NewBudget returns a budget of max bytes (<= 0: unbounded, counted
// only).
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Used returns the bytes the caches sharing b account now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Max returns the budget's bound.
func (b *Budget) Max() int64 { return b.max }

func (b *Budget) over() bool { return b != nil && b.max > 0 && b.used.Load() > b.max }

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

	size       int64
	rendered   int64 // Unix nanoseconds when its render started
	staleAt    int64
	expiresAt  int64
	gz         *gzState     // nil: not compressible
	stored     bool         // in the cache's maps; guarded by Cache.mu
	used       atomic.Bool  // set on lookups, cleared by eviction sweeps (CLOCK)
	refreshing atomic.Bool  // a background render of it was started
	retryAt    atomic.Int64 // no background render before this (after a failure)
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
	done    chan struct{}
	waiters int // Loads waiting for this render; guarded by Cache.mu
	e       *Entry[V]
	err     error
}

// Cache holds rendered documents; see the package documentation for its
// contract.
type Cache[O, D comparable, V any] struct {
	opt Options

	mu      sync.RWMutex
	owners  map[O]map[D]*Entry[V]
	entries int
	bytes   int64
	gen     uint64 // incremented by every invalidation
	flights map[flightKey[O, D]]*flight[V]
	// refreshes holds a token per background render running.
	refreshes chan struct{}
	// queued holds the background renders waiting for a token, oldest
	// first; guarded by mu.
	queued []refresh[O, D, V]
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
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	c := &Cache[O, D, V]{
		opt:       opt,
		owners:    make(map[O]map[D]*Entry[V]),
		flights:   make(map[flightKey[O, D]]*flight[V]),
		refreshes: make(chan struct{}, opt.MaxRefreshes),
	}
	if opt.Budget != nil {
		opt.Budget.join(c, c.shedForBudget)
	}
	return c
}

// shedForBudget is c's part of Budget.shed: one sweep of its entries
// while the budget is over, unless another goroutine holds c's lock
// (TryLock: a store of another cache calls it with that cache's lock
// held, so waiting could deadlock two stores).
func (c *Cache[O, D, V]) shedForBudget() {
	if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	c.sweep(nil, 1, c.opt.Budget.over)
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

// State returns the state of e (which may be nil) now.
func (c *Cache[O, D, V]) State(e *Entry[V]) State {
	return e.state(c.opt.Now().UnixNano())
}

func (e *Entry[V]) state(now int64) State {
	switch {
	case e == nil || now >= e.expiresAt:
		return Expired
	case now >= e.staleAt:
		return Stale
	default:
		return Fresh
	}
}

// Load returns an entry for (o, d) for a request whose Lookup gave seen
// (nil or not usable): an entry stored since then if it is not Expired,
// or the result of the render in progress for the key, or of render,
// which it then runs. It returns the render's error, or ctx's if ctx ends
// while it waits.
func (c *Cache[O, D, V]) Load(ctx context.Context, o O, d D, seen *Entry[V], render RenderFunc[V]) (*Entry[V], error) {
	c.mu.Lock()
	if e := c.owners[o][d]; e != nil && e != seen && e.state(c.opt.Now().UnixNano()) != Expired {
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
	c.run(ctx, key, f, nil, render)
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
// unless one is running or queued or a failed one asks to wait (see the
// package documentation). Only the request that starts or queues the
// render takes the cache's lock.
func (c *Cache[O, D, V]) Revalidate(o O, d D, e *Entry[V], render RenderFunc[V]) {
	if c.opt.Now().UnixNano() < e.retryAt.Load() || !e.refreshing.CompareAndSwap(false, true) {
		return
	}
	r := refresh[O, D, V]{o: o, d: d, e: e, render: render}
	select {
	case c.refreshes <- struct{}{}: // released by run, or handed on to a queued render
	default:
		c.mu.Lock()
		c.queued = append(c.queued, r)
		c.mu.Unlock()
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
	if _, ok := c.flights[key]; ok || c.owners[r.o][r.d] != r.e || r.e.state(c.opt.Now().UnixNano()) == Expired {
		r.e.refreshing.Store(false)
		return false
	}
	f := &flight[V]{done: make(chan struct{})}
	c.flights[key] = f
	go c.run(context.Background(), key, f, r.e, r.render)
	return true
}

// startQueued starts the oldest queued render that still applies with a
// token the caller holds, or releases the token when none is left.
func (c *Cache[O, D, V]) startQueued() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queued) > 0 {
		r := c.queued[0]
		c.queued[0] = refresh[O, D, V]{}
		c.queued = c.queued[1:]
		if len(c.queued) == 0 {
			c.queued = nil // let the array go
		}
		if c.start(r) {
			return
		}
	}
	<-c.refreshes
}

// run renders for the flight f registered under key and stores the
// result unless an invalidation happened meanwhile. stale is the entry a
// background render replaces (nil for a Load).
func (c *Cache[O, D, V]) run(ctx context.Context, key flightKey[O, D], f *flight[V], stale *Entry[V], render RenderFunc[V]) {
	start := c.opt.Now().UnixNano()
	r, err := c.render(ctx, render)
	var e *Entry[V]
	if err == nil {
		e = c.newEntry(r, start)
	}
	c.mu.Lock()
	delete(c.flights, key)
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
	case err == nil:
		c.insert(key.owner, key.doc, e)
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
	if err != nil && stale != nil && (c.opt.Drop == nil || !c.opt.Drop(err)) {
		c.opt.Log.Warn("refreshing a cached document failed; serving the stale one until it expires",
			"cache", c.opt.Name, "owner", fmt.Sprint(key.owner), "document", fmt.Sprint(key.doc),
			"expires", time.Unix(0, stale.expiresAt).UTC(), "err", err)
	}
	if stale != nil {
		c.startQueued() // hands the token on, or releases it
	}
	close(f.done)
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

func (c *Cache[O, D, V]) newEntry(r Rendered[V], start int64) *Entry[V] {
	etag := r.ETag
	if etag == "" {
		h := sha256.New()
		h.Write(r.Body)
		h.Write(r.Tail)
		sum := h.Sum(nil)
		etag = `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	}
	maxAge, freshFor := int64(c.opt.MaxAge), int64(c.opt.FreshFor)
	fresh := freshFor*3/4 + rand.Int64N(freshFor/8+1)
	e := &Entry[V]{
		Body:      r.Body,
		Tail:      r.Tail,
		ETag:      []string{etag},
		Length:    []string{strconv.Itoa(len(r.Body) + len(r.Tail))},
		Value:     r.Value,
		size:      int64(len(r.Body)) + max(r.Size, 0) + EntryOverhead,
		rendered:  start,
		staleAt:   start + min(fresh, freshFor*7/8),
		expiresAt: start + maxAge,
	}
	if c.opt.GzipMinBytes > 0 && len(r.Body)+len(r.Tail) >= c.opt.GzipMinBytes {
		e.gz = &gzState{account: func(n int64) { c.grow(e, n) }}
	}
	return e
}

// grow accounts n more bytes to e (its gzip variant), if e is stored.
func (c *Cache[O, D, V]) grow(e *Entry[V], n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.size += n
	if e.stored {
		c.account(n)
	}
}

// insert stores e under (o, d), replacing any previous entry, and evicts
// until the cache is within its bounds. c.mu must be held for writing.
func (c *Cache[O, D, V]) insert(o O, d D, e *Entry[V]) {
	if c.opt.MaxEntryBytes > 0 && e.size > c.opt.MaxEntryBytes {
		c.remove(o, d) // the older entry is not served instead of this one
		return
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
	if c.opt.Budget.over() {
		c.opt.Budget.shed(c) // the other caches' unused entries go first
	}
	if c.over() {
		c.evict(e)
	}
}

func (c *Cache[O, D, V]) over() bool {
	return c.overOwn() || c.opt.Budget.over()
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
// mark of those that were) until the cache is within its bounds, sparing
// keep. Two passes always suffice: the first clears every mark it does
// not act on.
func (c *Cache[O, D, V]) evict(keep *Entry[V]) {
	c.sweep(keep, 2, c.over)
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
				e.stored = false
				c.account(-e.size)
				c.entries--
			}
			if len(docs) == 0 {
				delete(c.owners, o)
			}
		}
	}
}

// remove deletes the entry under (o, d), if any. c.mu must be held for
// writing.
func (c *Cache[O, D, V]) remove(o O, d D) {
	docs := c.owners[o]
	if e := docs[d]; e != nil {
		delete(docs, d)
		e.stored = false
		c.account(-e.size)
		c.entries--
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
		e.stored = false
		c.account(-e.size)
		c.entries--
	}
	delete(c.owners, o)
}

// InvalidateAll removes every entry and starts a new generation.
func (c *Cache[O, D, V]) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, docs := range c.owners {
		for _, e := range docs {
			e.stored = false
		}
	}
	c.owners = make(map[O]map[D]*Entry[V])
	c.account(-c.bytes)
	c.entries = 0
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
