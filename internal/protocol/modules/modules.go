// Package modules serves the module registry protocol (modules.v1) that
// Terraform and OpenTofu use to list a module's versions and to find the
// archive of one version, plus the read-only listing, search and details
// endpoints of the public registry API under the same base path.
//
// The download answer is 204 No Content with the archive's URL in the
// X-Terraform-Get header: Terraform reads only that header (with 200 or
// 204), and OpenTofu reads the header of a 204 (with a 200 it would
// require a JSON body with "location" instead). The URL is an absolute,
// signed, expiring /v1/files/<digest>/<name>-<system>-<version>.tar.gz
// (or .zip) URL: the clients download archives without the registry
// token, and recognise the archive type from the path's suffix.
//
// A module's versions are read once and kept in memory (internal/respcache)
// with the rendered versions document and its strong ETag; the download
// answer is computed from the same entry (signing a URL costs one HMAC),
// so a repeated request does not touch the index. Publish and delete call
// Invalidate; entries are also read again within a maximum age so that
// changes made through other replicas sharing the index show up within
// that age: from 3/4 of that age on, a request is answered from the cached
// entry while one background read replaces it (stale-while-revalidate).
//
// Access control, as for providers.v1: with WithGuard, every request
// (cache hits included) first asks the Guard whether it may read the
// namespace. A request that may not is answered exactly as one for a
// module that does not exist, so private names do not leak; an anonymous
// one gets 401 so that the clients ask their user for credentials, and so
// does one whose token is not valid (listings and search check the token
// first, even when they would list nothing).
// Archive URLs of private namespaces are signed by the private signer (a
// shorter lifetime), and their versions documents are marked
// "Cache-Control: private, no-cache". Listings and search leave out the
// modules of namespaces the caller may not read. Without a Guard every
// namespace is readable by anyone.
package modules

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/httpjson"
	modarchive "trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
)

// ServiceID is the service discovery identifier of the protocol.
const ServiceID = "modules.v1"

// BasePath is the modules.v1 base URL path announced by service discovery.
const BasePath = "/v1/modules/"

// Route patterns (net/http ServeMux syntax; GET includes HEAD).
const (
	RouteList           = "GET /v1/modules"
	RouteSearch         = "GET /v1/modules/search"
	RouteNamespace      = "GET /v1/modules/{namespace}"
	RouteLatest         = "GET /v1/modules/{namespace}/{name}/{system}"
	RouteVersions       = "GET /v1/modules/{namespace}/{name}/{system}/versions"
	RouteDownloadLatest = "GET /v1/modules/{namespace}/{name}/{system}/download"
	RouteVersion        = "GET /v1/modules/{namespace}/{name}/{system}/{version}"
	RouteDownload       = "GET /v1/modules/{namespace}/{name}/{system}/{version}/download"
)

// Defaults of the Service.
const (
	DefaultMaxAge     = 30 * time.Second
	DefaultMaxEntries = 50_000
	// DefaultCacheBytes bounds the memory of the cached modules (their
	// versions documents and version lists).
	DefaultCacheBytes = 8 << 20
	// DefaultPageSize and MaxPageSize bound the listing and search pages.
	DefaultPageSize = 15
	MaxPageSize     = 100
)

var (
	contentTypeJSON = []string{"application/json"}
	noCache         = []string{"no-cache"}
	privateNoCache  = []string{"private, no-cache"}
	noStore         = []string{"no-store"}

	// terraformGetHeader names the download answer's location
	// (httpjson.HeaderName).
	terraformGetHeader = httpjson.HeaderName{Canonical: "X-Terraform-Get", Wire: "x-terraform-get"}
)

// Guard decides who may read a namespace on the protocol routes (the
// same contract as providers.Guard; *auth.Access implements it).
type Guard interface {
	// ProtocolReadAt returns nil if r, which arrived at now
	// (reqtime.Of), may read the namespace (a normalized name), and who
	// reads it: whether the namespace is private, and the consumer a
	// download is recorded for. An error of kind NotFound means r may
	// not read it: the Service then answers as for a module that does
	// not exist. Any other error is answered as is (Unauthenticated:
	// 401).
	ProtocolReadAt(r *http.Request, namespace string, now time.Time) (auth.Reader, error)
}

// tokenGuard is the optional ability of a Guard to authenticate a request
// apart from any namespace (*auth.Access has it). With it, a listing or
// search that presents a token that is not valid gets 401 before anything
// is listed, as on every other route; without it, the token is only
// checked when the guard is asked about a namespace.
type tokenGuard interface {
	Authenticator() *auth.Authenticator
}

// maxListScan bounds how many matching modules a listing or search reads
// to filter out those the caller may not read.
const maxListScan = 10_000

// Service serves modules.v1. It is safe for concurrent use.
type Service struct {
	idx        store.Modules
	signer     *signedurl.Signer
	base       string // public origin without a trailing slash
	log        *slog.Logger
	now        func() time.Time // WithClock's, else nil: the cache takes each request's time
	maxAge     time.Duration
	maxEntries int
	cacheBytes int64
	budget     *respcache.Budget                           // shared with other caches (nil: none)
	settled    func() bool                                 // WithSettled's, else nil
	cache      *respcache.Cache[struct{}, modKey, *module] // one owner: see New

	guard   Guard             // nil: every namespace is readable by anyone
	private *signedurl.Signer // signs the archive URLs of private namespaces

	downloads *downloads.Counter // nil: downloads are neither counted nor shown
	mirror    Mirror             // nil: no namespace mirrors an upstream
}

// Option adjusts a Service.
type Option func(*Service)

// WithMaxAge sets how long a module's cached versions are served at most
// before they are read again from the index (DefaultMaxAge if d <= 0);
// from 3/4 of it on, they are read again in the background while served.
func WithMaxAge(d time.Duration) Option {
	return func(s *Service) {
		if d > 0 {
			s.maxAge = d
		}
	}
}

// WithMaxEntries bounds how many modules are cached (DefaultMaxEntries if
// n <= 0).
func WithMaxEntries(n int) Option {
	return func(s *Service) {
		if n > 0 {
			s.maxEntries = n
		}
	}
}

// WithCacheBudget makes the cached modules count against b, a byte
// budget shared with other caches (respcache.Budget), as well as
// against the cache's own bound (WithCacheBytes).
func WithCacheBudget(b *respcache.Budget) Option {
	return func(s *Service) { s.budget = b }
}

// WithCacheBytes bounds the memory the cached modules may take
// (DefaultCacheBytes if n <= 0).
func WithCacheBytes(n int64) Option {
	return func(s *Service) {
		if n > 0 {
			s.cacheBytes = n
		}
	}
}

// WithGuard makes the Service ask g whether a request may read a
// namespace, and sign the archive URLs of private namespaces with private
// (the Service's signer if nil), which should issue shorter-lived URLs.
func WithGuard(g Guard, private *signedurl.Signer) Option {
	return func(s *Service) { s.guard, s.private = g, private }
}

// WithDownloadCounter makes the Service count every download it answers
// with 204 to a GET in c (not HEAD, not errors; the redirect of
// .../download to the latest version is counted where it leads), and show
// each module's total (c's reads: the index's counts plus this process's
// pending ones) as "downloads" in the listing, search and details
// documents.
func WithDownloadCounter(c *downloads.Counter) Option {
	return func(s *Service) { s.downloads = c }
}

// WithClock makes the cache read the time from now (for tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithSettled tells the cache when every change of the index reaches
// Invalidate as it commits (respcache.Options.Settled): the versions of a
// module of a namespace that mirrors no upstream, which change only
// through the index, are then read again on respcache.DefaultSettledAge
// rather than on the maximum age. A mirrored namespace's, which list the
// upstream's versions too, keep the maximum age.
func WithSettled(settled func() bool) Option { return func(s *Service) { s.settled = settled } }

// New returns a Service that reads modules from idx, signs archive URLs
// with signer and makes them absolute with publicBase (scheme and host,
// and a path prefix if Trove is reached under one).
func New(idx store.Modules, signer *signedurl.Signer, publicBase *url.URL, log *slog.Logger, opts ...Option) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := &url.URL{Scheme: publicBase.Scheme, Host: publicBase.Host, Path: publicBase.Path}
	s := &Service{
		idx: idx, signer: signer, base: strings.TrimSuffix(base.String(), "/"), log: log,
		maxAge: DefaultMaxAge, maxEntries: DefaultMaxEntries, cacheBytes: DefaultCacheBytes,
	}
	for _, o := range opts {
		o(s)
	}
	// Every module is a document of the one owner, allModules: a hit is
	// then one look-up by the module's key in one map, not a second one
	// in a map of its own per module (a cache miss of the processor's on
	// nearly every request under load).
	s.cache = respcache.New[struct{}, modKey, *module](respcache.Options{
		Name: "modules.v1", MaxAge: s.maxAge, MaxBytes: s.cacheBytes, MaxEntries: s.maxEntries, Budget: s.budget, Now: s.now, Log: log,
		Drop:         func(err error) bool { return registry.IsKind(err, registry.NotFound) },
		GzipMinBytes: respcache.DefaultGzipMinBytes, Settled: s.settled,
	})
	if s.private == nil {
		s.private = s.signer
	}
	return s
}

// Register mounts the protocol's routes on mux.
func (s *Service) Register(mux route.Registrar) {
	mux.HandleFunc(RouteVersions, s.serveVersions)
	mux.HandleFunc(RouteDownload, s.serveDownload)
	mux.Handle(RouteDownloadLatest, s.handler(s.downloadLatest))
	mux.Handle(RouteLatest, s.handler(s.latestDetails))
	mux.Handle(RouteVersion, s.handler(s.versionDetails))
	mux.Handle(RouteList, s.handler(s.list))
	mux.Handle(RouteSearch, s.handler(s.search))
	mux.Handle(RouteNamespace, s.handler(s.listNamespace))
}

// Invalidate drops the cached versions of a module (normalized names).
// Call it after a version was committed or deleted; reads that started
// earlier are not stored.
func (s *Service) Invalidate(namespace, name, system string) {
	s.cache.Invalidate(allModules, modKey{namespace, name, system})
}

// InvalidateAll drops every cached module, for when changes to the index
// may have been missed (a change feed that reconnected).
func (s *Service) InvalidateAll() { s.cache.InvalidateAll() }

// CacheEntries returns how many modules are cached.
func (s *Service) CacheEntries() int { return s.cache.Stats().Entries }

// modKey names a module by its normalized coordinates.
type modKey struct{ ns, name, system string }

// clone returns k with its own copies of the strings, so that a cache
// entry never pins the memory of the request it was made for.
func (k modKey) clone() modKey {
	return modKey{strings.Clone(k.ns), strings.Clone(k.name), strings.Clone(k.system)}
}

// entry is what the cache keeps of one module: the versions document
// (Body, ETag, Length) and the module's versions.
type entry = respcache.Entry[*module]

// module is what an entry keeps besides the versions document. It never
// changes after insertion, except for the memo of signed archive URLs.
type module struct {
	versions []registry.ModuleVersion // newest first, without metadata
	// names[i] is versions[i].Version, the strings' bytes side by side
	// in one allocation: a download's scan for its version reads a few
	// adjacent cache lines instead of one line of each ~250-byte
	// ModuleVersion and each version string's own allocation (under the
	// load harness the scan of the structs was a third of the handler's
	// own time, in cache misses).
	names    []string
	upstream []string // a mirrored module's versions listed upstream and not stored yet
	// signed[i] is the memo of versions[i]'s signed location: a load by
	// position, where a map keyed by the version string hashed it on
	// every download (1 µs of a cached download under the load harness).
	signed []atomic.Pointer[signedLocation]
	// counted[i] remembers the download key last counted for
	// versions[i] and its counter slot, so that the next download of it
	// by the same consumer and client is counted without hashing the
	// key (downloads.Memo, as a providers.v1 download document keeps).
	counted []downloads.Memo
	// urls memoises the locations of versions fetched from the upstream
	// after the entry was made (version -> *signedLocation), until the
	// change that stored them drops the entry.
	urls sync.Map
}

// signedLocation is an X-Terraform-Get value, the expiry it carries and
// whether the private signer signed it.
type signedLocation struct {
	expiry  int64
	private bool
	header  []string
}

// version returns the stored version v, if any.
func (m *module) version(v string) (registry.ModuleVersion, bool) {
	if i := m.index(v); i >= 0 {
		return m.versions[i], true
	}
	return registry.ModuleVersion{}, false
}

// index returns the position of the stored version v in m.versions, or -1.
func (m *module) index(v string) int {
	for i, n := range m.names {
		if n == v {
			return i
		}
	}
	return -1
}

// packedNames returns the Version of each of vs, in order, as substrings
// of one string (module.names).
func packedNames(vs []registry.ModuleVersion) []string {
	n := 0
	for i := range vs {
		n += len(vs[i].Version)
	}
	buf := make([]byte, 0, n)
	for i := range vs {
		buf = append(buf, vs[i].Version...)
	}
	all := string(buf)
	names := make([]string, len(vs))
	for i := range vs {
		names[i], all = all[:len(vs[i].Version)], all[len(vs[i].Version):]
	}
	return names
}

// pathKey returns the module a request's path values name, as they are.
// allModules is the owner of every entry of the cache.
var allModules struct{}

func pathKey(r *http.Request) modKey {
	return modKey{r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system")}
}

// lookup returns the cached entry of the module raw (a request's path
// values) names, reading
// the index on a miss, and who reads it (whether its namespace is
// private, and the consumer). Invalid names, unknown modules and modules
// the guard refuses are NotFound. now is when r arrived (reqtime.Of).
func (s *Service) lookup(ctx context.Context, r *http.Request, raw modKey, now time.Time) (*entry, modKey, auth.Reader, error) {
	e := s.cache.Lookup(allModules, raw) // a hit on the raw names means they are valid and normalized
	key := raw
	if e == nil {
		var err error
		if key, err = parseKey(raw); err != nil {
			return nil, raw, auth.Reader{}, err
		}
		if key != raw {
			e = s.cache.Lookup(allModules, key)
		}
	}
	rd, err := s.authorize(r, now, key.ns)
	if registry.IsKind(err, registry.NotFound) {
		return nil, key, rd, moduleNotFound(key)
	}
	if err != nil {
		return nil, key, rd, err
	}
	switch s.cache.StateAt(e, now) {
	case respcache.Stale:
		if s.cache.ShouldRevalidate(e) {
			ck := key.clone() // the cache keeps the key: never the request's memory
			s.cache.Revalidate(allModules, ck, e, s.renderer(ck))
		}
		fallthrough
	case respcache.Fresh:
		return e, key, rd, nil
	}
	key = key.clone()
	e, err = s.cache.Load(ctx, allModules, key, e, s.renderer(key))
	return e, key, rd, err
}

// authorize asks the guard whether r, which arrived at now, may read the
// namespace, and who reads it (the zero Reader, anonymous and public,
// without a guard).
func (s *Service) authorize(r *http.Request, now time.Time, namespace string) (auth.Reader, error) {
	if s.guard == nil {
		return auth.Reader{}, nil
	}
	return s.guard.ProtocolReadAt(r, namespace, now)
}

// moduleNotFound is the one answer for a module that does not exist or
// that the caller may not read.
func moduleNotFound(key modKey) error {
	return registry.Errorf(registry.NotFound, "module %s/%s/%s not found", key.ns, key.name, key.system)
}

// parseKey validates and normalizes a module's names.
func parseKey(raw modKey) (modKey, error) {
	notFound := func(err error) error {
		return registry.Errorf(registry.NotFound, "module %s/%s/%s not found: %s", registry.Elide(raw.ns), registry.Elide(raw.name), registry.Elide(raw.system), registry.Message(err))
	}
	ns, err := registry.ParseNamespace(raw.ns)
	if err != nil {
		return raw, notFound(err)
	}
	name, err := registry.ParseModuleName(raw.name)
	if err != nil {
		return raw, notFound(err)
	}
	system, err := registry.ParseModuleSystem(raw.system)
	if err != nil {
		return raw, notFound(err)
	}
	return modKey{ns, name, system}, nil
}

// versionSize approximates the memory of one cached version besides its
// strings.
const versionSize = int64(unsafe.Sizeof(registry.ModuleVersion{}))

// renderer reads a module's versions (key: normalized names) and renders
// its versions document.
func (s *Service) renderer(key modKey) respcache.RenderFunc[*module] {
	return func(ctx context.Context) (respcache.Rendered[*module], error) {
		vs, err := s.idx.ListModuleVersions(ctx, key.ns, key.name, key.system)
		if registry.IsKind(err, registry.NotFound) {
			vs, err = nil, nil
		}
		if err != nil {
			return respcache.Rendered[*module]{}, err
		}
		var upstream []string
		mirrored := s.mirror != nil && s.mirror.Mirrored(key.ns)
		if mirrored {
			if upstream, err = s.mirroredVersions(ctx, key, vs); err != nil {
				return respcache.Rendered[*module]{}, err
			}
		}
		if len(vs) == 0 && len(upstream) == 0 {
			return respcache.Rendered[*module]{}, moduleNotFound(key)
		}
		registry.SortNewestFirst(vs, func(v registry.ModuleVersion) string { return v.Version })
		registry.SortNewestFirst(upstream, func(v string) string { return v })
		doc := versionsDoc{Modules: []versionsModule{{Source: key.ns + "/" + key.name + "/" + key.system, Versions: make([]versionItem, 0, len(vs)+len(upstream))}}}
		for _, v := range upstream {
			doc.Modules[0].Versions = append(doc.Modules[0].Versions, versionItem{Version: v})
		}
		size := int64(cap(vs))*versionSize + int64(len(upstream))*16
		for _, v := range upstream {
			size += int64(len(v))
		}
		for _, v := range vs {
			// Revoked versions stay in the entry (their downloads keep
			// working for configurations that have them installed) but
			// are not listed, so new resolutions never choose them.
			if v.Revocation == nil {
				doc.Modules[0].Versions = append(doc.Modules[0].Versions, versionItem{Version: v.Version, Deprecation: deprecationOf(v)})
			}
			size += int64(len(v.Namespace) + len(v.Name) + len(v.System) + len(v.Version) + len(v.ArchiveDigest) + len(v.ArchiveFormat) +
				len(v.Description) + len(v.Origin) + len(v.Metadata))
		}
		body, err := json.Marshal(doc)
		if err != nil {
			return respcache.Rendered[*module]{}, registry.Wrap(registry.Internal, err, "encoding the versions document")
		}
		size += int64(len(vs)) * int64(unsafe.Sizeof(atomic.Pointer[signedLocation]{})+unsafe.Sizeof(downloads.Memo{}))
		m := &module{versions: vs, names: packedNames(vs), upstream: upstream,
			signed: make([]atomic.Pointer[signedLocation], len(vs)), counted: make([]downloads.Memo, len(vs))}
		for _, n := range m.names {
			size += int64(unsafe.Sizeof(n)) + int64(len(n))
		}
		return respcache.Rendered[*module]{Body: body, Value: m, Size: size, Lasting: !mirrored}, nil
	}
}

// The versions document: only modules[0].versions[].version is read by
// the released clients. "deprecation" is Trove's, for people and scripts
// (no released Terraform or OpenTofu reads it; see docs/lifecycle.md).
type (
	versionsDoc struct {
		Modules []versionsModule `json:"modules"`
	}
	versionsModule struct {
		Source   string        `json:"source"`
		Versions []versionItem `json:"versions"`
	}
	versionItem struct {
		Version     string          `json:"version"`
		Deprecation *deprecationDoc `json:"deprecation,omitempty"`
	}
	deprecationDoc struct {
		Reason string `json:"reason"`
		Link   string `json:"link,omitempty"`
	}
)

// deprecationOf returns the deprecation of v as documents show it, nil
// when v is not deprecated.
func deprecationOf(v registry.ModuleVersion) *deprecationDoc {
	if v.Deprecation == nil {
		return nil
	}
	return &deprecationDoc{Reason: v.Deprecation.Reason, Link: v.Deprecation.Link}
}

func (s *Service) serveVersions(w http.ResponseWriter, r *http.Request) {
	s.ServeVersions(w, r, r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system"))
}

// ServeVersions answers RouteVersions for its path values, for a router
// that matched the path itself (the server's pre-router); the mux's
// handler reads them from the request.
func (s *Service) ServeVersions(w http.ResponseWriter, r *http.Request, namespace, name, system string) {
	e, _, rd, err := s.lookup(r.Context(), r, modKey{namespace, name, system}, reqtime.Of(w))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rd.Private {
		e.Serve(w, r, contentTypeJSON, privateNoCache)
		return
	}
	e.Serve(w, r, contentTypeJSON, noCache)
}

// serveDownload answers 204 with the signed archive URL in X-Terraform-Get.
func (s *Service) serveDownload(w http.ResponseWriter, r *http.Request) {
	s.ServeDownload(w, r, r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system"), r.PathValue("version"))
}

// ServeDownload answers RouteDownload for its path values (see
// ServeVersions).
func (s *Service) ServeDownload(w http.ResponseWriter, r *http.Request, namespace, name, system, ver string) {
	now := reqtime.Of(w)
	e, key, rd, err := s.lookup(r.Context(), r, modKey{namespace, name, system}, now)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	private := rd.Private
	// One scan of the versions finds both the version and the slot of
	// its signed location (a held version's; others memoise in urls).
	// v points into the entry (a held version): the ~250-byte struct is
	// not copied per request.
	i := e.Value.index(ver)
	var v *registry.ModuleVersion
	ok := i >= 0
	if ok {
		v = &e.Value.versions[i]
	} else {
		fetched, found, err := s.fetchMirrored(r.Context(), e, key, ver)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		v, ok = &fetched, found
	}
	if !ok {
		s.writeError(w, r, registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %q", key.ns, key.name, key.system, registry.Elide(ver)))
		return
	}
	// URLs signed within the same half-lifetime window are identical:
	// sign once per window, version and signer.
	signer := s.signer
	if private {
		signer = s.private
	}
	exp := signer.ExpiryAt(now).Unix()
	var loc *signedLocation
	var slot *atomic.Pointer[signedLocation]
	if i >= 0 && i < len(e.Value.signed) {
		slot = &e.Value.signed[i]
	}
	if slot != nil {
		loc = slot.Load()
	} else if l, ok := e.Value.urls.Load(ver); ok {
		loc = l.(*signedLocation)
	}
	if loc == nil || loc.expiry != exp || loc.private != private {
		loc = &signedLocation{expiry: exp, private: private, header: []string{s.base + signer.Path(v.ArchiveDigest, modarchive.Filename(*v))}}
		if slot != nil {
			slot.Store(loc)
		} else {
			e.Value.urls.Store(ver, loc)
		}
	}
	h := w.Header()
	h[terraformGetHeader.Key(r)] = loc.header
	h["Cache-Control"] = noStore
	w.WriteHeader(http.StatusNoContent) // net/http sends no Content-Length with a 204, as RFC 9110 asks
	if s.downloads != nil && r.Method == http.MethodGet {
		var m *downloads.Memo // a version fetched from the upstream after the entry was made: none
		name := v.Version
		if i >= 0 && i < len(e.Value.counted) {
			// The scan just read names[i]; v.Version would be one more
			// cache miss, in the struct.
			m, name = &e.Value.counted[i], e.Value.names[i]
		}
		s.downloads.AddRequestMemo(r, rd.Consumer, registry.ModuleDownload(key.ns, key.name, key.system, name), now, m)
	}
}

// moduleDownloads returns the total downloads of a module (normalized
// names), 0 without a counter.
func (s *Service) moduleDownloads(ctx context.Context, ns, name, system string) (int64, error) {
	if s.downloads == nil {
		return 0, nil
	}
	counts, err := s.downloads.ModuleDownloads(ctx, ns, name, system)
	return registry.DownloadTotal(counts), err
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header()["Cache-Control"] = noCache
	httpjson.WriteError(s.log, w, r, err)
}

// handler adapts an error-returning handler, marking its answers no-cache.
func (s *Service) handler(fn httpjson.HandlerFunc) http.Handler {
	return httpjson.Handler(s.log, func(w http.ResponseWriter, r *http.Request) error {
		w.Header()["Cache-Control"] = noCache
		return fn(w, r)
	})
}

// latest returns the version "latest" means: the newest release, or the
// newest pre-release when there is no release.
func latest(e *entry) registry.ModuleVersion {
	if len(e.Value.versions) == 0 { // a mirrored module Trove holds no version of yet
		return registry.ModuleVersion{Version: latestUpstream(e)}
	}
	for _, v := range e.Value.versions {
		if p, err := version.NewSemver(v.Version); err == nil && p.Prerelease() == "" && v.Revocation == nil {
			return v
		}
	}
	for _, v := range e.Value.versions {
		if v.Revocation == nil {
			return v
		}
	}
	return e.Value.versions[0] // every version is revoked
}

// downloadLatest redirects to the download of the latest version, as the
// public registry does, with an absolute URL under the public base (which
// keeps the path prefix Trove may be reached under).
func (s *Service) downloadLatest(w http.ResponseWriter, r *http.Request) error {
	e, key, _, err := s.lookup(r.Context(), r, pathKey(r), reqtime.Of(w))
	if err != nil {
		return err
	}
	v := latest(e)
	target := s.base + BasePath + url.PathEscape(key.ns) + "/" + url.PathEscape(key.name) + "/" + url.PathEscape(key.system) + "/" + url.PathEscape(v.Version) + "/download"
	w.Header()["Cache-Control"] = noStore
	http.Redirect(w, r, target, http.StatusFound)
	return nil
}

func (s *Service) latestDetails(w http.ResponseWriter, r *http.Request) error {
	e, _, rd, err := s.lookup(r.Context(), r, pathKey(r), reqtime.Of(w))
	if err != nil {
		return err
	}
	return s.writeDetails(w, r, e, latest(e).Version, rd.Private)
}

func (s *Service) versionDetails(w http.ResponseWriter, r *http.Request) error {
	e, key, rd, err := s.lookup(r.Context(), r, pathKey(r), reqtime.Of(w))
	if err != nil {
		return err
	}
	ver := r.PathValue("version")
	if _, ok := e.Value.version(ver); !ok {
		return registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %q", key.ns, key.name, key.system, registry.Elide(ver))
	}
	return s.writeDetails(w, r, e, ver, rd.Private)
}

// Documents of the listing, search and details endpoints, shaped like the
// public registry's.
type (
	moduleSummary struct {
		ID          string    `json:"id"`
		Owner       string    `json:"owner"`
		Namespace   string    `json:"namespace"`
		Name        string    `json:"name"`
		Version     string    `json:"version"`
		Provider    string    `json:"provider"`
		Description string    `json:"description"`
		Source      string    `json:"source"`
		PublishedAt time.Time `json:"published_at"`
		Downloads   int64     `json:"downloads"` // of every version of the module
		Verified    bool      `json:"verified"`
	}
	moduleDetails struct {
		moduleSummary
		Origin     string                  `json:"origin,omitempty"`
		Root       modarchive.ModuleInfo   `json:"root"`
		Submodules []modarchive.ModuleInfo `json:"submodules"`
		Examples   []modarchive.ModuleInfo `json:"examples"`
		Providers  []string                `json:"providers"`
		Versions   []string                `json:"versions"` // revoked versions left out
		// Deprecation is set for a deprecated version, Revoked for a
		// revoked one (whose details stay readable by address).
		Deprecation *deprecationDoc `json:"deprecation,omitempty"`
		Revoked     bool            `json:"revoked,omitempty"`
	}
	listMeta struct {
		Limit         int    `json:"limit"`
		CurrentOffset int    `json:"current_offset"`
		NextOffset    *int   `json:"next_offset,omitempty"`
		PrevOffset    *int   `json:"prev_offset,omitempty"`
		NextURL       string `json:"next_url,omitempty"`
		PrevURL       string `json:"prev_url,omitempty"`
	}
	moduleList struct {
		Meta    listMeta        `json:"meta"`
		Modules []moduleSummary `json:"modules"`
	}
)

func (s *Service) writeDetails(w http.ResponseWriter, r *http.Request, e *entry, ver string, private bool) error {
	if private {
		w.Header()["Cache-Control"] = privateNoCache
	}
	v0, ok := e.Value.version(ver)
	if !ok { // a mirrored version Trove does not hold yet: no details to show
		return registry.Errorf(registry.NotFound, "module version %s is not held by this mirror yet: its details show once it was downloaded", registry.Elide(ver))
	}
	v, err := s.idx.GetModuleVersion(r.Context(), v0.Namespace, v0.Name, v0.System, ver)
	if err != nil {
		return err
	}
	doc := moduleDetails{
		moduleSummary: summaryOf(v.Namespace, v.Name, v.System, v.Version, v.Description, v.PublishedAt),
		Origin:        v.Origin,
		Submodules:    []modarchive.ModuleInfo{},
		Examples:      []modarchive.ModuleInfo{},
		Providers:     []string{v.System},
		Versions:      make([]string, 0, len(e.Value.versions)),
	}
	if len(v.Metadata) > 0 {
		var md modarchive.Metadata
		if err := json.Unmarshal(v.Metadata, &md); err != nil {
			s.log.WarnContext(r.Context(), "module metadata does not decode", "module", doc.ID, "err", err)
		} else {
			doc.Root, doc.Submodules, doc.Examples = md.Root, nonNil(md.Submodules), nonNil(md.Examples)
		}
	}
	for _, mv := range e.Value.versions {
		if mv.Revocation == nil {
			doc.Versions = append(doc.Versions, mv.Version)
		}
	}
	doc.Deprecation, doc.Revoked = deprecationOf(v), v.Revocation != nil
	if doc.Downloads, err = s.moduleDownloads(r.Context(), v.Namespace, v.Name, v.System); err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, doc)
}

func summaryOf(ns, name, system, ver, description string, published time.Time) moduleSummary {
	return moduleSummary{
		ID: ns + "/" + name + "/" + system + "/" + ver, Namespace: ns, Name: name, Version: ver,
		Provider: system, Description: description, PublishedAt: published,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// list serves GET /v1/modules?namespace=&provider=&offset=&limit=.
func (s *Service) list(w http.ResponseWriter, r *http.Request) error {
	if err := s.authenticate(r); err != nil {
		return err
	}
	return s.listing(w, r, r.URL.Query().Get("namespace"), "")
}

// listNamespace serves GET /v1/modules/{namespace}.
func (s *Service) listNamespace(w http.ResponseWriter, r *http.Request) error {
	if err := s.authenticate(r); err != nil {
		return err
	}
	return s.listing(w, r, r.PathValue("namespace"), "")
}

// search serves GET /v1/modules/search?q=&namespace=&provider=&offset=&limit=.
func (s *Service) search(w http.ResponseWriter, r *http.Request) error {
	if err := s.authenticate(r); err != nil {
		return err
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		return registry.Errorf(registry.Invalid, "search needs a query: /v1/modules/search?q=<text>")
	}
	if err := registry.SearchQueryLimit.Check(q); err != nil {
		return err
	}
	return s.listing(w, r, r.URL.Query().Get("namespace"), q)
}

func (s *Service) listing(w http.ResponseWriter, r *http.Request, namespace, query string) error {
	params := r.URL.Query()
	if err := singleValued(params); err != nil {
		return err
	}
	f := registry.ModuleFilter{Query: query, Limit: DefaultPageSize}
	var err error
	if f.Offset, err = intParam(params, "offset", 0, 0, 1<<30); err != nil {
		return err
	}
	if f.Limit, err = intParam(params, "limit", DefaultPageSize, 1, MaxPageSize); err != nil {
		return err
	}
	if namespace != "" {
		if f.Namespace, err = registry.ParseNamespace(namespace); err != nil {
			return registry.Errorf(registry.NotFound, "namespace %q not found: %s", registry.Elide(namespace), registry.Message(err))
		}
	}
	if p := params.Get("provider"); p != "" {
		if f.System, err = registry.ParseModuleSystem(p); err != nil {
			return err
		}
	}
	out := moduleList{Meta: listMeta{Limit: f.Limit, CurrentOffset: f.Offset}, Modules: []moduleSummary{}}
	if params.Get("verified") == "true" { // Trove verifies no module
		return httpjson.Write(w, http.StatusOK, out)
	}
	mods, total, err := s.readablePage(r, f)
	if err != nil {
		return err
	}
	for _, m := range mods {
		sum := summaryOf(m.Namespace, m.Name, m.System, m.LatestVersion, m.Description, m.UpdatedAt)
		if sum.Downloads, err = s.moduleDownloads(r.Context(), m.Namespace, m.Name, m.System); err != nil {
			return err
		}
		out.Modules = append(out.Modules, sum)
	}
	page := func(offset int) string {
		q := url.Values{}
		for k, v := range params {
			q[k] = v
		}
		q.Set("offset", strconv.Itoa(offset))
		q.Set("limit", strconv.Itoa(f.Limit))
		return s.base + r.URL.EscapedPath() + "?" + q.Encode()
	}
	if next := f.Offset + f.Limit; next < total {
		out.Meta.NextOffset, out.Meta.NextURL = &next, page(next)
	}
	if f.Offset > 0 {
		prev := max(f.Offset-f.Limit, 0)
		out.Meta.PrevOffset, out.Meta.PrevURL = &prev, page(prev)
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// authenticate checks the token r presents, if any, whatever the request
// asks for: an invalid, expired or revoked token is Unauthenticated even
// where nothing would be listed. Anonymous requests pass.
func (s *Service) authenticate(r *http.Request) error {
	if len(r.Header["Authorization"]) == 0 {
		return nil
	}
	g, ok := s.guard.(tokenGuard)
	if !ok {
		return nil
	}
	_, err := g.Authenticator().AuthenticateCached(r)
	return err
}

// readablePage returns one page of the modules matching f that r may
// read, and how many of those there are. With a namespace filter the
// guard is asked once; otherwise up to maxListScan matches are read and
// those of namespaces r may not read are left out (each namespace is
// asked about once).
func (s *Service) readablePage(r *http.Request, f registry.ModuleFilter) ([]registry.Module, int, error) {
	ctx := r.Context()
	if s.guard == nil {
		return s.idx.ListModules(ctx, f)
	}
	if f.Namespace != "" {
		_, err := s.guard.ProtocolReadAt(r, f.Namespace, time.Now())
		if registry.IsKind(err, registry.NotFound) { // as for a namespace without modules
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		return s.idx.ListModules(ctx, f)
	}
	anonymous := len(r.Header["Authorization"]) == 0
	readable := make(map[string]bool)
	var out []registry.Module
	total := 0
	scan := f
	scan.Offset, scan.Limit = 0, 500
	for scan.Offset < maxListScan {
		mods, matches, err := s.idx.ListModules(ctx, scan)
		if err != nil {
			return nil, 0, err
		}
		for _, m := range mods {
			ok, seen := readable[m.Namespace]
			if !seen {
				_, err := s.guard.ProtocolReadAt(r, m.Namespace, time.Now())
				switch {
				case err == nil:
					ok = true
				case registry.IsKind(err, registry.NotFound), anonymous && registry.IsKind(err, registry.Unauthenticated):
				default: // e.g. a token that is not valid: 401 as on every protocol route
					return nil, 0, err
				}
				readable[m.Namespace] = ok
			}
			if ok {
				if total >= f.Offset && len(out) < f.Limit {
					out = append(out, m)
				}
				total++
			}
		}
		scan.Offset += len(mods)
		if len(mods) == 0 || scan.Offset >= matches {
			break
		}
	}
	return out, total, nil
}

// intParam reads an optional integer query parameter within [lo, hi].
// singleValued refuses a query that gives a parameter more than once
// (which offset or limit would count is ambiguous), as the management
// API does.
func singleValued(q url.Values) error {
	for name, vs := range q {
		if len(vs) > 1 {
			return registry.Errorf(registry.Invalid, "query parameter %q is given %d times: give it once", registry.Elide(name), len(vs))
		}
	}
	return nil
}

func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, registry.Errorf(registry.Invalid, "%s must be a whole number from %d to %d, got %q", name, lo, hi, s)
	}
	return n, nil
}
