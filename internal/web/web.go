// Package web serves Trove's web UI: server-rendered pages (html/template,
// assets embedded with go:embed, no script needed) to browse and search
// namespaces, providers, modules and mirrored providers, read module
// READMEs, inputs and outputs and provider documentation, copy usage
// snippets, sign in with the accounts of `terraform login`, and manage
// personal tokens and, for namespace admins, members and tokens.
//
// # Who sees what
//
// Every page passes the same decision as the protocol routes
// (auth.Access.CanRead): a private namespace, and everything in it, is
// answered exactly like a name that does not exist to a visitor who may not
// read it, in pages and in search alike.
//
// # Sessions
//
// Signing in creates a personal token of the user (registry.Token with
// User set, described as a web session) whose secret is the value of the
// __Host-trove-session cookie (HttpOnly, Secure, SameSite=Lax, Path=/).
// A session is therefore listed with the user's tokens, expires after the
// session lifetime, and is revoked server-side by signing out or by
// revoking it like any token. The cookie is read by these pages only:
// the management API and the protocols take bearer tokens, so a cookie can
// never make an API call on its own. Every form that changes something
// carries a CSRF token (an HMAC of the session's token ID, or of a random
// pre-session cookie for the sign-in form) and must come from this
// origin. Changes are made by the same operations the management API
// calls (internal/operations), as the session: their rights checks,
// validation, audit entries and events apply unchanged, with no HTTP
// round trip.
//
// # Caching
//
// Pages are the same for every visitor allowed to see them but for the
// layout's header (the visitor's name, the search box): each is rendered
// once and kept in memory (pageCache, pagecache.go: an instance of Trove's
// one response cache, respcache) under a key that holds
// everything it depends on, what the visitor may read included for the
// home, namespace and search pages, until a change to the index drops it
// (Invalidate). An anonymous visitor gets the kept bytes as they are, with
// their ETag, or its gzip variant (made once per page) when they accept
// gzip; others get the part inside their own header, uncompressed. After
// 30 seconds a page is rendered again in the background while the old one
// is served. Search reads an in-memory catalog of every namespace, provider
// and module (catalog.go), rebuilt after changes.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/store"
)

// Index is the part of the index the web UI reads: what its pages show,
// the tokens of sessions, and the secret that keys its CSRF tokens. A
// store.Index is one.
type Index interface {
	store.Namespaces
	store.SigningKeys
	store.Providers
	store.Modules
	store.Mirror
	store.MirrorInventory
	store.Tokens
	store.PersonalTokens
	store.Memberships
	store.Secrets
	store.Provenance
}

// DefaultSessionTTL is how long a web session lasts from sign-in.
const DefaultSessionTTL = 12 * time.Hour

// csrfKeyName is the index secret that keys the CSRF tokens of the web
// UI, shared by every replica so that a form served by one can be posted
// to another.
const csrfKeyName = "web-csrf-key"

// Options configures the web UI.
type Options struct {
	Index  Index
	Access *auth.Access
	// Login checks the passwords of the sign-in form (with the rate
	// limits of the login.v1 page).
	Login *login.Service
	// Operations makes the changes the pages' forms ask for, as the
	// session (the same operations the management API calls).
	Operations *operations.Operations
	// Blobs holds the provider documentation archives.
	Blobs store.Blobs
	// Downloads answers the download counts pages show (none if nil).
	Downloads *downloads.Counter
	// PublicURL is where browsers reach Trove.
	PublicURL *url.URL
	// Host is the host name Terraform and OpenTofu use for this registry
	// in source addresses (PublicURL's host, or a name mapped to it).
	Host string
	// SessionTTL is the lifetime of a web session (DefaultSessionTTL if 0).
	SessionTTL time.Duration
	// TokenTTL is the longest lifetime of a token created in the UI, as a
	// password login grants (30 days if 0).
	TokenTTL time.Duration
	Logger   *slog.Logger
	Now      func() time.Time
	// Holds, if set, says which versions of a mirrored provider the
	// mirror holds back and why ((*mirror.Mirror).Holds), for its page.
	Holds func(ctx context.Context, host, namespace, typ string) (mirror.ProviderHolds, error)
}

// Service serves the web UI. Create it with New; mount it with Register.
type Service struct {
	opt      Options
	log      *slog.Logger
	csrfKey  []byte
	pages    *pageCache
	searches *pageCache // search pages, apart from the others
	lists    *listCache
	catalog  *catalogCache
	docs     *docsCache
	sections *sectionsCache              // rendered module READMEs by metadata digest
	foot     []byte                      // the end of every page (layout-foot)
	settled  atomic.Pointer[func() bool] // UseSettled's, else nil
}

// New returns the web UI. It reads (or creates) the CSRF key in the
// index's secrets.
func New(ctx context.Context, opt Options) (*Service, error) {
	if opt.Index == nil || opt.Access == nil || opt.Login == nil || opt.Operations == nil || opt.PublicURL == nil {
		return nil, registry.Errorf(registry.Invalid, "web: index, access, login, operations and public URL are required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	cacheNow := opt.Now // nil unless set: the page caches take each request's time
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SessionTTL <= 0 {
		opt.SessionTTL = DefaultSessionTTL
	}
	if opt.Host == "" {
		opt.Host = opt.PublicURL.Host
	}
	key, err := opt.Index.Secret(ctx, csrfKeyName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, registry.Wrap(registry.KindOf(err), err, "loading the web UI's CSRF key")
	}
	foot, err := layoutFoot(opt.Host)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "rendering the web UI's layout")
	}
	s := &Service{opt: opt, log: opt.Logger, csrfKey: key, foot: foot}
	budget := respcache.NewBudget(webCacheBytes)
	s.pages = newPageCache("web pages", cacheNow, pageCacheBytes, budget)
	s.searches = newPageCache("web searches", cacheNow, searchCacheBytes, budget)
	s.lists = newListCache(opt.Now, s.isSettled)
	s.catalog = newCatalogCache(opt.Index, opt.Now)
	s.docs = newDocsCache(opt.Blobs, opt.Now, budget)
	s.sections = newSectionsCache(opt.Now, budget)
	return s, nil
}

// UseSettled tells the UI when every change of the index reaches
// Invalidate as it commits (respcache.Options.Settled: the server passes
// the one its protocol caches use). The version lists of providers and
// modules, which change only through the index, are then read again
// after respcache.DefaultSettledAge rather than on the pages' maximum
// age: a page rendered again for its download counts no longer lists
// every version (and platform) of its provider or module. Call it
// before serving.
func (s *Service) UseSettled(settled func() bool) { s.settled.Store(&settled) }

// isSettled is the version lists' respcache.Options.Settled.
func (s *Service) isSettled() bool {
	f := s.settled.Load()
	return f != nil && (*f)()
}

// Paths of the UI's routes that other code links to.
const (
	HomePath    = "/"
	SearchPath  = "/search"
	SignInPath  = "/sign-in"
	SignOutPath = "/sign-out"
	TokensPath  = "/settings/tokens"
	StaticPath  = "/ui/static/"
)

// Register mounts the UI's routes on mux. Unknown paths are not handled
// here: NotFound renders the UI's 404 page for browsers.
func (s *Service) Register(mux route.Registrar) {
	mux.Handle("GET "+StaticPath, staticHandler())
	mux.Handle("GET /{$}", s.page(s.home))
	mux.Handle("GET "+SearchPath, s.page(s.search))
	mux.Handle(RouteNamespace, s.page(s.namespacePage))
	mux.Handle(RouteProvider, s.page(s.providerPage))
	mux.Handle(RouteProviderVersion, s.page(s.providerPage))
	mux.Handle("GET /providers/{namespace}/{type}/{version}/docs/{category}/{slug}", s.page(s.providerDocPage))
	mux.Handle(RouteModule, s.page(s.modulePage))
	mux.Handle(RouteModuleVersion, s.page(s.modulePage))
	mux.Handle("GET /mirror/{host}/{namespace}/{type}", s.page(s.mirroredPage))
	mux.Handle("GET "+SignInPath, s.page(s.signInForm))
	mux.Handle("POST "+SignInPath, s.page(s.signIn))
	mux.Handle("POST "+SignOutPath, s.page(s.signOut))
	mux.Handle("GET "+login.VerificationPath, s.page(s.devicePage))
	mux.Handle("POST "+login.VerificationPath, s.page(s.decideDevice))
	mux.Handle("GET "+TokensPath, s.page(s.tokensPage))
	mux.Handle("POST "+TokensPath, s.page(s.createToken))
	mux.Handle("POST "+TokensPath+"/{id}/revoke", s.page(s.revokeToken))
	mux.Handle("GET /namespaces/{namespace}/settings", s.page(s.namespaceSettings))
	mux.Handle("POST /namespaces/{namespace}/settings/members", s.page(s.setMember))
	mux.Handle("POST /namespaces/{namespace}/settings/members/{user}/remove", s.page(s.removeMember))
	mux.Handle("POST /namespaces/{namespace}/settings/tokens/{id}/revoke", s.page(s.revokeNamespaceToken))
	mux.Handle("GET /namespaces/{namespace}/git-sources", s.page(s.gitSourcesPage))
	mux.Handle("POST /namespaces/{namespace}/git-sources", s.page(s.addGitSource))
	mux.Handle("POST /namespaces/{namespace}/git-sources/{name}/{system}/remove", s.page(s.removeGitSource))
	mux.Handle("POST /namespaces/{namespace}/git-sources/{name}/{system}/sync", s.page(s.syncGitSource))
}

// The patterns of the most read pages, which Register mounts and
// DirectRoutes offers to a pre-router.
const (
	RouteNamespace       = "GET /namespaces/{namespace}"
	RouteProvider        = "GET /providers/{namespace}/{type}"
	RouteProviderVersion = "GET /providers/{namespace}/{type}/{version}"
	RouteModule          = "GET /modules/{namespace}/{name}/{system}"
	RouteModuleVersion   = "GET /modules/{namespace}/{name}/{system}/{version}"
)

// DirectRoutes returns the routes of the most read pages (a namespace's,
// a provider's, a module's) for a pre-router that serves them without the
// mux (route.Direct): the handlers Register mounts at the same patterns,
// given the path's values as arguments rather than as the request's
// PathValues, which the mux allocates for every request.
func (s *Service) DirectRoutes() []route.Direct {
	return []route.Direct{
		{Pattern: RouteNamespace, Serve: func(w http.ResponseWriter, r *http.Request, p route.Values) {
			s.serve(w, r, func(w http.ResponseWriter, r *http.Request, v *visit) error {
				return s.namespacePageOf(w, r, v, p[0])
			})
		}},
		{Pattern: RouteProvider, Serve: func(w http.ResponseWriter, r *http.Request, p route.Values) {
			s.serve(w, r, func(w http.ResponseWriter, r *http.Request, v *visit) error {
				return s.providerPageOf(w, r, v, p[0], p[1], "")
			})
		}},
		{Pattern: RouteProviderVersion, Serve: func(w http.ResponseWriter, r *http.Request, p route.Values) {
			s.serve(w, r, func(w http.ResponseWriter, r *http.Request, v *visit) error {
				return s.providerPageOf(w, r, v, p[0], p[1], p[2])
			})
		}},
		{Pattern: RouteModule, Serve: func(w http.ResponseWriter, r *http.Request, p route.Values) {
			s.serve(w, r, func(w http.ResponseWriter, r *http.Request, v *visit) error {
				return s.modulePageOf(w, r, v, p[0], p[1], p[2], "")
			})
		}},
		{Pattern: RouteModuleVersion, Serve: func(w http.ResponseWriter, r *http.Request, p route.Values) {
			s.serve(w, r, func(w http.ResponseWriter, r *http.Request, v *visit) error {
				return s.modulePageOf(w, r, v, p[0], p[1], p[2], p[3])
			})
		}},
	}
}

// NotFound renders the UI's "not found" page; the server calls it for GET
// requests of browsers that no route matched.
func (s *Service) NotFound(w http.ResponseWriter, r *http.Request) {
	s.page(func(w http.ResponseWriter, r *http.Request, v *visit) error {
		return registry.Errorf(registry.NotFound, "There is no page at this address.")
	})(w, r)
}

// Invalidate drops every cached page and parsed documentation archive
// and marks the search catalog stale;
// call it after any change to what the pages show (a publish, a delete, a
// namespace's visibility).
//
// What pages are built from (the version lists, the catalog) is dropped
// before the pages, so that a page rendered after the pages' new
// generation began is built from data read after the change.
func (s *Service) Invalidate() {
	s.lists.InvalidateAll()
	s.catalog.invalidate()
	s.docs.invalidate()
	s.pages.InvalidateAll()
	s.searches.InvalidateAll()
}

// csrfFor returns the CSRF token of forms bound to value (a session's
// token ID, or the pre-session cookie of the sign-in form).
func (s *Service) csrfFor(purpose, value string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte("trove-web-csrf-v1\n" + purpose + "\n" + value))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
