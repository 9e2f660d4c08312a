// Package api serves Trove's management API under /api/v1: namespaces,
// signing keys, tokens, providers, modules, publishing, the provider
// mirror's upstream registries, and keyless publishing's trust policies
// and ID token exchange (the one route that takes no token; package
// keyless checks the ID token). Routes and documents are defined in
// apispec. For namespaces, signing keys, tokens, users, memberships, the
// lifecycle of versions, publishes (providers, modules, provider
// documentation), the bundle import and the keyless token exchange a
// handler is a thin adapter over
// internal/operations, which owns their rules (rights, validation, the transaction with its audit entry and
// event); the other routes still check who may call them here.
package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/keyless"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	routereg "trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// maxJSONBody bounds every JSON request body (a signing key is the largest).
const maxJSONBody = 256 << 10

// Index is the part of the index the management API uses: everything
// but server secrets, OAuth authorization codes (login.v1's) and the
// backend's life cycle. A store.Index is one.
type Index interface {
	store.Namespaces
	store.SigningKeys
	store.Tokens
	store.PersonalTokens
	store.Users
	store.Memberships
	store.AuditLog
	store.Providers
	store.Modules
	store.Lifecycle
	store.RetentionRules
	store.MirrorUpstreams
	store.MirrorHolds
	store.Bundles
	store.SSO
	store.TrustPolicies
	store.ReplayGuard
	store.Webhooks
	store.Provenance
	store.ProvenancePolicies
}

// Downloads reads download counts (store.Downloads's reads, which
// *downloads.Counter has too).
type Downloads interface {
	ProviderDownloads(ctx context.Context, namespace, typ string) ([]registry.DownloadCount, error)
	ModuleDownloads(ctx context.Context, namespace, name, system string) ([]registry.DownloadCount, error)
	ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error)
}

// Options configures the API handler.
type Options struct {
	Index     Index
	Publisher *publish.Publisher
	// Modules publishes and deletes module versions (module publishing
	// answers an error when nil).
	Modules *modules.Publisher
	Auth    *auth.Authenticator
	// Access decides reads of namespaces (public ones are readable by
	// every caller) and holds the caches the API invalidates on changes.
	// Pass the server's (the one guarding the protocol routes), so that
	// revocations and membership changes reach its caches at once; nil
	// means auth.NewAccess(Auth, Index).
	Access *auth.Access
	// Audit records security-relevant events; nil means a Recorder on
	// the index's audit log.
	Audit *audit.Recorder
	// Managed generates registry-managed signing keys; nil answers
	// requests for one with an error.
	Managed *signing.Managed
	Logger  *slog.Logger
	// NoLocalPasswords refuses to set or check passwords of local
	// accounts (--local-passwords=false): people sign in through identity
	// providers.
	NoLocalPasswords bool
	// OnMirrorChange, if set, is called after the mirror's upstreams
	// were changed, so that the running mirror reads them again at once.
	OnMirrorChange func()
	// PublicURL is the origin clients reach Trove at: its host is the one
	// of Trove's own providers in lock files.
	PublicURL *url.URL
	// Blobs holds the packages and SHA256SUMS the lock route hashes.
	Blobs store.Blobs
	// Mirror, if set, serves other registries' providers to the lock
	// route.
	Mirror Mirror
	// ModuleMirror, if set, fetches the mirrored module versions a bundle
	// export names that Trove does not hold yet (*mirror.Modules).
	ModuleMirror ModuleMirror
	// TempDir is where the lock route copies a package to hash it (the
	// system's temporary directory if empty).
	TempDir string
	// Downloads reads the download counts shown in the provider and
	// module version documents (a *downloads.Counter: the index's counts
	// plus this process's pending ones); nil shows none.
	Downloads Downloads
	// ExchangeLimiter limits the exchanges per source address; nil means
	// DefaultExchangeBurst and DefaultExchangeEvery.
	ExchangeLimiter *auth.AddressLimiter
	// CheckIssuer, if set, checks the issuer of an identity provider
	// being set against the provider's discovery document (sso.CheckIssuer):
	// an error refuses the write, a warning is returned with the stored
	// provider.
	CheckIssuer func(ctx context.Context, issuer string) (warning string, err error)
	// Events sends the changes made through the API to the webhooks
	// subscribed to them; nil sends none.
	Events *webhook.Emitter
	// WebhookURLs are the rules webhook target URLs must follow.
	WebhookURLs registry.WebhookURLRules
	// GitSources keeps the git sources of modules (apispec.RouteGitSource
	// and the push webhook route); nil answers them with an error.
	GitSources *gitsource.Service
	// GC runs the garbage collections of POST apispec.RouteGC; nil
	// answers them with an error.
	GC *gc.Collector
	// MaxUploadBytes bounds a whole publish request; <= 0 means 2 GiB.
	MaxUploadBytes int64
	// SignInTokenTTL is the longest life of a token a web session
	// creates, what a sign-in grants (--login-token-ttl); <= 0 means
	// operations.DefaultSignInTokenTTL. Unused when Operations is set.
	SignInTokenTTL time.Duration
	// Operations makes the writes whose rules moved below HTTP; nil
	// means operations on Index with these options' Access, Audit,
	// Events, Managed, Publisher, Modules, Blobs, NoLocalPasswords, SignInTokenTTL,
	// OnProviderChange, OnModuleChange, OnMirrorChange, GC and Now (and WebhookURLs,
	// PublicURL and CheckIssuer), and a keyless exchanger on Index.
	// Pass the one the web UI uses.
	Operations *operations.Operations
	Now        func() time.Time
}

type handler struct {
	Options
	Ops             *operations.Operations
	exchangeLimiter *auth.AddressLimiter
}

// New returns the management API handler, to be mounted at apispec.Prefix.
func New(opt Options) http.Handler {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxUploadBytes <= 0 {
		opt.MaxUploadBytes = 2 << 30
	}
	if opt.Access == nil {
		opt.Access = auth.NewAccess(opt.Auth, opt.Index)
	}
	if opt.Audit == nil {
		opt.Audit = audit.New(opt.Index, opt.Logger)
	}
	ops := opt.Operations
	if ops == nil {
		// The consumer reports read what Downloads reads, as `trove serve`
		// wires them: the index's records plus this process's pending ones.
		var consumers operations.Consumers
		if opt.Downloads != nil {
			consumers = opt.Downloads
		}
		ops = operations.New(operations.Options{Index: opt.Index, Access: opt.Access, Audit: opt.Audit, Events: opt.Events, Managed: opt.Managed,
			GitSources:       opt.GitSources,
			NoLocalPasswords: opt.NoLocalPasswords,
			SignInTokenTTL:   opt.SignInTokenTTL,
			WebhookURLs:      opt.WebhookURLs,
			PublicURL:        opt.PublicURL,
			CheckIssuer:      opt.CheckIssuer,
			OnMirrorChange:   opt.OnMirrorChange, GC: opt.GC,
			Publisher: opt.Publisher, Modules: opt.Modules, Blobs: opt.Blobs,
			Keyless:   keyless.New(keyless.Options{Index: opt.Index, Now: opt.Now}),
			Consumers: consumers,
			Logger:    opt.Logger, Now: opt.Now})
	}
	h := &handler{Options: opt, Ops: ops, exchangeLimiter: opt.ExchangeLimiter}
	if h.exchangeLimiter == nil {
		h.exchangeLimiter = auth.NewAddressLimiter(DefaultExchangeBurst, DefaultExchangeEvery)
	}
	mux := http.NewServeMux()
	route := func(pattern string, fn httpjson.HandlerFunc) {
		mux.Handle(pattern, httpjson.Handler(opt.Logger, h.authenticated(checkLimits(pattern, fn))))
	}
	// open mounts a route that takes no token (the exchange).
	open := func(pattern string, fn httpjson.HandlerFunc) {
		mux.Handle(pattern, httpjson.Handler(opt.Logger, checkLimits(pattern, fn)))
	}
	route("GET "+apispec.RouteNamespaces, h.listNamespaces)
	route("POST "+apispec.RouteNamespaces, h.createNamespace)
	route("GET "+apispec.RouteNamespace, h.getNamespace)
	route("PATCH "+apispec.RouteNamespace, h.updateNamespace)
	route("DELETE "+apispec.RouteNamespace, h.deleteNamespace)

	route("GET "+apispec.RouteKeys, h.listKeys)
	route("POST "+apispec.RouteKeys, h.addKey)
	route("GET "+apispec.RouteKey, h.getKey)
	route("DELETE "+apispec.RouteKey, h.deleteKey)

	route("GET "+apispec.RouteTokens, h.listTokens)
	route("POST "+apispec.RouteTokens, h.createToken)
	route("GET "+apispec.RouteToken, h.getToken)
	route("PATCH "+apispec.RouteToken, h.expireToken)
	route("DELETE "+apispec.RouteToken, h.revokeToken)
	h.registerAccess(route)

	route("GET "+apispec.RouteProviders, h.listProviders)
	route("GET "+apispec.RouteProvider, h.getProvider)
	route("GET "+apispec.RouteProviderVersion, h.getProviderVersion)
	route("GET "+apispec.RouteProviderProvenance, h.getProviderProvenance)
	route("POST "+apispec.RouteProviderVersion, h.publishProviderVersion)
	h.registerProviderDocs(mux, route)

	h.registerModules(route)
	h.registerLifecycle(route)
	h.registerDeletes(route)
	h.registerConsumers(route)
	h.registerProvenancePolicy(route)
	h.registerRetention(route)
	h.registerMirror(route)
	h.registerMirrorHolds(route)
	h.registerSSO(route)
	h.registerTrust(route, open)
	h.registerWebhooks(route)
	h.registerGitSources(route, open)

	route("GET "+apispec.RouteWhoAmI, h.whoAmI)
	route("POST "+apispec.RouteLock, h.lock)
	route("GET "+apispec.RouteBundle, h.exportBundle)
	route("POST "+apispec.RouteBundle, h.importBundle)
	mux.Handle(apispec.Prefix+"/", httpjson.Handler(opt.Logger, func(w http.ResponseWriter, r *http.Request) error {
		if allow := routereg.Allowed(mux, r, apispec.Prefix+"/"); len(allow) > 0 {
			httpjson.MethodNotAllowed(w, r, allow)
			return nil
		}
		return registry.Errorf(registry.NotFound, "no API route %s %s", r.Method, r.URL.Path)
	}))
	return mux
}

// authenticated resolves the caller before fn runs; every API route needs a token.
func (h *handler) authenticated(fn httpjson.HandlerFunc) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := h.Auth.Authenticate(r)
		if err != nil {
			return err
		}
		if p.Anonymous() {
			return registry.Errorf(registry.Unauthenticated, "this API needs a token: pass \"Authorization: Bearer <token>\" (TROVE_TOKEN for the CLI)")
		}
		return fn(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	}
}

func (h *handler) require(r *http.Request, scope registry.Scope, namespace string) error {
	return auth.FromContext(r.Context()).Require(scope, namespace, h.Now())
}

// namespaceParam validates the {namespace} path value and checks that the
// caller holds scope on it; every caller may read a public namespace. It
// answers NotFound rather than Forbidden to callers who may not read the
// namespace, so names do not leak.
func (h *handler) namespaceParam(r *http.Request, scope registry.Scope) (string, error) {
	return h.Ops.Namespace(r.Context(), actor(r), r.PathValue("namespace"), scope)
}

// actor is the caller of r as the operations take it.
func actor(r *http.Request) operations.Actor {
	return operations.Actor{Principal: auth.FromContext(r.Context()), Addr: r.RemoteAddr}
}

// providerVersionParams returns the namespace (checked as namespaceParam
// does), provider type and version of a provider version's route.
func (h *handler) providerVersionParams(r *http.Request, scope registry.Scope) (ns, typ, ver string, err error) {
	if ns, err = h.namespaceParam(r, scope); err != nil {
		return "", "", "", err
	}
	if typ, err = registry.ParseProviderType(r.PathValue("type")); err != nil {
		return "", "", "", err
	}
	ver = r.PathValue("version")
	if _, err := registry.ParseVersion(ver); err != nil {
		return "", "", "", err
	}
	return ns, typ, ver, nil
}

// Namespaces.

func (h *handler) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	all, err := h.Index.ListNamespaces(r.Context())
	if err != nil {
		return err
	}
	out := apispec.NamespaceList{Namespaces: []apispec.Namespace{}}
	p := auth.FromContext(r.Context())
	for _, ns := range all {
		if ns.Public() || p.Allows(registry.ScopeRead, ns.Name, h.Now()) {
			out.Namespaces = append(out.Namespaces, namespaceDoc(ns))
		}
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createNamespace(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (operations.CreateNamespace checks
	// them again).
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.CreateNamespaceRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	ns, err := h.Ops.CreateNamespace(r.Context(), actor(r), req.Name, req.Description, req.Visibility)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, namespaceDoc(ns))
}

func (h *handler) getNamespace(w http.ResponseWriter, r *http.Request) error {
	name, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	ns, err := h.Index.GetNamespace(r.Context(), name)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, namespaceDoc(ns))
}

func (h *handler) updateNamespace(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.namespaceParam(r, registry.ScopeAdmin); err != nil {
		return err
	}
	var req apispec.UpdateNamespaceRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	ns, err := h.Ops.UpdateNamespace(r.Context(), actor(r), r.PathValue("namespace"), req.Description, req.Visibility)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, namespaceDoc(ns))
}

func (h *handler) deleteNamespace(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteNamespace(r.Context(), actor(r), r.PathValue("namespace")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Signing keys.

func (h *handler) listKeys(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	keys, err := h.Index.ListSigningKeys(r.Context(), ns)
	if err != nil {
		return err
	}
	out := apispec.SigningKeyList{Keys: []apispec.SigningKey{}}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyDoc(k))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) addKey(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	var req apispec.AddSigningKeyRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.Managed {
		return h.generateKey(w, r, ns, req) // keys_managed.go
	}
	key, err := h.Ops.AddSigningKey(r.Context(), actor(r), ns, req.ASCIIArmor)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, keyDoc(key))
}

func (h *handler) getKey(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	keys, err := h.Index.ListSigningKeys(r.Context(), ns)
	if err != nil {
		return err
	}
	id := strings.ToUpper(r.PathValue("key_id"))
	for _, k := range keys {
		if k.KeyID == id {
			return httpjson.Write(w, http.StatusOK, keyDoc(k))
		}
	}
	return registry.Errorf(registry.NotFound, "namespace %s has no signing key %s", ns, id)
}

func (h *handler) deleteKey(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteSigningKey(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("key_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Tokens: the rules are operations.CreateToken, Token, RevokeToken and
// ExpireToken.

func (h *handler) listTokens(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	tokens, err := h.Ops.Tokens(r.Context(), actor(r), q.Get("namespace"), q.Get("user"))
	if err != nil {
		return err
	}
	out := apispec.TokenList{Tokens: []apispec.Token{}}
	for _, t := range tokens {
		out.Tokens = append(out.Tokens, h.tokenDoc(r, t))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createToken(w http.ResponseWriter, r *http.Request) error {
	var req apispec.CreateTokenRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	tr := operations.TokenRequest{User: req.User, Namespaces: req.Namespaces, Scopes: req.Scopes, Description: req.Description}
	if req.Namespace != "" {
		if len(req.Namespaces) > 0 {
			return registry.Errorf(registry.Invalid, "both namespace and namespaces are given: use namespaces alone (namespace is its deprecated form for one namespace)")
		}
		tr.Namespaces = []string{req.Namespace}
	}
	if req.ExpiresAt != nil {
		tr.ExpiresAt = *req.ExpiresAt
	}
	t, secret, err := h.Ops.CreateToken(r.Context(), actor(r), tr)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, apispec.CreatedToken{Token: h.tokenDoc(r, t), Secret: secret})
}

func (h *handler) getToken(w http.ResponseWriter, r *http.Request) error {
	t, err := h.Ops.Token(r.Context(), actor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.tokenDoc(r, t))
}

func (h *handler) revokeToken(w http.ResponseWriter, r *http.Request) error {
	if _, err := h.Ops.RevokeToken(r.Context(), actor(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// expireToken moves a token's expiry earlier.
func (h *handler) expireToken(w http.ResponseWriter, r *http.Request) error {
	// Rights first, as for every route: a caller who may not manage the
	// token learns nothing from the answer to its body.
	if _, err := h.Ops.Token(r.Context(), actor(r), r.PathValue("id")); err != nil {
		return err
	}
	var req apispec.UpdateTokenRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	var at time.Time
	if req.ExpiresAt != nil {
		at = *req.ExpiresAt
	}
	t, err := h.Ops.ExpireToken(r.Context(), actor(r), r.PathValue("id"), at)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.tokenDoc(r, t))
}

func (h *handler) whoAmI(w http.ResponseWriter, r *http.Request) error {
	return httpjson.Write(w, http.StatusOK, h.tokenDoc(r, auth.FromContext(r.Context()).Token))
}

// Providers.

func (h *handler) listProviders(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	providers, err := h.Index.ListProviders(r.Context(), ns)
	if err != nil {
		return err
	}
	out := apispec.ProviderList{Providers: []apispec.Provider{}}
	for _, p := range providers {
		out.Providers = append(out.Providers, apispec.Provider{
			Namespace: p.Namespace, Type: p.Type, VersionCount: p.VersionCount,
			LatestVersion: p.LatestVersion, UpdatedAt: p.UpdatedAt,
		})
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getProvider(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	typ, err := registry.ParseProviderType(r.PathValue("type"))
	if err != nil {
		return err
	}
	versions, err := h.Index.ListProviderVersions(r.Context(), ns, typ)
	if err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "provider %s/%s has no versions", ns, typ)
		}
		return err
	}
	registry.SortNewestFirst(versions, func(v registry.ProviderVersion) string { return v.Version })
	counts, err := h.providerDownloads(r.Context(), ns, typ)
	if err != nil {
		return err
	}
	out := apispec.ProviderDetail{Namespace: ns, Type: typ, Versions: make([]apispec.ProviderVersion, 0, len(versions))}
	for _, v := range versions {
		out.Versions = append(out.Versions, withDownloads(VersionDoc(v), counts))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// getProviderProvenance answers the DSSE envelope of a version's
// provenance, as it was stored when the version was published.
func (h *handler) getProviderProvenance(w http.ResponseWriter, r *http.Request) error {
	ns, typ, ver, err := h.providerVersionParams(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	envelope, err := h.Index.ProviderProvenance(r.Context(), ns, typ, ver)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, err = w.Write(envelope)
	return err
}

func (h *handler) getProviderVersion(w http.ResponseWriter, r *http.Request) error {
	ns, typ, ver, err := h.providerVersionParams(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	v, err := h.Index.GetProviderVersion(r.Context(), ns, typ, ver)
	if err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", ns, typ, ver)
		}
		return err
	}
	counts, err := h.providerDownloads(r.Context(), ns, typ)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, withDownloads(VersionDoc(v), counts))
}

// providerDownloads returns the download counts of a provider's versions
// and platforms, none without Options.Downloads.
func (h *handler) providerDownloads(ctx context.Context, ns, typ string) (map[registry.DownloadKey]int64, error) {
	if h.Downloads == nil {
		return nil, nil
	}
	cs, err := h.Downloads.ProviderDownloads(ctx, ns, typ)
	return countsByKey(cs), err
}

// moduleDownloads returns the download counts of a module's versions,
// none without Options.Downloads.
func (h *handler) moduleDownloads(ctx context.Context, ns, name, system string) (map[registry.DownloadKey]int64, error) {
	if h.Downloads == nil {
		return nil, nil
	}
	cs, err := h.Downloads.ModuleDownloads(ctx, ns, name, system)
	return countsByKey(cs), err
}

func countsByKey(cs []registry.DownloadCount) map[registry.DownloadKey]int64 {
	m := make(map[registry.DownloadKey]int64, len(cs))
	for _, c := range cs {
		m[c.DownloadKey] += c.Count
	}
	return m
}

// withDownloads sets the download counts of a provider version document:
// per platform and their sum.
func withDownloads(v apispec.ProviderVersion, counts map[registry.DownloadKey]int64) apispec.ProviderVersion {
	v.Downloads = 0
	for i, p := range v.Platforms {
		v.Platforms[i].Downloads = counts[registry.ProviderDownload(v.Namespace, v.Type, v.Version, p.OS, p.Arch)]
		v.Downloads += v.Platforms[i].Downloads
	}
	return v
}

// publishProviderVersion streams a multipart release into the Publisher.
func (h *handler) publishProviderVersion(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return registry.Errorf(registry.Invalid, "a publish request must be multipart/form-data with one %q part per release file", apispec.PublishFileField)
	}
	body, err := httpjson.Body(w, r, h.MaxUploadBytes)
	if err != nil {
		return err
	}
	// Read what the client sends even when the publish is refused early,
	// so that it sees the answer instead of a reset connection.
	defer func() { _, _ = io.Copy(io.Discard, body) }()
	src := &multipartSource{r: multipart.NewReader(body, params["boundary"])}
	// operations.PublishProvider owns the rest: rights, provenance, the
	// transaction with its audit entry and event.
	res, err := h.Ops.PublishProvider(r.Context(), actor(r), ns, r.PathValue("type"), r.PathValue("version"), src)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return httpjson.Write(w, status, apispec.PublishResult{Created: res.Created, Version: VersionDoc(res.Version)})
}

// multipartSource adapts a multipart reader to publish.FileSource.
type multipartSource struct {
	r    *multipart.Reader
	part *multipart.Part
}

func (m *multipartSource) Next() (string, io.Reader, error) {
	if m.part != nil {
		m.part.Close()
	}
	part, err := m.r.NextPart()
	if err == io.EOF {
		return "", nil, io.EOF
	}
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return "", nil, err
		}
		return "", nil, registry.Wrap(registry.Invalid, err, "malformed multipart body")
	}
	m.part = part
	if part.FormName() != apispec.PublishFileField || part.FileName() == "" {
		return "", nil, registry.Errorf(registry.Invalid, "unexpected multipart part %q: every part must be a %q field with a file name", part.FormName(), apispec.PublishFileField)
	}
	// A part cut short (the body ends before its boundary) is the
	// client's failure, as for a module archive: 400, not 500.
	return part.FileName(), clientReader{part, registry.Elide(part.FileName())}, nil
}

// Documents.

func namespaceDoc(ns registry.Namespace) apispec.Namespace {
	vis := ns.Visibility
	if vis == "" {
		vis = registry.VisibilityPrivate
	}
	return apispec.Namespace{Name: ns.Name, Description: ns.Description, Visibility: string(vis), CreatedAt: ns.CreatedAt}
}

func keyDoc(k registry.SigningKey) apispec.SigningKey {
	return apispec.SigningKey{Namespace: k.Namespace, KeyID: k.KeyID, Fingerprint: k.Fingerprint,
		ASCIIArmor: k.ASCIIArmor, CreatedAt: k.CreatedAt, ExpiresAt: timePtr(k.ExpiresAt), Managed: k.Managed}
}

// tokenDoc renders t for the caller of r: of its namespaces, only those
// the caller may read are named, the others counted, so that managing a
// token in one namespace does not reveal the private names of the others.
func (h *handler) tokenDoc(r *http.Request, t registry.Token) apispec.Token {
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = string(s)
	}
	doc := apispec.Token{ID: t.ID, User: t.User, Scopes: scopes, Description: t.Description,
		CreatedAt: t.CreatedAt, ExpiresAt: timePtr(t.ExpiresAt), RevokedAt: timePtr(t.RevokedAt)}
	doc.Namespaces, doc.HiddenNamespaces = h.Ops.VisibleNamespaces(r.Context(), actor(r), t)
	if len(doc.Namespaces) == 1 && doc.HiddenNamespaces == 0 {
		doc.Namespace = doc.Namespaces[0]
	}
	return doc
}

// VersionDoc renders a provider version as the API shows it.
func VersionDoc(v registry.ProviderVersion) apispec.ProviderVersion {
	out := apispec.ProviderVersion{Namespace: v.Namespace, Type: v.Type, Version: v.Version,
		Protocols: v.Protocols, SHASumsDigest: v.SHASumsDigest, KeyID: v.SigningKey.KeyID,
		PublishedAt: v.PublishedAt, Platforms: make([]apispec.Platform, 0, len(v.Platforms)),
		DocsDigest: v.DocsDigest, DocsSize: v.DocsSize,
		Deprecation: deprecationDoc(v.Deprecation), Revocation: revocationDoc(v.Revocation)}
	for _, p := range v.Platforms {
		out.Platforms = append(out.Platforms, apispec.Platform{OS: p.OS, Arch: p.Arch, Filename: p.Filename, SHASum: p.SHA256, Size: p.Size})
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
