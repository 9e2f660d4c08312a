package web

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"html/template"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"trove.dev/trove/internal/registry"
)

// pageCacheMaxAge is how long a cached page part is served as it is.
// Changes through any replica drop it sooner (Invalidate); an older part
// of the same generation is still served while one request renders it
// again in the background (stale while revalidate), since nothing was
// changed through any replica meanwhile: the age only bounds download
// counts and the like.
const pageCacheMaxAge = 30 * time.Second

// pageCacheBytes bounds the memory of cached pages. The pages of the
// load test's UI row (1,000 distinct module, provider, home and
// namespace pages) take 19 MB.
const pageCacheBytes = 64 << 20

// searchCacheBytes bounds the memory of cached search pages, kept apart
// so that searches, which anyone can vary without end, never push pages
// out. The load test's 1,000 searches take 4.3 MB.
const searchCacheBytes = 16 << 20

// pagePartOverhead is what a cached part costs besides its bytes and
// key, counted against pageCacheBytes.
const pagePartOverhead = 256

// pageCache keeps rendered pages that are the same for every visitor
// allowed to see them, keyed by what they show (the caller checks the
// visitor's right to see it first, and puts everything the page depends
// on into the key). Each part is kept as the whole page an anonymous
// visitor of its address gets, with its ETag, so that such a request is
// answered without rendering or hashing anything; other visitors get the
// part inside their own layout.
//
// Memory is bounded by bytes: the least recently used parts are dropped
// first. Invalidate starts a new generation: parts rendered before it are
// never served again. A part older than pageCacheMaxAge is served while
// it is rendered again in the background, by at most refreshing
// goroutines at once. Requests that miss the same part at the same time
// wait for one rendering (flight).
//
// A pageCache is safe for concurrent use.
type pageCache struct {
	now    func() time.Time
	limit  int                // bytes
	flight singleflight.Group // keyed by generation and key
	// refreshing holds a token per background rendering running.
	refreshing chan struct{}
	background sync.WaitGroup // the background renderings

	mu    sync.Mutex
	gen   uint64
	bytes int
	parts map[string]*list.Element // of *cachedPart
	lru   list.List                // most recently used first
}

// cachedPart is one rendered page; it is never modified once made, but
// for its refreshing flag.
type cachedPart struct {
	key   string
	title string
	gen   uint64
	at    time.Time
	// page is the whole page for an anonymous visitor of next (the
	// request URI it was rendered for) with query in the search box;
	// page[start:end] is the part.
	page        []byte
	start, end  int
	next, query string
	sum         [sha256.Size]byte // of the part
	etag        []string          // of page, as header values
	length      []string          // len(page), as header values
	// refreshing is set while the part is rendered again.
	refreshing atomic.Bool
}

// content returns the part without the layout.
func (p *cachedPart) content() []byte { return p.page[p.start:p.end] }

func (p *cachedPart) size() int {
	return len(p.page) + len(p.key) + len(p.next) + len(p.title) + pagePartOverhead
}

func newPageCache(now func() time.Time, limit int) *pageCache {
	return &pageCache{now: now, limit: limit, parts: map[string]*list.Element{},
		refreshing: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// generation returns the current generation, to be passed to put with
// the part rendered after it was read.
func (c *pageCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// get returns the part under key of the current generation (nil if
// none) and whether it is younger than pageCacheMaxAge.
func (c *pageCache) get(key string) (p *cachedPart, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.parts[key]
	if !ok {
		return nil, false
	}
	p = e.Value.(*cachedPart)
	if p.gen != c.gen {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return p, c.now().Sub(p.at) < pageCacheMaxAge
}

// put keeps p unless the generation changed since p.gen was read, or p
// alone takes more than an eighth of the cache. It drops the least
// recently used parts beyond the cache's bytes.
func (c *pageCache) put(p *cachedPart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.gen != c.gen || p.size() > c.limit/8 {
		return
	}
	if e, ok := c.parts[p.key]; ok {
		c.bytes -= e.Value.(*cachedPart).size()
		e.Value = p
		c.lru.MoveToFront(e)
	} else {
		c.parts[p.key] = c.lru.PushFront(p)
	}
	c.bytes += p.size()
	for c.bytes > c.limit {
		e := c.lru.Back()
		old := e.Value.(*cachedPart)
		c.lru.Remove(e)
		delete(c.parts, old.key)
		c.bytes -= old.size()
	}
}

// remove drops p if it is still the part under its key.
func (c *pageCache) remove(p *cachedPart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.parts[p.key]; ok && e.Value == p {
		c.lru.Remove(e)
		delete(c.parts, p.key)
		c.bytes -= p.size()
	}
}

func (c *pageCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.parts)
	c.lru.Init()
	c.bytes = 0
}

// stats returns the number of parts and their bytes.
func (c *pageCache) stats() (parts, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.parts), c.bytes
}

// pageBuild reads what a page shows: its title, its template's name and
// the template's data.
type pageBuild func(ctx context.Context) (title, name string, data any, err error)

// cached serves the page part under key from the page cache, or renders
// it with build and keeps it. Call it only after the visitor's right to
// see the page was checked, with a key that holds everything the page
// depends on besides its address and the visitor's layout.
func (s *Service) cached(w http.ResponseWriter, r *http.Request, v *visit, key string, build pageBuild) error {
	return s.cachedIn(s.pages, w, r, v, key, build)
}

// cachedIn is cached with the pages kept in c.
func (s *Service) cachedIn(c *pageCache, w http.ResponseWriter, r *http.Request, v *visit, key string, build pageBuild) error {
	p, fresh := c.get(key)
	switch {
	case p == nil:
		var err error
		if p, err = s.renderPart(c, r.Context(), r.URL.RequestURI(), v.query, key, build); err != nil {
			return err
		}
	case !fresh:
		s.refreshPart(c, r.Context(), p, build)
	}
	s.writePart(w, r, v, p)
	return nil
}

// renderPart renders the part under key once however many requests ask
// for it at the same time, and keeps it; next and query are the address
// and search text of the anonymous page kept with it.
func (s *Service) renderPart(c *pageCache, ctx context.Context, next, query, key string, build pageBuild) (*cachedPart, error) {
	gen := c.generation()
	// The generation is part of the flight's key: a request that comes
	// after an invalidation never gets a part read before it.
	res, err, _ := c.flight.Do(strconv.FormatUint(gen, 10)+"\x00"+key, func() (any, error) {
		// The part is shared: it does not end with the request that
		// happens to render it.
		title, name, data, err := build(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		html, err := execute(name, data)
		if err != nil {
			return nil, registry.Wrap(registry.Internal, err, "rendering the page")
		}
		p, err := s.newPart(key, gen, title, next, query, html)
		if err != nil {
			return nil, err
		}
		c.put(p)
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return res.(*cachedPart), nil
}

// refreshPart renders p again in the background, unless it is already
// being rendered or as many background renderings as allowed run (a
// later request asks again). A rendering that fails drops p, so that the
// next request renders it and gets the error.
func (s *Service) refreshPart(c *pageCache, ctx context.Context, p *cachedPart, build pageBuild) {
	if !p.refreshing.CompareAndSwap(false, true) {
		return
	}
	select {
	case c.refreshing <- struct{}{}:
	default:
		p.refreshing.Store(false)
		return
	}
	ctx = context.WithoutCancel(ctx)
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		defer func() { <-c.refreshing }()
		if _, err := s.renderPart(c, ctx, p.next, p.query, p.key, build); err != nil {
			c.remove(p)
			s.log.DebugContext(ctx, "web: rendering a page again failed", "err", err)
		}
	}()
}

// newPart makes the cached part of html: the whole page of an anonymous
// visitor of next with query in the search box, and its ETag.
func (s *Service) newPart(key string, gen uint64, title, next, query string, html template.HTML) (*cachedPart, error) {
	var head bytes.Buffer
	if err := templates.ExecuteTemplate(&head, "layout-head", layoutData{Title: title, Query: query, Host: s.opt.Host, Next: next}); err != nil {
		return nil, registry.Wrap(registry.Internal, err, "rendering the layout")
	}
	page := make([]byte, 0, head.Len()+len(html)+len(s.foot))
	page = append(append(append(page, head.Bytes()...), html...), s.foot...)
	p := &cachedPart{key: key, title: title, gen: gen, at: s.opt.Now(), page: page,
		start: head.Len(), end: head.Len() + len(html), next: next, query: query}
	p.sum = sha256.Sum256(p.content())
	p.etag = []string{pageETag(head.Bytes(), p.sum, s.foot)}
	p.length = []string{strconv.Itoa(len(page))}
	return p, nil
}

// listCacheEntries bounds the provider version lists kept (listCache).
const listCacheEntries = 1024

// listCache keeps the version lists of providers for the pages of their
// versions, under the page cache's generation and maximum age.
type listCache struct {
	mu    sync.Mutex
	lists map[string]cachedList
	now   func() time.Time
}

type cachedList struct {
	versions *versionList
	gen      uint64
	at       time.Time
}

func newListCache(now func() time.Time) *listCache {
	return &listCache{lists: map[string]cachedList{}, now: now}
}

func (c *listCache) get(key string) (*versionList, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.lists[key]
	return l.versions, ok && c.now().Sub(l.at) < pageCacheMaxAge
}

// put keeps vs under key if pages is still at generation gen.
func (c *listCache) put(key string, gen uint64, vs *versionList, pages *pageCache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pages.generation() != gen { // checked under c.mu: Invalidate bumps it before clearing c
		return
	}
	if len(c.lists) >= listCacheEntries {
		clear(c.lists)
	}
	c.lists[key] = cachedList{versions: vs, gen: gen, at: c.now()}
}

func (c *listCache) invalidate() {
	c.mu.Lock()
	clear(c.lists)
	c.mu.Unlock()
}
