package providers

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// provKey names a provider. Keys are always normalized names: entries are
// inserted only after a request's names validated, so a cache hit on the
// raw path values implies they were valid and normalized.
type provKey struct{ ns, typ string }

// docKey names a document of a provider: the zero docKey is the versions
// document, any other the download document of one platform of a version.
type docKey struct{ version, os, arch string }

var errRenderFailed = errors.New("rendering the document failed")

// entryOverhead approximates the memory an entry costs besides its body:
// the entry, its ETag and length strings, the cloned keys and the map
// slots, with size-class rounding (measured at about 800 bytes per
// download document in a cold sweep; see docs/benchmarks.md).
const entryOverhead = 1024

// entry is one rendered response. Its fields never change after insertion
// except used, so readers need no lock once they hold it.
type entry struct {
	body   []byte
	etag   []string // {quoted strong ETag}: assigned to response headers as is
	length []string // {Content-Length}
	// urlExpiry is the expiry (Unix seconds) of the signed URLs embedded in
	// a download document, 0 for versions documents; the entry is valid
	// only while the signer still issues that expiry.
	urlExpiry int64
	// staleAt is the wall time (Unix nanoseconds) after which the entry is
	// rendered again, so that publishes through other replicas show up.
	staleAt int64
	used    atomic.Bool // set on hits, cleared by eviction sweeps (CLOCK)
}

func newEntry(body []byte, urlExpiry, staleAt int64) *entry {
	sum := sha256.Sum256(body)
	e := &entry{
		body:      body,
		etag:      []string{`"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`},
		length:    []string{strconv.Itoa(len(body))},
		urlExpiry: urlExpiry,
		staleAt:   staleAt,
	}
	e.used.Store(true) // survive the first sweep after insertion
	return e
}

func (e *entry) size() int64 { return int64(len(e.body)) + entryOverhead }

// fresh reports whether e can be served at now (Unix nanoseconds) while
// the signer issues URLs expiring at urlExpiry.
func (e *entry) fresh(now, urlExpiry int64) bool {
	return e != nil && now < e.staleAt && e.urlExpiry == urlExpiry
}

// touch marks e as recently used without writing to a shared cache line
// when it already is.
func (e *entry) touch() {
	if !e.used.Load() {
		e.used.Store(true)
	}
}

// flightKey identifies one render in progress. The generation is part of
// the key so that a request arriving after an invalidation never joins a
// render that started before it.
type flightKey struct {
	prov provKey
	doc  docKey
	gen  uint64
}

type flight struct {
	done    chan struct{}
	waiters int // requests waiting for this render; guarded by cache.mu
	e       *entry
	err     error
}

// cache holds rendered documents in memory, bounded by maxBytes, evicting
// with the CLOCK approximation of LRU. It is safe for concurrent use; hits
// take only a read lock.
type cache struct {
	maxBytes int64

	mu      sync.RWMutex
	provs   map[provKey]map[docKey]*entry
	bytes   int64
	gen     uint64 // incremented by every invalidation
	flights map[flightKey]*flight
}

func newCache(maxBytes int64) *cache {
	return &cache{
		maxBytes: maxBytes,
		provs:    make(map[provKey]map[docKey]*entry),
		flights:  make(map[flightKey]*flight),
	}
}

// get returns the entry stored for pk and dk, or nil. It does not allocate.
func (c *cache) get(pk provKey, dk docKey) *entry {
	c.mu.RLock()
	e := c.provs[pk][dk]
	c.mu.RUnlock()
	return e
}

// load returns a fresh entry for pk and dk, rendering it with render
// unless a concurrent caller is already doing so for the same generation,
// in which case it waits for that result. A rendered entry is stored only
// if no invalidation happened since the render began, so a render racing
// with a publish can never reinstall a document that predates it.
func (c *cache) load(ctx context.Context, pk provKey, dk docKey, now, urlExpiry int64, render func() (*entry, error)) (*entry, error) {
	c.mu.Lock()
	if e := c.provs[pk][dk]; e.fresh(now, urlExpiry) {
		c.mu.Unlock()
		return e, nil
	}
	key := flightKey{prov: pk, doc: dk, gen: c.gen}
	if f, ok := c.flights[key]; ok {
		f.waiters++
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.e, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()

	defer func() {
		if f.e == nil && f.err == nil {
			f.err = errRenderFailed // render panicked; waiters must not see a nil entry
		}
		c.mu.Lock()
		delete(c.flights, key)
		if f.err == nil && f.e != nil && c.gen == key.gen {
			c.insert(pk, dk, f.e)
		}
		c.mu.Unlock()
		close(f.done)
	}()
	f.e, f.err = render()
	return f.e, f.err
}

// insert stores e (replacing any previous entry) and evicts until the
// cache fits in maxBytes. c.mu must be held for writing. Keys are cloned
// so the cache never pins request memory.
func (c *cache) insert(pk provKey, dk docKey, e *entry) {
	docs := c.provs[pk]
	if docs == nil {
		pk = provKey{ns: strings.Clone(pk.ns), typ: strings.Clone(pk.typ)}
		docs = make(map[docKey]*entry)
		c.provs[pk] = docs
	}
	if old := docs[dk]; old != nil {
		c.bytes -= old.size()
	} else {
		dk = docKey{version: strings.Clone(dk.version), os: strings.Clone(dk.os), arch: strings.Clone(dk.arch)}
	}
	docs[dk] = e
	c.bytes += e.size()
	if c.bytes > c.maxBytes {
		c.evict(e)
	}
}

// evict drops entries not used since the previous sweep (clearing the
// mark of those that were) until the cache fits, sparing keep. Two passes
// always suffice: the first clears every mark it does not act on.
func (c *cache) evict(keep *entry) {
	for pass := 0; pass < 2 && c.bytes > c.maxBytes; pass++ {
		for pk, docs := range c.provs {
			for dk, e := range docs {
				if c.bytes <= c.maxBytes {
					return
				}
				if e == keep || e.used.Swap(false) {
					continue
				}
				delete(docs, dk)
				c.bytes -= e.size()
			}
			if len(docs) == 0 {
				delete(c.provs, pk)
			}
		}
	}
}

// invalidate drops every document of a provider and starts a new
// generation, so renders in flight are not stored.
func (c *cache) invalidate(pk provKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, e := range c.provs[pk] {
		c.bytes -= e.size()
	}
	delete(c.provs, pk)
}

// invalidateAll drops every document and starts a new generation.
func (c *cache) invalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.provs = make(map[provKey]map[docKey]*entry)
	c.bytes = 0
}

// stats returns the number of entries and their accounted size.
func (c *cache) stats() (entries int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, docs := range c.provs {
		entries += len(docs)
	}
	return entries, c.bytes
}
