package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"html/template"
	"net/http"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
)

// pageCacheMaxAge is how long a cached page is fresh. Changes through any
// replica drop it sooner (Invalidate); an older page is still served
// while one request renders it again in the background (stale while
// revalidate), since nothing was changed through any replica meanwhile:
// the age only bounds download counts and the like.
const pageCacheMaxAge = 30 * time.Second

// pageCacheMaxStale is how long a page is served at all after its
// rendering began: past it a request waits for a new rendering.
const pageCacheMaxStale = 10 * time.Minute

// pageDegradedAge is how long a degraded page (partialPage) is kept: a
// negative-cache age, so that during a store outage a page is rendered,
// and the store asked, at most once per this age rather than on every
// view, while a recovered store is seen within it.
const pageDegradedAge = 5 * time.Second

// pageCacheBytes bounds the memory of cached pages (with their gzip
// variants). The pages of the load test's UI row (1,000 distinct module,
// provider, home and namespace pages) take 19 MB.
const pageCacheBytes = 64 << 20

// searchCacheBytes bounds the memory of cached search pages, kept apart
// so that searches, which anyone can vary without end, never push pages
// out. The load test's 1,000 searches take 4.3 MB.
const searchCacheBytes = 16 << 20

// pageCache keeps rendered pages that are the same for every visitor
// allowed to see them, keyed by what they show (the caller checks the
// visitor's right to see it first, and puts everything the page depends
// on into the key: what the visitor may read, for the pages that list
// namespaces). It is an instance of Trove's one response cache
// (respcache) with its own byte budget: single-flight renderings, stale
// while revalidate, generations (a request after Invalidate never gets a
// page whose rendering began before it) and, for clients that accept it,
// a gzip variant made once per page.
//
// Each entry's body is the whole page an anonymous visitor of its address
// gets, with its ETag, so that such a request is answered without
// rendering or hashing anything; other visitors get the part inside their
// own layout (pagePart says where it is).
//
// Every page is a document of the one owner, allPages: pages are dropped
// together (InvalidateAll), and a hit is then one look-up by the page's
// key in one map, not a second one in a map of its own per page (a cache
// miss of the processor's on nearly every request under load).
type pageCache = respcache.Cache[struct{}, string, *pagePart]

// allPages is the owner of every entry of a pageCache and a listCache.
var allPages struct{}

// pagePart is what a cached page keeps besides its bytes.
type pagePart struct {
	title string
	// next and query are the address (request URI) and search text of the
	// anonymous page kept; page[start:end] is the part.
	next, query string
	start, end  int
	sum         [sha256.Size]byte // of the part
	// digest is dataDigest's of the page's template, title and data,
	// when digested: a rendering again whose data has the same keeps
	// the page.
	digest   [sha256.Size]byte
	digested bool
}

// webCacheBytes is the byte budget the web UI's page, search and
// documentation caches share (respcache.Budget), below the sum of their
// own bounds: whichever holds more than its share when another grows
// gives way.
const webCacheBytes = 96 << 20

// newPageCache returns a page cache of limit bytes, counted in budget
// too (nil: none); a page larger than an eighth of limit is served but
// not kept.
func newPageCache(name string, now func() time.Time, limit int, budget *respcache.Budget) *pageCache {
	return respcache.New[struct{}, string, *pagePart](respcache.Options{
		Name: name, MaxAge: pageCacheMaxStale, FreshFor: pageCacheMaxAge, NoStoreAge: pageDegradedAge, Now: now,
		MaxBytes: int64(limit), MaxEntryBytes: int64(limit) / 8, Budget: budget,
		GzipMinBytes: respcache.DefaultGzipMinBytes,
		// A page whose rendering again finds it gone is dropped: the next
		// request renders it and gets the error.
		Drop: func(err error) bool { return registry.IsKind(err, registry.NotFound) },
	})
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

// servedFresh serves the page under key from c if it is fresh there,
// and reports whether it did. A page handler calls it before it makes
// the closure that would render the page (cached), so that a fresh hit,
// nearly every request to a read page, allocates no closure; the same
// rules as cached's apply to the key.
func (s *Service) servedFresh(c *pageCache, w http.ResponseWriter, r *http.Request, v *visit, key string) bool {
	e := c.Lookup(allPages, key)
	if c.StateAt(e, reqtime.Of(w)) != respcache.Fresh {
		return false
	}
	s.writePart(w, r, v, e)
	return true
}

// cachedIn is cached with the pages kept in c.
func (s *Service) cachedIn(c *pageCache, w http.ResponseWriter, r *http.Request, v *visit, key string, build pageBuild) error {
	e := c.Lookup(allPages, key)
	switch c.StateAt(e, reqtime.Of(w)) {
	case respcache.Fresh:
	case respcache.Stale:
		if c.ShouldRevalidate(e) {
			c.Revalidate(allPages, key, e, s.partRenderer(e.Value.next, e.Value.query, build, e))
		}
	default:
		var err error
		if e, err = c.Load(r.Context(), allPages, key, e, s.partRenderer(signInNext(r), v.query, build, nil)); err != nil {
			return err
		}
	}
	s.writePart(w, r, v, e)
	return nil
}

// partRenderer renders a page part with build, kept as the whole page of
// an anonymous visitor of next with query in the search box. The cache
// runs it once however many requests ask, detached from them. When it
// renders again the stale page prev (nil for none) and build's data has
// prev's digest (dataDigest), prev's page is kept as it is, without
// running the template: the respcache renews it (Rendered with the same
// Body).
func (s *Service) partRenderer(next, query string, build pageBuild, prev *respcache.Entry[*pagePart]) respcache.RenderFunc[*pagePart] {
	return func(ctx context.Context) (respcache.Rendered[*pagePart], error) {
		title, name, data, err := build(ctx)
		if err != nil {
			return respcache.Rendered[*pagePart]{}, err
		}
		partial := false
		if p, ok := data.(partialPage); ok && p.partial() {
			partial = true
		}
		digest, digestOK := dataDigest(name, title, data)
		if pp := prev; pp != nil && digestOK && !partial && pp.Value.digested && pp.Value.digest == digest &&
			pp.Value.next == next && pp.Value.query == query {
			kept := *pp.Value
			return respcache.Rendered[*pagePart]{Body: pp.Body, Value: &kept, Size: partSize(&kept), ETag: pp.ETag[0]}, nil
		}
		html, err := execute(name, data)
		if err != nil {
			return respcache.Rendered[*pagePart]{}, registry.Wrap(registry.Internal, err, "rendering the page")
		}
		part, err := s.newPart(title, next, query, html)
		if err != nil {
			return part, err
		}
		part.Value.digest, part.Value.digested = digest, digestOK
		part.NoStore = partial // a degraded page is kept for pageDegradedAge only, never in place of a whole page
		return part, nil
	}
}

// partSize is what a cached page part accounts besides its bytes.
func partSize(p *pagePart) int64 { return int64(len(p.title) + len(p.next) + len(p.query)) }

// partialPage is the data of a page that may be served degraded: a part
// of it could not be read, and the page says so in its place (a provider
// or module page whose download figures are unavailable). Such a page is
// served to the requests that asked for it and kept in the page cache
// only for pageDegradedAge (respcache.Rendered.NoStore with
// Options.NoStoreAge), never in place of a whole page being rendered
// again, so that the first request after the cause is gone and that age
// has passed gets the whole page.
type partialPage interface {
	// partial reports whether a part of the page could not be read.
	partial() bool
}

// newPart makes the cached page of html: the whole page of an anonymous
// visitor of next with query in the search box, and its ETag (pageETag,
// the one the same page rendered for that visitor without the cache has).
func (s *Service) newPart(title, next, query string, html template.HTML) (respcache.Rendered[*pagePart], error) {
	var head bytes.Buffer
	if err := templates.ExecuteTemplate(&head, "layout-head", layoutData{Title: title, Query: query, Host: s.opt.Host, Next: next}); err != nil {
		return respcache.Rendered[*pagePart]{}, registry.Wrap(registry.Internal, err, "rendering the layout")
	}
	page := make([]byte, 0, head.Len()+len(html)+len(s.foot))
	page = append(append(append(page, head.Bytes()...), html...), s.foot...)
	p := &pagePart{title: title, next: next, query: query, start: head.Len(), end: head.Len() + len(html)}
	p.sum = sha256.Sum256(page[p.start:p.end])
	return respcache.Rendered[*pagePart]{
		Body:  page,
		Value: p,
		Size:  partSize(p),
		ETag:  pageETag(head.Bytes(), p.sum, s.foot),
	}, nil
}

// listCacheEntries bounds the version lists kept (lists).
const listCacheEntries = 1024

// listCache keeps the version lists of providers and modules for the
// pages of their versions, dropped with the pages (one owner, allPages,
// as theirs). A list changes only through the index, so it is Lasting:
// kept for respcache.DefaultSettledAge while settled reports that every
// change reaches Invalidate as it commits (Service.UseSettled).
type listCache = respcache.Cache[struct{}, string, *versionList]

func newListCache(now func() time.Time, settled func() bool) *listCache {
	return respcache.New[struct{}, string, *versionList](respcache.Options{
		Name: "web versions", MaxAge: pageCacheMaxAge, MaxEntries: listCacheEntries, Now: now, Settled: settled,
	})
}
