// Package oci serves Trove's providers and modules through the pull API
// of the OCI Distribution Specification 1.1 under /v2/, in the layout
// OpenTofu (1.10 and later) installs from: `oci_mirror` provider
// installation and `oci://` module sources (see docs/oci.md).
//
// Nothing is copied: a provider version's tag names an index generated
// from the index (one image manifest per platform, whose one layer is the
// stored provider zip, so the layer digest is the lock file's zh: hash);
// a module version's tag names one image manifest whose layer is a
// deterministic zip of the stored module archive. Generated documents are
// the same bytes every time (stable digests) and cached per document in
// internal/respcache (cache.go): a repository's tag list (from its
// version list alone), and each version's index or manifest, generated
// on demand with its documents and blobs under their digests. Every
// change of a repository (publish, delete, revoke) drops its documents,
// like the providers.v1 documents. An upstream's provider (mirror.go) is
// cached as a whole repository.
//
// Repositories: <namespace>/<type> for a provider,
// <namespace>/modules/<name>/<system> for a module, and
// <upstream host>/<namespace>/<type> for a provider the mirror serves
// from an upstream registry (mirror.go: fetched and verified through the
// mirror on first request). Access goes through
// the same guard as providers.v1: public namespaces are anonymous; a
// private one answers 401 with a Bearer challenge whose realm is the
// token endpoint /v2/token, which takes a Trove token as the Basic
// password and issues a short-lived OCI bearer token bound to the
// repositories asked for (token.go). The surface is read-only: every
// write answers UNSUPPORTED.
package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
)

// Prefix is the path every route of the API starts with.
const Prefix = "/v2/"

// TokenPath is the token endpoint the Bearer challenges name.
const TokenPath = "/v2/token"

// MaxTags bounds one page of the tags list (a larger n is lowered to it,
// as the specification allows).
const MaxTags = 1000

// Index is what the Service reads of the index.
type Index interface {
	store.Providers
	store.Modules
	// ListMirroredVersions is store.Mirror's: the versions of an
	// upstream's provider the mirror holds.
	ListMirroredVersions(ctx context.Context, host, namespace, typ string) ([]registry.MirroredVersion, error)
}

// provenance returns the reader of a version's provenance envelope for
// providerRepo: nil when the index keeps none (store.Provenance). It asks
// the index only for the versions the list or read marked
// (registry.ProviderVersion.HasProvenance), not once per version.
func (s *Service) provenance(ctx context.Context) func(registry.ProviderVersion) ([]byte, error) {
	p, ok := s.opt.Index.(store.Provenance)
	if !ok {
		return nil
	}
	return func(v registry.ProviderVersion) ([]byte, error) {
		if !v.HasProvenance {
			return nil, nil
		}
		envelope, err := p.ProviderProvenance(ctx, v.Namespace, v.Type, v.Version)
		if registry.IsKind(err, registry.NotFound) {
			return nil, nil
		}
		return envelope, err
	}
}

// moduleProvenance returns a module version's provenance envelope for
// moduleRepo: nil when it has none or the index keeps none
// (store.Provenance).
func (s *Service) moduleProvenance(ctx context.Context, v registry.ModuleVersion) ([]byte, error) {
	p, ok := s.opt.Index.(store.Provenance)
	if !ok {
		return nil, nil
	}
	envelope, err := p.ModuleProvenance(ctx, v.Namespace, v.Name, v.System, v.Version)
	if registry.IsKind(err, registry.NotFound) {
		return nil, nil
	}
	return envelope, err
}

// Guard decides who may read a namespace (*auth.Access).
type Guard interface {
	ProtocolRead(r *http.Request, namespace string) (auth.Reader, error)
	// ProtocolReadAt is ProtocolRead for a request that arrived at now
	// (reqtime.Of), so that a cached answer's check does not read the
	// clock again.
	ProtocolReadAt(r *http.Request, namespace string, now time.Time) (auth.Reader, error)
	// MirrorRead and MirrorPublic decide the providers of upstream
	// registries (auth.Access.MirrorRead).
	MirrorRead(r *http.Request) error
	MirrorPublic() bool
	Authenticator() *auth.Authenticator
}

// Options configures a Service.
type Options struct {
	Index Index
	Blobs store.Blobs
	Guard Guard // nil: everything readable by anyone (tests only)
	// Signer signs the short-lived bearer tokens of the token endpoint
	// with the URL-signing key every replica shares (Signer.Sum); nil:
	// the endpoint issues none.
	Signer *signedurl.Signer
	// Mirror, if set, serves the providers of upstream registries the
	// mirror may fetch, under <host>/<namespace>/<type> (mirror.go).
	Mirror Mirror
	// Now is the clock of token lifetimes (time.Now if nil).
	Now       func() time.Time
	PublicURL *url.URL
	Logger    *slog.Logger
	// CacheBytes bounds the cached documents (default 8 MiB; the server
	// gives it --cache-bytes).
	CacheBytes int64
	// CacheBudget, if set, is a byte budget the cached documents count
	// against too, shared with other caches (the server's protocol
	// caches share --cache-bytes).
	CacheBudget *respcache.Budget
	// MaxAge is how long a generated document is served before it is
	// generated again (default 30s).
	MaxAge time.Duration
	// Settled, if set, reports when every change of the index reaches
	// the invalidations as it commits (respcache.Options.Settled): the
	// documents of Trove's own providers and modules, generated from the
	// index alone, are then generated again on
	// respcache.DefaultSettledAge rather than on MaxAge; a mirrored
	// provider's keep MaxAge.
	Settled func() bool
}

// repoKey names a repository: a provider (system "" and kind 'p'), a
// module, or a provider of an upstream registry (kind 'x', with host).
type repoKey struct {
	kind             byte // 'p', 'm' or 'x'
	ns, name, system string
	host             string
}

func (k repoKey) String() string {
	switch k.kind {
	case 'p':
		return k.ns + "/" + k.name
	case 'x':
		return k.host + "/" + k.ns + "/" + k.name
	}
	return k.ns + "/modules/" + k.name + "/" + k.system
}

// Service serves the OCI pull API. It is safe for concurrent use.
type Service struct {
	opt   Options
	host  string
	log   *slog.Logger
	cache *respcache.Cache[repoKey, docKey, *item]
	zips  *zipper
	// inv orders invalidations (write) against storeDigests (read);
	// epoch counts the invalidations. See storeDigests.
	inv   sync.RWMutex
	epoch atomic.Uint64
}

// New returns a Service.
func New(opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.CacheBytes <= 0 {
		opt.CacheBytes = 8 << 20
	}
	if opt.MaxAge <= 0 {
		opt.MaxAge = 30 * time.Second
	}
	s := &Service{opt: opt, host: opt.PublicURL.Host, log: opt.Logger, zips: newZipper(opt.Blobs)}
	s.cache = respcache.New[repoKey, docKey, *item](respcache.Options{
		Name: "oci", MaxAge: opt.MaxAge, MaxBytes: opt.CacheBytes, Budget: opt.CacheBudget, Log: opt.Logger,
		Drop:    func(err error) bool { return registry.IsKind(err, registry.NotFound) },
		Settled: opt.Settled,
	})
	return s
}

// Routes of the API: every path under /v2/, and /v2 itself.
const (
	Route     = "/v2/"
	RouteBase = "/v2"
)

// Register mounts the API on mux.
func (s *Service) Register(mux route.Registrar) {
	mux.HandleFunc(Route, s.serve)
	mux.HandleFunc(RouteBase, s.serve)
}

// ServeHTTP serves the API (what Register mounts), for a router that
// matched the path itself (the server's pre-router).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

// InvalidateProvider drops the cached documents of a provider.
func (s *Service) InvalidateProvider(namespace, typ string) {
	s.invalidate(repoKey{kind: 'p', ns: namespace, name: typ})
}

// InvalidateModule drops the cached documents of a module.
func (s *Service) InvalidateModule(namespace, name, system string) {
	s.invalidate(repoKey{kind: 'm', ns: namespace, name: name, system: system})
}

// InvalidateAll drops every cached document.
func (s *Service) InvalidateAll() {
	s.inv.Lock()
	defer s.inv.Unlock()
	s.epoch.Add(1)
	s.cache.InvalidateAll()
}

// ociError is an error of the specification's error codes.
type ociError struct {
	status  int
	code    string
	message string
}

// ociErrorItem is one error of an OCI error document.
type ociErrorItem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *ociError) Error() string { return e.code + ": " + e.message }

func errf(status int, code, format string, args ...any) *ociError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &ociError{status: status, code: code, message: msg}
}

// readMethods are the methods of every route of the API but the token
// endpoint's: the Allow header of their 405 answers.
const readMethods = "GET, HEAD"

// notAllowed answers a method the route does not take: 405 with the
// methods it takes in the Allow header (RFC 9110), the error document
// saying why.
func (s *Service) notAllowed(w http.ResponseWriter, r *http.Request, allow, why string) {
	w.Header().Set("Allow", allow)
	s.writeError(w, r, errf(http.StatusMethodNotAllowed, "UNSUPPORTED", "%s", why), "")
}

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error, repoName string) {
	var oe *ociError
	if !errors.As(err, &oe) {
		switch registry.KindOf(err) {
		case registry.NotFound:
			oe = &ociError{http.StatusNotFound, "NAME_UNKNOWN", registry.Message(err)}
		case registry.Unauthenticated:
			oe = &ociError{http.StatusUnauthorized, "UNAUTHORIZED", registry.Message(err)}
		case registry.Forbidden:
			oe = &ociError{http.StatusForbidden, "DENIED", registry.Message(err)}
		case registry.Unavailable, registry.UpstreamInvalid:
			// The mirror's upstream failed or answered what does not
			// verify: say so (the message names no cause's own text).
			s.log.WarnContext(r.Context(), "oci request failed upstream", "method", r.Method, "path", r.URL.Path, "err", err)
			oe = &ociError{httpjson.Status(registry.KindOf(err)), "UNKNOWN", registry.Message(err)}
		default:
			s.log.ErrorContext(r.Context(), "oci request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			oe = &ociError{http.StatusInternalServerError, "UNKNOWN", "internal error"}
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h[apiVersionHeader.Key(r)] = apiVersion
	if oe.status == http.StatusUnauthorized {
		scope := ""
		if repoName != "" {
			scope = `,scope="repository:` + repoName + `:pull"`
		}
		h.Set("WWW-Authenticate", `Bearer realm="`+s.origin(r)+TokenPath+`",service="`+s.host+`"`+scope)
	}
	w.WriteHeader(oe.status)
	if r.Method == http.MethodHead {
		return
	}
	_ = json.NewEncoder(w).Encode(map[string][]ociErrorItem{"errors": {{Code: oe.code, Message: oe.message}}})
}

// origin is the public scheme and host the challenges name.
func (s *Service) origin(*http.Request) string {
	u := s.opt.PublicURL
	return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
}

// Reference and digest grammar of the specification: tagRE matches
// ^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$ and digestRE ^sha256:[a-f0-9]{64}$
// (of Trove's digests, SHA-256 only), written out because every request
// by tag or digest checks one and a regexp costs more than the rest of a
// cached answer (TestReferenceGrammar holds them to the expressions).
var (
	tagRE    tagGrammar
	digestRE digestGrammar
)

type tagGrammar struct{}

// MatchString reports whether s is a valid tag.
func (tagGrammar) MatchString(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

type digestGrammar struct{}

// MatchString reports whether s is a valid SHA-256 digest.
func (digestGrammar) MatchString(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// apiVersion is the Docker-Distribution-Api-Version of every answer,
// assigned without copying (net/http never modifies header values).
var apiVersion = []string{"registry/2.0"}

// The OCI API's own headers: httpjson.HeaderName.
var (
	apiVersionHeader = httpjson.HeaderName{Canonical: "Docker-Distribution-Api-Version", Wire: "docker-distribution-api-version"}
	digestHeader     = httpjson.HeaderName{Canonical: "Docker-Content-Digest", Wire: "docker-content-digest"}
)

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	w.Header()[apiVersionHeader.Key(r)] = apiVersion
	path := r.URL.Path
	if path == "/v2" || path == "/v2/" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.notAllowed(w, r, readMethods, "this registry is read-only")
			return
		}
		if err := s.authenticate(r); err != nil {
			s.writeError(w, r, err, "")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("{}"))
		}
		return
	}
	if path == TokenPath {
		s.serveToken(w, r)
		return
	}
	// The operation is the second last segment (references hold no
	// "/"), so that a repository may contain "blobs" or "manifests".
	rest := strings.TrimPrefix(path, Prefix)
	var name, op, ref string
	if n, ok := strings.CutSuffix(rest, "/tags/list"); ok {
		name, op = n, "tags/list"
	} else if i := strings.LastIndexByte(rest, '/'); i > 0 {
		if j := strings.LastIndexByte(rest[:i], '/'); j > 0 {
			switch o := rest[j+1 : i]; o {
			case "manifests", "blobs", "referrers":
				name, op, ref = rest[:j], o, rest[i+1:]
			}
		}
	}
	if op == "" || name == "" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.notAllowed(w, r, readMethods, "this registry is read-only: publish through Trove's API")
			return
		}
		s.writeError(w, r, errf(http.StatusNotFound, "NAME_UNKNOWN", "no such route"), "")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.notAllowed(w, r, readMethods, "this registry is read-only: publish through Trove's API")
		return
	}
	key, tl, ok := s.cachedRepo(name)
	if !ok {
		var err error
		if key, err = parseRepo(name); err != nil {
			s.writeError(w, r, err, "")
			return
		}
	}
	now := reqtime.Of(w)
	private, err := s.authorize(r, key, now)
	if err != nil {
		s.writeError(w, r, err, key.String())
		return
	}
	if private {
		// Shared caches must not keep a private namespace's answers.
		w.Header()["Cache-Control"] = privateNoCache
	}
	if key.kind != 'p' && key.kind != 'm' {
		// An upstream's provider: served from its whole repository.
		rp, err := s.load(r.Context(), key, now)
		if err != nil {
			s.writeError(w, r, err, key.String())
			return
		}
		switch op {
		case "tags/list":
			s.serveTags(w, r, key, rp.tags)
		case "manifests":
			s.serveManifest(w, r, key, rp, ref)
		case "blobs":
			s.serveBlob(w, r, key, rp, ref)
		case "referrers":
			s.serveReferrers(w, r, key, rp, ref)
		}
		return
	}
	// Every request reads the tag list first (cached): a repository
	// without tags is unknown. A tag list cachedRepo found is not looked
	// up again.
	if tl != nil {
		tl, err = s.getFound(r.Context(), key, docKey{kind: docTags}, tl, now)
	} else {
		tl, err = s.getAt(r.Context(), key, docKey{kind: docTags}, now)
	}
	if err != nil {
		s.writeError(w, r, err, key.String())
		return
	}
	switch op {
	case "tags/list":
		s.serveTagList(w, r, key, tl)
	case "manifests":
		s.serveVersionDoc(w, r, key, tl, ref)
	case "blobs":
		s.serveBlob(w, r, key, nil, ref)
	case "referrers":
		s.serveReferrers(w, r, key, nil, ref)
	}
}

// cachedRepo returns the key of a provider or module repository named
// as it is cached, and its tag list's entry (in any state): a tag list
// stored under the name's parts taken as they are means they are valid
// and normalized (parseRepo made the key it was stored under), so a
// cache hit skips parsing them again (the IDNA normalization of each
// part costs more than the rest of a cached answer), and serve reads
// the tag list from the entry found rather than looking it up again.
// Other names, and names not cached, are not found here (nil, false).
func (s *Service) cachedRepo(name string) (repoKey, *entry, bool) {
	var k repoKey
	first, rest, _ := strings.Cut(name, "/")
	second, rest, more := strings.Cut(rest, "/")
	switch {
	case !more:
		k = repoKey{kind: 'p', ns: first, name: second}
	case second == "modules":
		var third string
		third, rest, more = strings.Cut(rest, "/")
		if !more || strings.IndexByte(rest, '/') >= 0 {
			return repoKey{}, nil, false
		}
		k = repoKey{kind: 'm', ns: first, name: third, system: rest}
	default:
		return repoKey{}, nil, false
	}
	// One Lookup serves both the name's check and the tag list's read
	// that follows it. It marks the tag list used (kept by the cache's
	// eviction sweeps) also for a request that the access check then
	// refuses: that request names a repository that is cached, and a
	// refused request may as well keep it cached as an accepted one.
	e := s.cache.Lookup(k, docKey{kind: docTags})
	return k, e, e != nil
}

// parseRepo maps a repository name onto a provider or module; anything
// else (other shapes, invalid names, traversal) is NAME_UNKNOWN.
func parseRepo(name string) (repoKey, error) {
	unknown := func() error {
		return errf(http.StatusNotFound, "NAME_UNKNOWN", "repository %q is not known to this registry", registry.Elide(name))
	}
	if len(name) > 255 {
		return repoKey{}, unknown()
	}
	parts := strings.Split(name, "/")
	var k repoKey
	var err error
	switch {
	case len(parts) == 2:
		k.kind = 'p'
		if k.ns, err = registry.ParseNamespace(parts[0]); err == nil {
			k.name, err = registry.ParseProviderType(parts[1])
		}
	case len(parts) == 3:
		k.kind = 'x'
		var h svchost.Hostname
		if h, err = svchost.ForComparison(parts[0]); err == nil {
			k.host = h.String()
			// A host with a port cannot be named (OCI names hold no
			// ":"), and one without a dot is not taken for a host, so
			// that the three-part shape stays the mirror's alone.
			if strings.Contains(k.host, ":") || !strings.Contains(k.host, ".") {
				err = errors.New("not a host name with a dot and without a port")
			}
		}
		if err == nil {
			if k.ns, err = registry.ParseNamespace(parts[1]); err == nil {
				k.name, err = registry.ParseProviderType(parts[2])
			}
		}
	case len(parts) == 4 && parts[1] == "modules":
		k.kind = 'm'
		if k.ns, err = registry.ParseNamespace(parts[0]); err == nil {
			if k.name, err = registry.ParseModuleName(parts[2]); err == nil {
				k.system, err = registry.ParseModuleSystem(parts[3])
			}
		}
	default:
		return repoKey{}, unknown()
	}
	if err != nil || k.String() != name {
		return repoKey{}, unknown()
	}
	return k, nil
}

// asBearer returns r with a Basic authorization (any user name, a Trove
// token as the password) rewritten as the Bearer token the guard reads.
func asBearer(r *http.Request) (*http.Request, error) {
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return r, nil
	}
	if len(cred) > 4096 {
		return nil, errf(http.StatusUnauthorized, "UNAUTHORIZED", "malformed Basic credentials")
	}
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "UNAUTHORIZED", "malformed Basic credentials")
	}
	_, pw, ok := strings.Cut(string(raw), ":")
	if !ok || pw == "" {
		return nil, errf(http.StatusUnauthorized, "UNAUTHORIZED", "Basic credentials need a Trove token as the password")
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+pw)
	return r2, nil
}

// authenticate checks the credentials of r, if it has any.
func (s *Service) authenticate(r *http.Request) error {
	if s.opt.Guard == nil || r.Header.Get("Authorization") == "" {
		return nil
	}
	if tok := ociToken(r); tok != "" {
		return s.checkToken(tok, "")
	}
	r, err := asBearer(r)
	if err != nil {
		return err
	}
	_, err = s.opt.Guard.Authenticator().AuthenticateCached(r)
	return err
}

// authorize asks the guard whether r, which arrived at now (reqtime.Of),
// may read the repository. A refusal
// to a Trove token is NAME_UNKNOWN, as a repository that does not exist;
// an OCI token must grant the repository (checkToken).
func (s *Service) authorize(r *http.Request, key repoKey, now time.Time) (private bool, err error) {
	if s.opt.Guard == nil {
		return false, nil
	}
	if key.kind == 'x' && s.opt.Mirror == nil {
		return false, errf(http.StatusNotFound, "NAME_UNKNOWN", "repository %s is not known to this registry: it has no mirror", key)
	}
	if tok := ociToken(r); tok != "" {
		if err := s.checkToken(tok, key.String()); err != nil {
			return false, err
		}
		if key.kind == 'x' {
			return !s.opt.Guard.MirrorPublic(), nil
		}
		// Granted: whether the answer is private is the namespace's
		// visibility to anonymous requests.
		anon := r.Clone(r.Context())
		anon.Header.Del("Authorization")
		_, err := s.opt.Guard.ProtocolReadAt(anon, key.ns, now)
		if registry.IsKind(err, registry.Unauthenticated) {
			return true, nil
		}
		return false, err
	}
	r, err = asBearer(r)
	if err != nil {
		return false, err
	}
	if key.kind == 'x' {
		return !s.opt.Guard.MirrorPublic(), s.opt.Guard.MirrorRead(r)
	}
	rd, err := s.opt.Guard.ProtocolReadAt(r, key.ns, now)
	return rd.Private, err
}

// privateNoCache is the Cache-Control of every answer of a private
// namespace's repository.
var privateNoCache = []string{"private, no-cache"}

// setCacheControl sets v unless the answer is a private one.
func setCacheControl(h http.Header, v string) {
	if h.Get("Cache-Control") == privateNoCache[0] {
		return
	}
	h.Set("Cache-Control", v)
}

// load returns the whole repository, generated or cached (the docRepo
// entry), for a request that arrived at now (reqtime.Of).
func (s *Service) load(ctx context.Context, key repoKey, now time.Time) (*repo, error) {
	e, err := s.getAt(ctx, key, docKey{kind: docRepo}, now)
	if err != nil {
		return nil, err
	}
	return e.Value.rp, nil
}

// generate generates the whole repository (every version's documents).
func (s *Service) generate(ctx context.Context, key repoKey) (*repo, error) {
	notFound := registry.Errorf(registry.NotFound, "repository %s is not known to this registry", key)
	if key.kind == 'x' {
		return s.mirrorRepo(ctx, key)
	}
	if key.kind == 'p' {
		vs, err := s.opt.Index.ListProviderVersions(ctx, key.ns, key.name)
		if registry.IsKind(err, registry.NotFound) {
			return nil, notFound
		}
		if err != nil {
			return nil, err
		}
		rp, err := providerRepo(vs, func(d string) (int64, error) { return s.opt.Blobs.Stat(ctx, d) }, s.provenance(ctx))
		if err == nil && len(rp.tags) == 0 {
			return nil, notFound
		}
		return rp, err
	}
	vs, err := s.opt.Index.ListModuleVersions(ctx, key.ns, key.name, key.system)
	if registry.IsKind(err, registry.NotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	mvs := make([]moduleVersion, 0, len(vs))
	for _, v := range vs {
		z, err := s.zips.zip(ctx, v)
		if err != nil {
			return nil, err
		}
		envelope, err := s.moduleProvenance(ctx, v)
		if err != nil {
			return nil, err
		}
		mvs = append(mvs, moduleVersion{version: v.Version, zip: z.digest, size: z.size, provenance: envelope})
	}
	rp, err := moduleRepo(mvs)
	if err == nil && len(rp.tags) == 0 {
		return nil, notFound
	}
	return rp, err
}

// serveTags answers a page of the sorted tags.
func (s *Service) serveTags(w http.ResponseWriter, r *http.Request, key repoKey, all []string) {
	q := r.URL.Query()
	if len(q["n"]) > 1 || len(q["last"]) > 1 {
		s.writeError(w, r, errf(http.StatusBadRequest, "PAGINATION_NUMBER_INVALID", "give n and last once each"), key.String())
		return
	}
	n := len(all)
	if v := q.Get("n"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			s.writeError(w, r, errf(http.StatusBadRequest, "PAGINATION_NUMBER_INVALID", "n must be a number of tags"), key.String())
			return
		}
		n = min(i, MaxTags)
	}
	n = min(n, MaxTags)
	tags := all
	if last := q.Get("last"); last != "" {
		i := 0
		for i < len(tags) && tags[i] <= last {
			i++
		}
		tags = tags[i:]
	}
	more := len(tags) > n
	tags = tags[:min(n, len(tags))]
	if more && n > 0 {
		w.Header().Set("Link", nextTagsLink(key, n, tags[len(tags)-1]))
	}
	body, _ := tagsPage(key, tags)
	w.Header().Set("Content-Type", "application/json")
	setCacheControl(w.Header(), "no-cache")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// tagsPage encodes a tags/list answer of tags (never null: an empty page
// is an empty list).
func tagsPage(key repoKey, tags []string) ([]byte, error) {
	if tags == nil {
		tags = []string{}
	}
	return json.Marshal(struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{key.String(), tags})
}

// nextTagsLink is the Link header value of a tags/list page of n tags
// that ends with last.
func nextTagsLink(key repoKey, n int, last string) string {
	return `</v2/` + key.String() + `/tags/list?n=` + strconv.Itoa(n) + `&last=` + url.QueryEscape(last) + `>; rel="next"`
}

func (s *Service) serveManifest(w http.ResponseWriter, r *http.Request, key repoKey, rp *repo, ref string) {
	digest := ref
	if strings.Contains(ref, ":") {
		if !digestRE.MatchString(ref) {
			s.writeError(w, r, errf(http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: want sha256: and 64 lower-case hex digits"), "")
			return
		}
	} else {
		if !tagRE.MatchString(ref) {
			s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "invalid tag %q", registry.Elide(ref)), "")
			return
		}
		digest = rp.byTag[ref]
	}
	d, ok := rp.docs[digest]
	if !ok && key.kind == 'x' {
		var err error
		if rp, err = s.mirrorManifest(r.Context(), key, rp, ref, reqtime.Of(w)); err != nil {
			s.writeError(w, r, err, key.String())
			return
		}
		if digest == ref {
			d, ok = rp.docs[digest]
		} else {
			d, ok = rp.docs[rp.byTag[ref]]
		}
	}
	if !ok {
		s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest %s not found", registry.Elide(ref)), "")
		return
	}
	if !accepts(r, d.desc.MediaType) {
		s.writeError(w, r, errf(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest %s is a %s, which the request's Accept header excludes", registry.Elide(ref), d.desc.MediaType), "")
		return
	}
	h := w.Header()
	h.Set("Content-Type", d.desc.MediaType)
	h[digestHeader.Key(r)] = []string{d.desc.Digest}
	h.Set("Etag", `"`+d.desc.Digest+`"`)
	h.Set("Content-Length", strconv.Itoa(len(d.body)))
	setCacheControl(h, "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(d.body)
	}
}

// accepts reports whether r's Accept headers admit mediaType: no Accept
// header, */* (or an empty item), or the type among them. The weight q=0
// says "not acceptable" (RFC 9110, 12.4.2), and the type named itself
// overrides */*: "<type>;q=0, */*" refuses it.
func accepts(r *http.Request, mediaType string) bool {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return true
	}
	// Whether the type itself, and */*, were named, and with a weight.
	var named, namedOK, anyNamed, anyOK bool
	for _, v := range vals {
		// Each comma-separated item in turn, as strings.Split would give
		// them, without allocating the slice of them.
		for more := true; more; {
			var item string
			item, v, more = strings.Cut(v, ",")
			t, params, _ := strings.Cut(item, ";")
			ok := !zeroWeight(params)
			switch t = strings.TrimSpace(t); t {
			case mediaType:
				named, namedOK = true, namedOK || ok
			case "", "*/*":
				anyNamed, anyOK = true, anyOK || ok
			}
		}
	}
	if named {
		return namedOK
	}
	return anyNamed && anyOK
}

// zeroWeight reports whether the parameters of an Accept item (after its
// first ";") give it the weight 0: q=0, q=0.0, up to q=0.000.
func zeroWeight(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		whole, frac, _ := strings.Cut(value, ".")
		return whole == "0" && len(frac) <= 3 && strings.Trim(frac, "0") == ""
	}
	return false
}

// serveBlob answers a blob of rp, or of the repository's cached
// documents if rp is nil.
func (s *Service) serveBlob(w http.ResponseWriter, r *http.Request, key repoKey, rp *repo, ref string) {
	if !digestRE.MatchString(ref) {
		s.writeError(w, r, errf(http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: want sha256: and 64 lower-case hex digits"), "")
		return
	}
	var b blobRef
	var ok bool
	if rp != nil {
		b, ok = rp.blobs[ref]
	} else {
		var err error
		if b, ok, err = s.findBlob(r.Context(), key, ref, reqtime.Of(w)); err != nil {
			s.writeError(w, r, err, key.String())
			return
		}
	}
	if !ok {
		s.writeError(w, r, errf(http.StatusNotFound, "BLOB_UNKNOWN", "blob %s is not in repository %s", ref, key), "")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h[digestHeader.Key(r)] = []string{ref}
	h.Set("Etag", `"`+ref+`"`)
	setCacheControl(h, "max-age=31536000, immutable")
	httpjson.ServeRange(r)
	if b.mem != nil {
		http.ServeContent(&httpjson.RangeRefusal{ResponseWriter: w, Body: rangeRefusal}, r, "", time.Time{}, strings.NewReader(string(b.mem)))
		return
	}
	if b.origin != "" {
		// A version denied or held since the repository was generated
		// is not served, as on the file route.
		if err := s.opt.Mirror.ServesPackage(r.Context(), b.origin); err != nil {
			s.writeError(w, r, errf(http.StatusNotFound, "BLOB_UNKNOWN", "%s", registry.Message(err)), "")
			return
		}
	}
	hexd := strings.TrimPrefix(ref, "sha256:")
	blob, err := s.opt.Blobs.Open(r.Context(), hexd)
	if registry.IsKind(err, registry.NotFound) && b.origin != "" && r.Method == http.MethodGet {
		s.streamMirrored(w, r, b.origin, ref)
		return
	}
	if registry.IsKind(err, registry.NotFound) && key.kind == 'm' {
		// A module zip the collector removed: pack it again.
		if err = s.zips.restore(r.Context(), s.opt.Index, key, ref); err == nil {
			blob, err = s.opt.Blobs.Open(r.Context(), hexd)
		}
	}
	if err != nil {
		s.blobError(w, r, err, ref)
		return
	}
	defer blob.Close()
	http.ServeContent(&httpjson.RangeRefusal{ResponseWriter: w, Body: rangeRefusal}, r, "", time.Time{}, blob.Content)
}

// rangeRefusal is the OCI error document of a 416 (httpjson.RangeRefusal):
// RANGE_INVALID, the distribution registry's code for a range it cannot
// serve.
var rangeRefusal, _ = json.Marshal(map[string][]ociErrorItem{"errors": {{Code: "RANGE_INVALID",
	Message: "the requested range is malformed or lies outside the blob (see Content-Range for its size): request a range of bytes within it, or the whole blob"}}})

// blobError answers a blob request whose content could not be opened
// with err: without the headers set for the blob's content (an error is
// not cached as the blob), NotFound as BLOB_UNKNOWN.
func (s *Service) blobError(w http.ResponseWriter, r *http.Request, err error, digest string) {
	h := w.Header()
	h.Del("Cache-Control")
	h.Del("Etag")
	delete(h, digestHeader.Key(r))
	if registry.IsKind(err, registry.NotFound) {
		err = errf(http.StatusNotFound, "BLOB_UNKNOWN", "blob %s is not stored", digest)
	}
	s.writeError(w, r, err, "")
}

// serveReferrers answers the referrers of a digest in rp, or in the
// repository's cached documents if rp is nil.
func (s *Service) serveReferrers(w http.ResponseWriter, r *http.Request, key repoKey, rp *repo, ref string) {
	if !digestRE.MatchString(ref) {
		s.writeError(w, r, errf(http.StatusBadRequest, "DIGEST_INVALID", "invalid digest: want sha256: and 64 lower-case hex digits"), "")
		return
	}
	var refs []Descriptor
	if rp != nil {
		refs = rp.referrers[ref]
	} else {
		var err error
		if refs, err = s.findReferrers(r.Context(), key, ref, reqtime.Of(w)); err != nil {
			s.writeError(w, r, err, key.String())
			return
		}
	}
	at := r.URL.Query().Get("artifactType")
	out := ImageIndex{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{}}
	for _, d := range refs {
		if at == "" || d.ArtifactType == at {
			out.Manifests = append(out.Manifests, d)
		}
	}
	body, _ := json.Marshal(out)
	if at != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	w.Header().Set("Content-Type", MediaTypeIndex)
	setCacheControl(w.Header(), "no-cache")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
