// Package providers serves the provider registry protocol (providers.v1)
// that Terraform and OpenTofu use to list a provider's versions and to find
// the package of one version for one platform.
//
// Responses are rendered once and kept in memory (internal/respcache)
// with a strong ETag, so a repeated request costs a map lookup and a
// write. A publish calls Invalidate, which makes the new version visible
// at once on this replica; entries are also rendered again within a
// maximum age so that publishes through other replicas sharing the index
// show up within that age: from 3/4 of that age on, a request is answered
// with the cached document while one background render replaces it
// (stale-while-revalidate), so requests do not wait for renders of
// documents that are in use. Download documents embed signed URLs: an
// entry is fresh only while the signer issues the expiry it was rendered
// with (a half URL lifetime window); in the first eighth of the next
// window it is served stale while it is rendered again, later not at all.
//
// Every response carries "Cache-Control: no-cache": the clients do not
// cache, and a proxy may store a document but must revalidate it (cheaply,
// with If-None-Match) before reusing it, so it never serves a stale
// versions list or an expired download URL.
//
// Access control: with WithGuard, every request (cache hits included)
// first asks the Guard whether it may read the namespace. A request that
// may not is answered exactly as a request for a provider that does not
// exist, so private names do not leak; an anonymous one gets 401 so that
// the clients ask their user for credentials. Download documents of
// private namespaces embed URLs of the private signer (a shorter
// lifetime) and are marked "Cache-Control: private, no-cache". Without a
// Guard every namespace is readable by anyone.
package providers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
)

// BasePath is the providers.v1 base URL path announced by service discovery.
const BasePath = "/v1/providers/"

// Route patterns (net/http ServeMux syntax) of the protocol.
const (
	RouteVersions = "GET /v1/providers/{namespace}/{type}/versions"
	RouteDownload = "GET /v1/providers/{namespace}/{type}/{version}/download/{os}/{arch}"
)

// Defaults of the cache.
const (
	DefaultCacheBytes = 12 << 20
	DefaultMaxAge     = 30 * time.Second
)

// Shared header values, assigned to response headers without copying:
// net/http never modifies them and their capacity equals their length.
// (internal/server adds X-Content-Type-Options and the other security
// headers to every response.)
var (
	contentTypeJSON = []string{"application/json"}
	noCache         = []string{"no-cache"}
	privateNoCache  = []string{"private, no-cache"}
)

// Guard decides who may read a namespace on the protocol routes.
type Guard interface {
	// ProtocolReadAt returns nil if r, which arrived at now
	// (reqtime.Of), may read the namespace (a normalized name), and who
	// reads it: whether the namespace is private, and the consumer a
	// download is recorded for. An error of kind NotFound means r may
	// not read it: the Service then answers as for a provider that does
	// not exist. Any other error is answered as is (Unauthenticated:
	// 401).
	ProtocolReadAt(r *http.Request, namespace string, now time.Time) (auth.Reader, error)
	// MirrorRead returns nil if r may read the providers the mirror
	// fetches from other registries (WithMirror); any error is answered
	// as is (Unauthenticated: 401).
	MirrorRead(r *http.Request) error
}

// Service serves providers.v1. It is safe for concurrent use.
type Service struct {
	idx        store.Providers
	signer     *signedurl.Signer
	base       string // public origin without a trailing slash
	log        *slog.Logger
	now        reqtime.Clock    // WithClock's, else the request's time (reqtime.Of)
	clock      func() time.Time // WithClock's, else nil: the cache takes each request's time
	maxAge     time.Duration
	cacheBytes int64
	cache      *cache
	keyTails   sync.Map // rendered signing keys -> the one copy the download documents share
	ownHost    string   // the public URL's host, normalized (svchost.ForComparison)
	ownAlias   string   // the other name sources give it (discovery.RegistryHost), or ownHost
	mirror     MirrorSource

	guard   Guard             // nil: every namespace is readable by anyone
	private *signedurl.Signer // signs the URLs of private namespaces

	downloads *downloads.Counter // nil: downloads are not counted
	budget    *respcache.Budget  // shared with other caches (nil: none)
	settled   func() bool        // WithSettled's, else nil
}

// Option adjusts a Service.
type Option func(*Service)

// WithCacheBudget makes the cached documents count against b, a byte
// budget shared with other caches (respcache.Budget), as well as
// against the cache's own bound (WithCacheBytes).
func WithCacheBudget(b *respcache.Budget) Option {
	return func(s *Service) { s.budget = b }
}

// WithSettled tells the cache when every change of the index reaches
// Invalidate as it commits (respcache.Options.Settled): the versions
// documents and the network mirror's index.json of Trove's own providers,
// which change only through the index, are then rendered again on
// respcache.DefaultSettledAge rather than on the maximum age. The download
// and mirror version documents, whose signed URLs age, and the mirror's
// documents of other registries keep the maximum age.
func WithSettled(settled func() bool) Option {
	return func(s *Service) { s.settled = settled }
}

// WithCacheBytes bounds the memory the rendered documents may take
// (DefaultCacheBytes if n <= 0).
func WithCacheBytes(n int64) Option {
	return func(s *Service) {
		if n > 0 {
			s.cacheBytes = n
		}
	}
}

// WithMaxAge sets how long a rendered document is served at most before
// it is rendered again from the index (DefaultMaxAge if d <= 0); from 3/4
// of it on, it is rendered again in the background while it is served.
func WithMaxAge(d time.Duration) Option {
	return func(s *Service) {
		if d > 0 {
			s.maxAge = d
		}
	}
}

// WithGuard makes the Service ask g whether a request may read a
// namespace, and sign the file URLs of private namespaces with private
// (the Service's signer if nil), which should issue shorter-lived URLs.
func WithGuard(g Guard, private *signedurl.Signer) Option {
	return func(s *Service) { s.guard, s.private = g, private }
}

// WithDownloadCounter makes the Service count every download document it
// answers with 200 to a GET (cache hits included; not HEAD, not 304, not
// errors) in c: what Terraform and OpenTofu fetch once per installation
// of a provider package, and what the public registry counts. The
// package file itself is not counted (the clients may fetch it several
// times, or from a presigned URL), nor are the network mirror's
// documents.
func WithDownloadCounter(c *downloads.Counter) Option {
	return func(s *Service) { s.downloads = c }
}

// WithClock makes the cache, and the judgement of a download document
// signed in an earlier URL window, read the time from now instead of
// taking each request's (for tests). The signer keeps its own clock.
func WithClock(now func() time.Time) Option {
	return func(s *Service) { s.now, s.clock = reqtime.ClockFrom(now), now }
}

// New returns a Service that reads versions from idx, signs file URLs with
// signer and makes them absolute with publicBase (scheme and host, and a
// path prefix if Trove is reached under one).
func New(idx store.Providers, signer *signedurl.Signer, publicBase *url.URL, log *slog.Logger, opts ...Option) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base := &url.URL{Scheme: publicBase.Scheme, Host: publicBase.Host, Path: publicBase.Path}
	s := &Service{
		idx:        idx,
		signer:     signer,
		base:       strings.TrimSuffix(base.String(), "/"),
		log:        log,
		maxAge:     DefaultMaxAge,
		cacheBytes: DefaultCacheBytes,
	}
	if h, err := svchost.ForComparison(base.Host); err == nil {
		s.ownHost = h.String()
	} else {
		s.ownHost = strings.ToLower(base.Host)
	}
	s.ownAlias = s.ownHost
	if h, err := svchost.ForComparison(discovery.RegistryHost(base.String())); err == nil {
		s.ownAlias = h.String()
	}
	for _, o := range opts {
		o(s)
	}
	s.cache = respcache.New[provKey, docKey, urls](respcache.Options{
		Name: "providers.v1", MaxAge: s.maxAge, MaxBytes: s.cacheBytes, Budget: s.budget, Now: s.clock, Log: log,
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
	mux.HandleFunc(RouteMirror, s.serveMirror)
}

// Invalidate drops every cached document of a provider (normalized names),
// so that the next request reads the index. Call it after a version was
// committed; renders that started earlier are not stored.
func (s *Service) Invalidate(namespace, typ string) {
	s.cache.InvalidateOwner(provKey{ns: namespace, typ: typ})
}

// InvalidateAll drops every cached document, for when changes to the
// index may have been missed (a change feed that reconnected).
func (s *Service) InvalidateAll() { s.cache.InvalidateAll() }

// CacheStats returns how many documents are cached and the memory they
// are accounted for.
func (s *Service) CacheStats() (entries int, bytes int64) {
	st := s.cache.Stats()
	return st.Entries, st.Bytes
}

// authorize asks the guard whether r, which arrived at now, may read the
// provider pk, and returns who reads it (the zero Reader, anonymous and public, without a
// guard). known says that pk is known to be valid and normalized (a cache
// entry exists under it); otherwise its names are parsed first. A
// refusal of kind NotFound is returned as notFound(normalized pk) so that
// it cannot be told apart from a provider that does not exist.
func (s *Service) authorize(r *http.Request, now time.Time, pk provKey, dk docKey, known bool, notFound func(provKey, docKey) error) (rd auth.Reader, err error) {
	if s.guard == nil {
		return auth.Reader{}, nil
	}
	if !known {
		if pk, err = parseProvider(pk); err != nil {
			return auth.Reader{}, err
		}
	}
	rd, err = s.guard.ProtocolReadAt(r, pk.ns, now)
	if registry.IsKind(err, registry.NotFound) {
		return rd, notFound(pk, dk)
	}
	return rd, err
}

func (s *Service) serveVersions(w http.ResponseWriter, r *http.Request) {
	s.ServeVersions(w, r, r.PathValue("namespace"), r.PathValue("type"))
}

// ServeVersions answers RouteVersions for the path values namespace and
// typ, for a router that matched the path itself (the server's
// pre-router); the mux's handler reads them from the request.
func (s *Service) ServeVersions(w http.ResponseWriter, r *http.Request, namespace, typ string) {
	pk := provKey{ns: namespace, typ: typ}
	e := s.cache.Lookup(pk, docKey{})
	now := reqtime.Of(w)
	rd, err := s.authorize(r, now, pk, docKey{}, e != nil, func(pk provKey, _ docKey) error { return versionsNotFound(pk) })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if e == nil {
		// Not cached under these names: they may be another spelling of
		// a cached provider's.
		if pk, err = parseProvider(pk); err != nil {
			s.writeError(w, r, err)
			return
		}
		e = s.cache.Lookup(pk, docKey{})
	}
	switch s.cache.StateAt(e, now) {
	case respcache.Stale:
		if s.cache.ShouldRevalidate(e) {
			ck := pk.clone() // the cache keeps the key: never the request's memory
			s.cache.Revalidate(ck, docKey{}, e, s.versionsRenderer(ck))
		}
		fallthrough
	case respcache.Fresh:
		writeEntry(w, r, e, rd.Private)
		return
	}
	pk = pk.clone()
	e, err = s.cache.Load(r.Context(), pk, docKey{}, e, s.versionsRenderer(pk))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeEntry(w, r, e, rd.Private)
}

func (s *Service) serveDownload(w http.ResponseWriter, r *http.Request) {
	s.ServeDownload(w, r, r.PathValue("namespace"), r.PathValue("type"), r.PathValue("version"), r.PathValue("os"), r.PathValue("arch"))
}

// ServeDownload answers RouteDownload for its path values (see
// ServeVersions).
func (s *Service) ServeDownload(w http.ResponseWriter, r *http.Request, namespace, typ, version, os, arch string) {
	pk := provKey{ns: namespace, typ: typ}
	dk := docKey{version: version, os: os, arch: arch}
	e := s.cache.Lookup(pk, dk)
	now := reqtime.Of(w)
	rd, err := s.authorize(r, now, pk, dk, e != nil, downloadNotFound)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if e == nil {
		if pk, err = parseProvider(pk); err == nil {
			err = checkDownload(pk, dk)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		e = s.cache.Lookup(pk, dk)
	}
	private := rd.Private
	signer := s.signer
	if private {
		signer = s.private
	}
	expiry := signer.ExpiryAt(now).Unix()
	st := s.cache.StateAt(e, now)
	if st != respcache.Expired && (e.Value.expiry != expiry || e.Value.private != private) {
		st = downloadState(e, expiry, private, s.now.At(now).Unix())
	}
	switch st {
	case respcache.Stale:
		if s.cache.ShouldRevalidate(e) {
			ck, cd := pk.clone(), dk.clone()
			s.cache.Revalidate(ck, cd, e, s.downloadRenderer(ck, cd, signer, private))
		}
		fallthrough
	case respcache.Fresh:
		s.countDownload(r, now, rd, writeEntry(w, r, e, private), pk, dk, e.Value.counted)
		return
	}
	pk, dk = pk.clone(), dk.clone()
	e, err = s.cache.Load(r.Context(), pk, dk, e, s.downloadRenderer(pk, dk, signer, private))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.countDownload(r, now, rd, writeEntry(w, r, e, private), pk, dk, e.Value.counted)
}

// countDownload counts a download document answered with status to the
// reader rd of r, which arrived at now, if it is a download (see
// WithDownloadCounter). pk and dk are valid and normalized: they name a
// cached document.
func (s *Service) countDownload(r *http.Request, now time.Time, rd auth.Reader, status int, pk provKey, dk docKey, m *downloads.Memo) {
	if s.downloads != nil && status == http.StatusOK && r.Method == http.MethodGet {
		s.downloads.AddRequestMemo(r, rd.Consumer, registry.ProviderDownload(pk.ns, pk.typ, dk.version, dk.os, dk.arch), now, m)
	}
}

// writeEntry answers with a cached document, or 304 when the client
// already holds it, and returns the status. It does not allocate.
func writeEntry(w http.ResponseWriter, r *http.Request, e *entry, private bool) int {
	if private {
		return e.Serve(w, r, contentTypeJSON, privateNoCache)
	}
	return e.Serve(w, r, contentTypeJSON, noCache)
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	w.Header()["Cache-Control"] = noCache
	httpjson.WriteError(s.log, w, r, err)
}

// parseProvider validates and normalizes the names of a request. Invalid
// names answer 404, which clients report best ("provider not found").
func parseProvider(pk provKey) (provKey, error) {
	ns, err := registry.ParseNamespace(pk.ns)
	if err != nil {
		return provKey{}, registry.Errorf(registry.NotFound, "provider %s/%s not found: %s", registry.Elide(pk.ns), registry.Elide(pk.typ), registry.Message(err))
	}
	typ, err := registry.ParseProviderType(pk.typ)
	if err != nil {
		return provKey{}, registry.Errorf(registry.NotFound, "provider %s/%s not found: %s", registry.Elide(pk.ns), registry.Elide(pk.typ), registry.Message(err))
	}
	return provKey{ns: ns, typ: typ}, nil
}

// versionsRenderer renders the versions document of pk (valid,
// normalized names).
func (s *Service) versionsRenderer(pk provKey) respcache.RenderFunc[urls] {
	return func(ctx context.Context) (respcache.Rendered[urls], error) {
		vs, err := s.idx.ListProviderVersions(ctx, pk.ns, pk.typ)
		if registry.IsKind(err, registry.NotFound) || err == nil && len(vs) == 0 {
			return respcache.Rendered[urls]{}, versionsNotFound(pk)
		}
		if err != nil {
			return respcache.Rendered[urls]{}, err
		}
		body, err := renderVersions(pk.ns, pk.typ, vs)
		if err != nil {
			return respcache.Rendered[urls]{}, registry.Wrap(registry.Internal, err, "encoding the versions document")
		}
		return respcache.Rendered[urls]{Body: body, Lasting: true}, nil
	}
}

// versionsNotFound is the answer for the versions of a provider (valid,
// normalized names) that does not exist or may not be read.
func versionsNotFound(pk provKey) error {
	return registry.Errorf(registry.NotFound, "provider %s/%s not found", pk.ns, pk.typ)
}

// versionNotFound is the answer for the download document of a version
// (valid names) that does not exist or may not be read.
func versionNotFound(pk provKey, dk docKey) error {
	return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", pk.ns, pk.typ, dk.version)
}

// downloadNotFound is the answer for the download document of a version
// that may not be read: the same as for one that does not exist.
func downloadNotFound(pk provKey, dk docKey) error {
	if err := checkDownload(pk, dk); err != nil {
		return err
	}
	return versionNotFound(pk, dk)
}

// checkDownload validates the version and platform of a download request.
func checkDownload(pk provKey, dk docKey) error {
	// The names come from the path and may be any length: each is elided
	// in the message (the version and platform are valid here only once
	// these pass).
	if _, err := registry.ParseVersion(dk.version); err != nil {
		return registry.Errorf(registry.NotFound, "provider %s/%s has no version %q: %s", pk.ns, pk.typ, registry.Elide(dk.version), registry.Message(err))
	}
	if err := registry.ValidatePlatform(dk.os, dk.arch); err != nil {
		return registry.Errorf(registry.NotFound, "provider %s/%s %s has no package for %s_%s: %s", pk.ns, pk.typ, dk.version, registry.Elide(dk.os), registry.Elide(dk.arch), registry.Message(err))
	}
	return nil
}

// downloadRenderer renders the download document dk of pk (valid,
// normalized names) with URLs signed by signer (the private one if
// private).
func (s *Service) downloadRenderer(pk provKey, dk docKey, signer *signedurl.Signer, private bool) respcache.RenderFunc[urls] {
	return func(ctx context.Context) (respcache.Rendered[urls], error) {
		v, err := s.idx.GetProviderVersion(ctx, pk.ns, pk.typ, dk.version)
		if registry.IsKind(err, registry.NotFound) {
			return respcache.Rendered[urls]{}, versionNotFound(pk, dk)
		}
		if err != nil {
			return respcache.Rendered[urls]{}, err
		}
		p, ok := v.Platform(dk.os, dk.arch)
		if !ok {
			return respcache.Rendered[urls]{}, registry.Errorf(registry.NotFound, "provider %s/%s %s has no package for %s_%s (it has: %s)",
				pk.ns, pk.typ, dk.version, dk.os, dk.arch, platformList(v.Platforms))
		}
		// Read the expiry before signing: should the window turn in
		// between, the entry is merely rendered again on the next request.
		exp := signer.Expiry().Unix()
		body, tail, err := s.renderDownload(v, p, signer)
		if err != nil {
			return respcache.Rendered[urls]{}, registry.Wrap(registry.Internal, err, "encoding the download document")
		}
		return respcache.Rendered[urls]{Body: body, Tail: tail, Value: urls{expiry: exp, private: private, counted: new(downloads.Memo)}}, nil
	}
}

func platformList(ps []registry.Platform) string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.OS+"_"+p.Arch)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "no packages"
	}
	return strings.Join(names, ", ")
}

// The JSON documents of the protocol.
type (
	versionsDoc struct {
		Versions []versionDoc `json:"versions"`
		// Warnings are printed by Terraform and OpenTofu on every init
		// that queries the provider ("Additional provider information
		// from registry"): one per deprecated version listed.
		Warnings []string `json:"warnings,omitempty"`
	}
	versionDoc struct {
		Version   string        `json:"version"`
		Protocols []string      `json:"protocols"`
		Platforms []platformDoc `json:"platforms"`
	}
	platformDoc struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	// downloadDoc is the download document up to its last member,
	// "signing_keys", which renderDownload appends.
	downloadDoc struct {
		Protocols           []string `json:"protocols"`
		OS                  string   `json:"os"`
		Arch                string   `json:"arch"`
		Filename            string   `json:"filename"`
		DownloadURL         string   `json:"download_url"`
		SHASumsURL          string   `json:"shasums_url"`
		SHASumsSignatureURL string   `json:"shasums_signature_url"`
		SHASum              string   `json:"shasum"`
	}
	signingKeysDoc struct {
		GPGPublicKeys []gpgKeyDoc `json:"gpg_public_keys"`
	}
	gpgKeyDoc struct {
		KeyID          string `json:"key_id"`
		ASCIIArmor     string `json:"ascii_armor"`
		TrustSignature string `json:"trust_signature"` // always "": Terraform checks a non-empty one against HashiCorp's partner key
		Source         string `json:"source"`
		SourceURL      string `json:"source_url"`
	}
)

// renderVersions renders the versions document of provider ns/typ,
// newest version first and platforms sorted, so that equal contents give
// equal bytes (and ETags). Revoked versions are left out, so that new
// resolutions never choose them; each deprecated version listed adds a
// warning (at most maxWarnings, the newest), which the clients print.
func renderVersions(ns, typ string, vs []registry.ProviderVersion) ([]byte, error) {
	vs = slices.Clone(vs)
	registry.SortNewestFirst(vs, func(v registry.ProviderVersion) string { return v.Version })
	doc := versionsDoc{Versions: make([]versionDoc, 0, len(vs))}
	n := 0
	for _, v := range vs {
		n += len(v.Platforms)
	}
	platforms := make([]platformDoc, 0, n) // every version's, one allocation
	for _, v := range vs {
		if v.Revocation != nil {
			continue
		}
		if v.Deprecation != nil && len(doc.Warnings) < maxWarnings {
			doc.Warnings = append(doc.Warnings, registry.DeprecationWarning(ns, typ, v.Version, *v.Deprecation))
		}
		start := len(platforms)
		for _, p := range v.Platforms {
			platforms = append(platforms, platformDoc{OS: p.OS, Arch: p.Arch})
		}
		d := versionDoc{Version: v.Version, Protocols: nonNil(v.Protocols), Platforms: platforms[start:len(platforms):len(platforms)]}
		slices.SortFunc(d.Platforms, func(a, b platformDoc) int {
			if c := strings.Compare(a.OS, b.OS); c != 0 {
				return c
			}
			return strings.Compare(a.Arch, b.Arch)
		})
		doc.Versions = append(doc.Versions, d)
	}
	return json.Marshal(doc)
}

// maxWarnings bounds the deprecation warnings of one versions document:
// the clients print every one on every init.
const maxWarnings = 10

// renderDownload renders the download document of p as a head and a
// tail, the "signing_keys" member and the closing brace. Every document
// signed by the same keys gets the same tail slice (a few KB of ASCII
// armor held once instead of in each cached document); one tail is kept
// per distinct set of keys the process has served.
func (s *Service) renderDownload(v registry.ProviderVersion, p registry.Platform, signer *signedurl.Signer) (head, tail []byte, err error) {
	doc := downloadDoc{
		Protocols:           nonNil(v.Protocols),
		OS:                  p.OS,
		Arch:                p.Arch,
		Filename:            p.Filename,
		DownloadURL:         s.base + signer.Path(p.SHA256, p.Filename),
		SHASumsURL:          s.base + signer.Path(v.SHASumsDigest, v.SHASumsFilename()),
		SHASumsSignatureURL: s.base + signer.Path(v.SHASumsSignatureDigest, v.SHASumsSignatureFilename()),
		SHASum:              p.SHA256,
	}
	keys := signingKeysDoc{GPGPublicKeys: []gpgKeyDoc{}}
	if k := v.SigningKey; k.ASCIIArmor != "" {
		keys.GPGPublicKeys = append(keys.GPGPublicKeys, gpgKeyDoc{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	if head, err = json.Marshal(doc); err != nil {
		return nil, nil, err
	}
	keysJSON, err := json.Marshal(keys)
	if err != nil {
		return nil, nil, err
	}
	tail = append(append([]byte(`,"signing_keys":`), keysJSON...), '}')
	shared, _ := s.keyTails.LoadOrStore(string(tail), tail)
	return head[:len(head)-1], shared.([]byte), nil // head without its closing brace
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
