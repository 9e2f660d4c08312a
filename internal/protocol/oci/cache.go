package oci

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
)

// The documents of a repository in the cache (docKey.kind). Each is
// generated on demand and cached on its own, so that a request costs
// what it reads: the tag list reads the version list only, a version's
// index or manifest reads that one version.
const (
	// docTags is the repository's tag list (its body: the tags/list
	// answer without a query, the whole list or, above MaxTags, its first
	// page). It is loaded first by every request: a repository without
	// tags is NAME_UNKNOWN.
	docTags = 't'
	// docVersion (ref: its tag) is the document a version's tag names:
	// a provider version's index, a module version's manifest.
	docVersion = 'v'
	// docDigest (ref: a digest) is a manifest, index or blob of a version
	// whose documents were generated: stored along with its docVersion,
	// so that the requests by digest that follow a request by tag (the
	// platform's manifest, the layer, the referrers) find it.
	docDigest = 'd'
	// docRepo is the whole repository, generated only for a digest that
	// no docDigest entry names (a client that asks by digest first, or
	// after eviction).
	docRepo = 'r'
)

// docKey names one cached document of a repository (the owner).
type docKey struct {
	kind byte
	ref  string
}

// item is what an entry keeps besides its body.
type item struct {
	tags   []string // docTags: sorted
	latest string   // docTags of a module: the tag "latest" names
	// next is the Link header of a docTags body that is a first page, as
	// a header value (nil when the body is the whole list).
	next []string
	// docVersion and docDigest of a manifest or index: Content-Type and
	// Docker-Content-Digest, as header values.
	contentType []string
	digest      []string
	referrers   []Descriptor // docDigest of an index: its referrers
	blob        *blobRef     // docDigest of a blob
	rp          *repo        // docRepo
}

type entry = respcache.Entry[*item]

var (
	jsonType = []string{"application/json"}
	noCache  = []string{"no-cache"}
)

// cacheControl is the Cache-Control of the answer under construction:
// private if serve marked it so.
func cacheControl(h http.Header) []string {
	if v := h["Cache-Control"]; len(v) == 1 && v[0] == privateNoCache[0] {
		return privateNoCache
	}
	return noCache
}

// getAt returns the entry of (key, dk), cached or generated, for a
// request that arrived at now (reqtime.Of).
func (s *Service) getAt(ctx context.Context, key repoKey, dk docKey, now time.Time) (*entry, error) {
	return s.getFound(ctx, key, dk, s.cache.Lookup(key, dk), now)
}

// getFound is getAt for a caller whose Lookup of (key, dk) found e (nil:
// nothing), so that a request looks it up once.
func (s *Service) getFound(ctx context.Context, key repoKey, dk docKey, e *entry, now time.Time) (*entry, error) {
	switch s.cache.StateAt(e, now) {
	case respcache.Stale:
		if s.cache.ShouldRevalidate(e) {
			s.cache.Revalidate(key, dk, e, s.renderer(key, dk))
		}
		fallthrough
	case respcache.Fresh:
		return e, nil
	}
	return s.cache.Load(ctx, key, dk, e, s.renderer(key, dk))
}

// lookupDigest returns the docDigest entry of digest, if one is cached
// and not expired at now, the request's time (they are never
// revalidated: a version's documents do not change, and every change of
// the repository drops them).
func (s *Service) lookupDigest(key repoKey, digest string, now time.Time) *entry {
	e := s.cache.Lookup(key, docKey{docDigest, digest})
	if s.cache.StateAt(e, now) == respcache.Expired {
		return nil
	}
	return e
}

func (s *Service) renderer(key repoKey, dk docKey) respcache.RenderFunc[*item] {
	return func(ctx context.Context) (r respcache.Rendered[*item], err error) {
		switch dk.kind {
		case docTags:
			r, err = s.renderTags(ctx, key)
		case docVersion:
			r, err = s.renderVersion(ctx, key, dk.ref)
		default:
			var rp *repo
			if rp, err = s.generate(ctx, key); err == nil {
				r = respcache.Rendered[*item]{Value: &item{rp: rp}, Size: rp.size()}
			}
		}
		r.Lasting = lasting(key)
		return r, err
	}
}

// lasting reports whether the documents of key change only through the
// index (Trove's own providers and modules), not with an upstream (a
// mirrored provider's): see Options.Settled.
func lasting(key repoKey) bool { return key.kind == 'p' || key.kind == 'm' }

// invalidate drops every cached document of a repository. Every
// invalidation goes through it or InvalidateAll.
func (s *Service) invalidate(key repoKey) {
	s.inv.Lock()
	defer s.inv.Unlock()
	s.epoch.Add(1)
	s.cache.InvalidateOwner(key)
}

func (s *Service) notFound(key repoKey) error {
	return registry.Errorf(registry.NotFound, "repository %s is not known to this registry", key)
}

// renderTags lists the tags of a repository from its versions, without
// generating any document.
func (s *Service) renderTags(ctx context.Context, key repoKey) (respcache.Rendered[*item], error) {
	var it item
	switch key.kind {
	case 'p':
		vs, err := s.opt.Index.ListProviderVersionSummaries(ctx, key.ns, key.name)
		if err != nil {
			return respcache.Rendered[*item]{}, err
		}
		it.tags = providerTags(vs)
	case 'm':
		vs, err := s.opt.Index.ListModuleVersions(ctx, key.ns, key.name, key.system)
		if err != nil {
			return respcache.Rendered[*item]{}, err
		}
		versions := make([]string, len(vs))
		for i, v := range vs {
			versions[i] = v.Version
		}
		it.tags, it.latest = moduleTags(versions)
	default:
		rp, err := s.generate(ctx, key)
		if err != nil {
			return respcache.Rendered[*item]{}, err
		}
		it.tags = rp.tags
	}
	if len(it.tags) == 0 {
		return respcache.Rendered[*item]{}, s.notFound(key)
	}
	page := it.tags
	if len(page) > MaxTags {
		page = page[:MaxTags]
		it.next = []string{nextTagsLink(key, MaxTags, page[len(page)-1])}
	}
	body, err := tagsPage(key, page)
	if err != nil {
		return respcache.Rendered[*item]{}, err
	}
	size := int64(64)
	for _, t := range it.tags {
		size += int64(len(t)) + 16
	}
	r := respcache.Rendered[*item]{Body: body, Value: &it, Size: size}
	if it.next != nil {
		// The answer is the page and its Link: a repository that grows
		// past a page, or shrinks back to one, keeps its first page's
		// bytes but not its answer, and a 304 must not keep a client's
		// stale Link.
		r.ETag = respcache.ETagOf(body, []byte{0}, []byte(it.next[0]))
	}
	return r, nil
}

// renderVersion generates the documents of the version a tag names (a
// tag of the tag list, never "latest" of a module) and stores each as a
// docDigest entry; its own entry is the document the tag names.
func (s *Service) renderVersion(ctx context.Context, key repoKey, tag string) (respcache.Rendered[*item], error) {
	unknown := registry.Errorf(registry.NotFound, "manifest %s not found", registry.Elide(tag))
	epoch := s.epoch.Load() // before reading the index
	var rp *repo
	var err error
	switch key.kind {
	case 'p':
		var v registry.ProviderVersion
		v, err = s.opt.Index.GetProviderVersion(ctx, key.ns, key.name, VersionOf(tag))
		if err == nil && TagOf(v.Version) == tag {
			rp, err = providerRepo([]registry.ProviderVersion{v}, func(d string) (int64, error) { return s.opt.Blobs.Stat(ctx, d) }, s.provenance(ctx))
		}
	case 'm':
		var v registry.ModuleVersion
		v, err = s.opt.Index.GetModuleVersion(ctx, key.ns, key.name, key.system, VersionOf(tag))
		if err == nil && TagOf(v.Version) == tag {
			var z zipInfo
			var envelope []byte
			if z, err = s.zips.zip(ctx, v); err == nil {
				envelope, err = s.moduleProvenance(ctx, v)
			}
			if err == nil {
				rp, err = moduleRepo([]moduleVersion{{version: v.Version, zip: z.digest, size: z.size, provenance: envelope}})
			}
		}
	default:
		rp, err = s.generate(ctx, key)
	}
	if registry.IsKind(err, registry.NotFound) {
		return respcache.Rendered[*item]{}, unknown
	}
	if err != nil {
		return respcache.Rendered[*item]{}, err
	}
	if rp == nil || rp.byTag[tag] == "" {
		return respcache.Rendered[*item]{}, unknown
	}
	d := rp.docs[rp.byTag[tag]]
	if key.kind == 'p' || key.kind == 'm' {
		s.storeDigests(ctx, key, rp, epoch)
	}
	return respcache.Rendered[*item]{
		Body: d.body, ETag: `"` + d.desc.Digest + `"`, Size: 64,
		Value: &item{contentType: []string{d.desc.MediaType}, digest: []string{d.desc.Digest}},
	}, nil
}

// storeDigests caches every document and blob of one version's rp under
// its digest, replacing the entries cached already (the same content,
// but this render's age: they then live as long as the version's entry,
// which is rendered again in the background while it is requested),
// unless an invalidation happened since epoch, when rp
// was read from the index: a version deleted meanwhile must not be
// stored after its invalidation (the cache's own generations protect
// only the entry being rendered, not these).
func (s *Service) storeDigests(ctx context.Context, key repoKey, rp *repo, epoch uint64) {
	s.inv.RLock()
	defer s.inv.RUnlock()
	if s.epoch.Load() != epoch {
		return
	}
	for dg, d := range rp.docs {
		it := &item{contentType: []string{d.desc.MediaType}, digest: []string{dg}, referrers: rp.referrers[dg]}
		body := d.body
		dk := docKey{docDigest, dg}
		_, _ = s.cache.Load(ctx, key, dk, s.cache.Lookup(key, dk), func(context.Context) (respcache.Rendered[*item], error) {
			return respcache.Rendered[*item]{Body: body, ETag: `"` + dg + `"`, Value: it, Size: 64 + int64(len(it.referrers))*256, Lasting: lasting(key)}, nil
		})
	}
	for dg, b := range rp.blobs {
		if dg == emptyDigest {
			continue // every repository has it
		}
		it := &item{blob: &b}
		dk := docKey{docDigest, dg}
		_, _ = s.cache.Load(ctx, key, dk, s.cache.Lookup(key, dk), func(context.Context) (respcache.Rendered[*item], error) {
			return respcache.Rendered[*item]{Value: it, Size: 64, Lasting: lasting(key)}, nil
		})
	}
}

// serveTagList answers the tag list: the cached body as it is, or a
// page of it.
func (s *Service) serveTagList(w http.ResponseWriter, r *http.Request, key repoKey, tl *entry) {
	if r.URL.RawQuery == "" {
		if tl.Value.next != nil {
			w.Header()["Link"] = tl.Value.next
		}
		tl.Serve(w, r, jsonType, cacheControl(w.Header()))
		return
	}
	s.serveTags(w, r, key, tl.Value.tags)
}

// serveVersionDoc answers a manifest or index by tag (its docVersion
// entry) or by digest (its docDigest entry, else the whole repository).
func (s *Service) serveVersionDoc(w http.ResponseWriter, r *http.Request, key repoKey, tl *entry, ref string) {
	now := reqtime.Of(w)
	if strings.Contains(ref, ":") {
		if !digestRE.MatchString(ref) {
			s.writeError(w, r, errf(http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: want sha256: and 64 lower-case hex digits"), "")
			return
		}
		if e := s.lookupDigest(key, ref, now); e != nil && e.Value.contentType != nil {
			s.serveEntry(w, r, ref, e)
			return
		}
		rp, err := s.load(r.Context(), key, now)
		if err != nil {
			s.writeError(w, r, err, key.String())
			return
		}
		s.serveManifest(w, r, key, rp, ref)
		return
	}
	if !tagRE.MatchString(ref) {
		s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "invalid tag %q", registry.Elide(ref)), "")
		return
	}
	tag := ref
	if tag == "latest" && tl.Value.latest != "" {
		tag = tl.Value.latest
	}
	if _, ok := slices.BinarySearch(tl.Value.tags, tag); !ok {
		s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest %s not found", registry.Elide(ref)), "")
		return
	}
	e, err := s.getAt(r.Context(), key, docKey{docVersion, tag}, now)
	if registry.IsKind(err, registry.NotFound) {
		err = errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest %s not found", registry.Elide(ref))
	}
	if err != nil {
		s.writeError(w, r, err, key.String())
		return
	}
	s.serveEntry(w, r, ref, e)
}

// serveEntry answers with a cached manifest or index.
func (s *Service) serveEntry(w http.ResponseWriter, r *http.Request, ref string, e *entry) {
	mt := e.Value.contentType[0]
	if !accepts(r, mt) {
		s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest %s is a %s, which the request's Accept header excludes", registry.Elide(ref), mt), "")
		return
	}
	h := w.Header()
	h[digestHeader.Key(r)] = e.Value.digest
	e.Serve(w, r, e.Value.contentType, cacheControl(h))
}

// findBlob returns the blob digest names in the repository, for a
// request that arrived at now.
func (s *Service) findBlob(ctx context.Context, key repoKey, digest string, now time.Time) (blobRef, bool, error) {
	if digest == emptyDigest {
		return blobRef{size: int64(len(emptyConfig)), mem: emptyConfig}, true, nil
	}
	if e := s.lookupDigest(key, digest, now); e != nil && e.Value.blob != nil {
		return *e.Value.blob, true, nil
	}
	rp, err := s.load(ctx, key, now)
	if err != nil {
		return blobRef{}, false, err
	}
	b, ok := rp.blobs[digest]
	return b, ok, nil
}

// findReferrers returns the referrers of the subject digest, for a
// request that arrived at now.
func (s *Service) findReferrers(ctx context.Context, key repoKey, digest string, now time.Time) ([]Descriptor, error) {
	if e := s.lookupDigest(key, digest, now); e != nil && e.Value.contentType != nil {
		return e.Value.referrers, nil
	}
	rp, err := s.load(ctx, key, now)
	if err != nil {
		return nil, err
	}
	return rp.referrers[digest], nil
}
