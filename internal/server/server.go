// Package server is the one place Trove's HTTP routes are mounted: service
// discovery, providers.v1, modules.v1, signed file downloads, the management API,
// health, readiness and metrics. It owns the middleware every request
// passes (panic recovery, metrics, access log, security headers, body
// read and write progress deadlines), serving over TLS or plain HTTP with
// graceful shutdown, and the self-signed certificate of a first start.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/files"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
)

// Routes mounted besides the protocol, file and API routes.
const (
	RouteHealth  = "GET /healthz"
	RouteReady   = "GET /readyz"
	RouteMetrics = "GET /metrics"
)

// Timeouts of the HTTP server. There is deliberately no ReadTimeout or
// WriteTimeout: a whole-request limit would cut legitimate multi-GiB
// uploads and downloads on slow links. Instead request bodies and large
// responses must make progress (see BodyIdleTimeout and minTransferRate).
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
	// BodyIdleTimeout is how long a request body may stall before the read
	// fails, and the base of the write deadline of large responses.
	BodyIdleTimeout = time.Minute
	// DefaultShutdownTimeout bounds a graceful shutdown.
	DefaultShutdownTimeout = 30 * time.Second
	readyTimeout           = 3 * time.Second
	maxHeaderBytes         = 64 << 10
)

// Index is the part of the index a Server uses: the protocol services
// read provider and module versions, and the readiness check pings it.
// The server applies its changes to its caches (changes.go): this
// process's as they commit when it is a store.ChangeHook, every
// process's while it serves when it is a store.ChangeFeed. A store.Index
// is both.
type Index interface {
	store.Providers
	store.Modules
	// ListMirroredVersions is store.Mirror's (the OCI API serves the
	// mirror's providers from it).
	ListMirroredVersions(ctx context.Context, host, namespace, typ string) ([]registry.MirroredVersion, error)
	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
}

// Options configures a Server.
type Options struct {
	Index     Index
	Blobs     store.Blobs
	Signer    *signedurl.Signer
	PublicURL *url.URL // the origin clients reach Trove at; signed URLs are made absolute with it
	// API is the management API, mounted under /api/v1/ (may be nil).
	API    http.Handler
	Logger *slog.Logger
	// Metrics receives the HTTP metrics. Nil means a private registry. It
	// is served at /metrics when it is also a prometheus.Gatherer (as a
	// *prometheus.Registry is).
	Metrics prometheus.Registerer
	// RedirectDownloads answers file downloads with a redirect to a
	// presigned URL when the blob store can make one.
	RedirectDownloads bool
	// ShutdownTimeout bounds a graceful shutdown (DefaultShutdownTimeout if 0).
	ShutdownTimeout time.Duration
	// ProviderOptions tune the providers.v1 response cache.
	ProviderOptions []providers.Option
	// ModuleOptions tune the modules.v1 cache.
	ModuleOptions []modules.Option
	// Access guards the protocol routes: who may read which namespace.
	// Nil means every namespace is readable by anyone (for tests of
	// other parts only: a real server always sets it).
	Access *auth.Access
	// PrivateSigner signs the download URLs of private namespaces,
	// normally with a shorter lifetime than Signer (Signer if nil). Both
	// must use the same key: the file route verifies with Signer.
	PrivateSigner *signedurl.Signer
	// Login serves login.v1 under /oauth/ and announces it in service
	// discovery (none if nil).
	Login *login.Service
	// AccessLog, if set, writes the access log lines (faster than
	// through Logger, in the same format); otherwise they go to Logger.
	AccessLog *AccessLog
	// Mirror serves the providers of other registries on the network
	// mirror routes and fetches their packages on first download (none if
	// nil: the mirror serves Trove's own providers only).
	Mirror Mirror
	// UI serves the web pages (none if nil: / answers JSON).
	UI UI
	// SSO serves the sign-in through identity providers under
	// /oauth/sso/ (*sso.Service; none if nil).
	SSO interface{ Register(mux route.Registrar) }
	// OCICacheBytes bounds the memory of the OCI pull API's cached
	// documents (oci.Options.CacheBytes: its default if <= 0).
	OCICacheBytes int64
	// CacheBudget, if set, is the byte budget the providers.v1, modules.v1
	// and OCI caches share (the app's --cache-bytes), on top of each
	// one's own bound.
	CacheBudget *respcache.Budget
}

// UI is the web UI (*web.Service): its pages are mounted beside the
// protocol routes, it renders the "not found" page of browsers, and its
// cached pages and search catalog are dropped with the protocol documents
// (Invalidate, called for every change to what the pages show).
type UI interface {
	Register(mux route.Registrar)
	NotFound(w http.ResponseWriter, r *http.Request)
	Invalidate()
}

// Mirror is the pull-through cache of upstream registries
// (*mirror.Mirror).
type Mirror interface {
	providers.MirrorSource
	files.Fetcher
	oci.Mirror
}

// Server serves Trove over HTTP. Create it with New.
type Server struct {
	opt       Options
	services  map[string]any // the discovery document's services
	log       *slog.Logger
	providers *providers.Service
	modules   *modules.Service
	oci       *oci.Service
	mux       *http.ServeMux // every route; the pre-router (fastroute.go) is in front of it
	handler   http.Handler
	// following is set while followChanges is told of every change as
	// it commits: from the feed's ChangeAll to its ChangeLost.
	following atomic.Bool
}

// New checks opt and mounts every route.
func New(opt Options) (*Server, error) {
	switch {
	case opt.Index == nil:
		return nil, registry.Errorf(registry.Invalid, "server: no index")
	case opt.Blobs == nil:
		return nil, registry.Errorf(registry.Invalid, "server: no blob store")
	case opt.Signer == nil:
		return nil, registry.Errorf(registry.Invalid, "server: no URL signer")
	case opt.PublicURL == nil || (opt.PublicURL.Scheme != "https" && opt.PublicURL.Scheme != "http") || opt.PublicURL.Host == "":
		return nil, registry.Errorf(registry.Invalid, "server: the public URL must be an absolute http(s) URL")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.ShutdownTimeout <= 0 {
		opt.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opt.Metrics == nil {
		opt.Metrics = prometheus.NewRegistry()
	}
	s := &Server{opt: opt, log: opt.Logger}

	services := map[string]any{discovery.ProvidersV1: providers.BasePath, modules.ServiceID: modules.BasePath}
	if opt.Login != nil {
		services[login.ServiceID] = opt.Login.Discovery()
	}
	disco, err := discovery.New(services)
	if err != nil {
		return nil, err
	}
	s.services = services
	providerOpts := opt.ProviderOptions
	moduleOpts := opt.ModuleOptions
	settled := settledIndex(opt.Index, &s.following)
	if settled != nil {
		providerOpts = append(slices.Clip(providerOpts), providers.WithSettled(settled))
		moduleOpts = append(slices.Clip(moduleOpts), modules.WithSettled(settled))
		if ui, ok := opt.UI.(SettledUI); ok {
			ui.UseSettled(settled)
		}
	}
	if opt.CacheBudget != nil {
		providerOpts = append(slices.Clip(providerOpts), providers.WithCacheBudget(opt.CacheBudget))
	}
	if opt.Access != nil {
		providerOpts = append(slices.Clip(providerOpts), providers.WithGuard(opt.Access, opt.PrivateSigner))
	}
	var fetcher files.Fetcher
	if opt.Mirror != nil {
		providerOpts = append(slices.Clip(providerOpts), providers.WithMirror(opt.Mirror))
		fetcher = opt.Mirror
	}
	s.providers = providers.New(opt.Index, opt.Signer, opt.PublicURL, opt.Logger, providerOpts...)
	if opt.CacheBudget != nil {
		moduleOpts = append(slices.Clip(moduleOpts), modules.WithCacheBudget(opt.CacheBudget))
	}
	if opt.Access != nil {
		moduleOpts = append(slices.Clip(moduleOpts), modules.WithGuard(opt.Access, opt.PrivateSigner))
	}
	s.modules = modules.New(opt.Index, opt.Signer, opt.PublicURL, opt.Logger, moduleOpts...)
	ociOpt := oci.Options{Index: opt.Index, Blobs: opt.Blobs, PublicURL: opt.PublicURL, Logger: opt.Logger, Signer: opt.Signer, CacheBytes: opt.OCICacheBytes, CacheBudget: opt.CacheBudget, Settled: settled}
	if opt.Access != nil {
		ociOpt.Guard = opt.Access
	}
	if opt.Mirror != nil {
		ociOpt.Mirror = opt.Mirror
	}
	s.oci = oci.New(ociOpt)

	m, err := newMetrics(opt.Metrics, s.providers)
	if err != nil {
		return nil, err
	}

	mux := &route.Recorder{Mux: http.NewServeMux()}
	mux.Handle("GET "+discovery.Path, disco)
	s.providers.Register(mux)
	s.modules.Register(mux)
	s.oci.Register(mux)
	if opt.Login != nil {
		opt.Login.Register(mux)
	}
	if opt.SSO != nil {
		opt.SSO.Register(mux)
	}
	files.New(files.Options{
		Blobs: opt.Blobs, Signer: opt.Signer, Logger: opt.Logger, RedirectDownloads: opt.RedirectDownloads, Fetcher: fetcher,
	}).Register(mux)
	if opt.API != nil {
		mux.Handle(apispec.Prefix+"/", opt.API)
	}
	// Without it ServeMux would redirect /api/v1 to /api/v1/.
	mux.Handle(apispec.Prefix, httpjson.Handler(opt.Logger, notFound))
	mux.HandleFunc(RouteHealth, s.health)
	mux.Handle(RouteReady, httpjson.Handler(opt.Logger, s.ready))
	if g, ok := opt.Metrics.(prometheus.Gatherer); ok {
		mux.Handle(RouteMetrics, promhttp.HandlerFor(g, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(opt.Logger.Handler(), slog.LevelError),
		}))
	}
	// The catch-all: 405 with Allow for a path routed for other methods
	// only, 404 otherwise (and the UI's page to a browser's GET).
	fallback := httpjson.Handler(opt.Logger, func(w http.ResponseWriter, r *http.Request) error {
		if allow := route.Allowed(mux.Mux, r, "/"); len(allow) > 0 {
			httpjson.MethodNotAllowed(w, r, allow)
			return nil
		}
		return notFound(w, r)
	})
	if opt.UI != nil {
		opt.UI.Register(mux)
		api := fallback
		fallback = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if (r.Method == http.MethodGet || r.Method == http.MethodHead) && wantsHTML(r) {
				opt.UI.NotFound(w, r)
				return
			}
			api.ServeHTTP(w, r)
		})
	}
	mux.Handle("/", fallback)

	router, err := newFastRouter(mux.Mux, mux.Patterns(), s.fastRoutes())
	if err != nil {
		return nil, err
	}
	s.mux = mux.Mux
	s.handler = &middleware{next: router, log: opt.Logger, access: opt.AccessLog, metrics: m}
	if h, ok := opt.Index.(store.ChangeHook); ok {
		// This process's own changes, before each write returns
		// (changes.go), for as long as the index is open.
		h.OnCommit(s.applyChange)
	}
	return s, nil
}

// settledIndex returns the respcache.Options.Settled of the protocol
// caches (docs/architecture.md, "Request paths"): whether every change
// reaches the caches as it commits, so that the documents that change
// only through the index need no render on age. For an index that is
// its database's sole writer and reports its commits (the embedded
// SQLite index; New registers applyChange as its hook) that is always
// so. For an index that other processes write too, with a hook for this
// process's changes and a feed for the others' (PostgreSQL), it is so
// while the feed listens: following, which followChanges sets from the
// feed's ChangeAll to its ChangeLost. Other indexes get nil: their
// caches keep the maximum age.
func settledIndex(idx any, following *atomic.Bool) func() bool {
	if _, hook := idx.(store.ChangeHook); !hook {
		return nil
	}
	if w, ok := idx.(store.SoleWriter); ok && w.SoleWriter() {
		return func() bool { return true }
	}
	if _, feed := idx.(store.ChangeFeed); feed {
		return following.Load
	}
	return nil
}

// DirectUI is the optional ability of a UI whose most read pages (a
// module's, a provider's, a namespace's) the pre-router serves without
// the mux, found by type assertion; *web.Service has it.
type DirectUI interface {
	// DirectRoutes returns the pages' routes, each also registered on
	// the mux by Register.
	DirectRoutes() []route.Direct
}

// SettledUI is the optional ability of a UI to keep what changes only
// through the index for longer while every such change reaches its
// Invalidate as it commits (respcache.Options.Settled), found by type
// assertion; *web.Service has it.
type SettledUI interface {
	// UseSettled is called once, before serving, with the function that
	// reports whether the index is settled.
	UseSettled(settled func() bool)
}

// fastRoutes are the routes of the hot protocol answers and of the UI's
// most read pages (DirectUI), served by the pre-router (fastroute.go) in
// front of the mux.
func (s *Server) fastRoutes() []fastRoute {
	routes := s.protocolRoutes()
	if ui, ok := s.opt.UI.(DirectUI); ok {
		for _, d := range ui.DirectRoutes() {
			routes = append(routes, fastRoute{pattern: d.Pattern, serve: d.Serve})
		}
	}
	return routes
}

// protocolRoutes are the pre-routed routes of the hot protocol answers.
func (s *Server) protocolRoutes() []fastRoute {
	p, md := s.providers, s.modules
	return []fastRoute{
		{pattern: providers.RouteVersions, serve: func(w http.ResponseWriter, r *http.Request, v pathValues) {
			p.ServeVersions(w, r, v[0], v[1])
		}},
		{pattern: providers.RouteDownload, serve: func(w http.ResponseWriter, r *http.Request, v pathValues) {
			p.ServeDownload(w, r, v[0], v[1], v[2], v[3], v[4])
		}},
		{pattern: providers.RouteMirror, serve: func(w http.ResponseWriter, r *http.Request, v pathValues) {
			p.ServeMirror(w, r, providers.MirrorPath{Host: v[0], Namespace: v[1], Type: v[2], File: v[3]})
		}},
		{pattern: modules.RouteVersions, serve: func(w http.ResponseWriter, r *http.Request, v pathValues) {
			md.ServeVersions(w, r, v[0], v[1], v[2])
		}},
		{pattern: modules.RouteDownload, serve: func(w http.ResponseWriter, r *http.Request, v pathValues) {
			md.ServeDownload(w, r, v[0], v[1], v[2], v[3])
		}},
		{pattern: oci.Route, serve: func(w http.ResponseWriter, r *http.Request, _ pathValues) {
			s.oci.ServeHTTP(w, r)
		}},
	}
}

// Services returns the services of the discovery document with absolute
// URLs under the public URL: what a CLI configuration host block needs to
// reach this server under another host name (see discovery.HostBlock).
func (s *Server) Services() map[string]any {
	return discovery.Absolute(s.services, s.opt.PublicURL)
}

// Handler returns the handler of every route with its middleware.
func (s *Server) Handler() http.Handler { return s.handler }

// invalidateUI drops the web UI's cached pages and catalog.
func (s *Server) invalidateUI() {
	if s.opt.UI != nil {
		s.opt.UI.Invalidate()
	}
}

// wantsHTML reports whether a request comes from a browser showing a
// page: its Accept header names text/html. Protocol clients and the API
// client do not.
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func notFound(w http.ResponseWriter, r *http.Request) error {
	path := r.URL.Path
	if len(path) > 200 {
		path = path[:200] + "..."
	}
	return registry.Errorf(registry.NotFound, "no route %s %s", r.Method, path)
}

var healthBody = []byte(`{"status":"ok"}`)

// health answers 200 while the process serves requests.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = noStore
	httpjson.WriteRaw(w, http.StatusOK, healthBody)
}

// blobPinger is the optional ability of a blob store to check that its
// backend answers more thoroughly than a Stat of an absent blob can.
type blobPinger interface {
	Ping(ctx context.Context) error
}

// sentinelDigest is looked up to check that the blob store answers; it
// is the digest of the empty file, which need not exist.
const sentinelDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// ready answers 200 when the index and the blob store are reachable, 503
// otherwise. Causes are logged, not shown: the route is unauthenticated.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	w.Header()["Cache-Control"] = noStore
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.opt.Index.Ping(ctx); err != nil {
		s.log.ErrorContext(ctx, "readiness: index unreachable", "err", err)
		return registry.Errorf(registry.Unavailable, "the index is not reachable")
	}
	var err error
	if p, ok := s.opt.Blobs.(blobPinger); ok {
		err = p.Ping(ctx)
	} else if _, err = s.opt.Blobs.Stat(ctx, sentinelDigest); registry.IsKind(err, registry.NotFound) {
		err = nil
	}
	if err != nil {
		s.log.ErrorContext(ctx, "readiness: blob store unreachable", "err", err)
		return registry.Errorf(registry.Unavailable, "the blob store is not reachable")
	}
	httpjson.WriteRaw(w, http.StatusOK, healthBody)
	return nil
}

// TLSFiles names the PEM files of a server certificate. CAFile is the
// certificate clients should trust when it is self-signed, "" otherwise.
type TLSFiles struct {
	CAFile   string
	CertFile string
	KeyFile  string
}

// Serve serves on ln until ctx is cancelled, then shuts down gracefully:
// it stops accepting, lets requests in progress finish for up to the
// shutdown timeout and closes what remains. With tlsFiles it serves
// HTTPS (TLS 1.2 or later, HTTP/2 enabled), otherwise plain HTTP (for a
// TLS-terminating proxy in front). It returns nil after a shutdown caused
// by ctx.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsFiles *TLSFiles) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	serve := func() error { return srv.Serve(ln) }
	if tlsFiles != nil {
		cert, err := tls.LoadX509KeyPair(tlsFiles.CertFile, tlsFiles.KeyFile)
		if err != nil {
			ln.Close()
			return registry.Wrap(registry.Invalid, err, "loading the TLS certificate "+tlsFiles.CertFile)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		serve = func() error { return srv.ServeTLS(ln, "", "") } // adds "h2" to the ALPN protocols
	}

	// Replicas sharing the index drop cached responses as soon as any of
	// them commits a change (changes.go); stopped before Serve returns.
	var wg sync.WaitGroup
	defer wg.Wait()
	feedCtx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	wg.Go(func() { s.followChanges(feedCtx) })

	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if err != nil {
		srv.Close()
		err = registry.Wrap(registry.Unavailable, err, "graceful shutdown did not finish in "+s.opt.ShutdownTimeout.String()+"; closed the remaining connections")
	}
	if serveErr := <-errc; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	return err
}

// newMetrics registers the HTTP metrics, the Go and process collectors
// and the providers cache gauges on reg. Collectors reg already has are
// kept.
func newMetrics(reg prometheus.Registerer, p *providers.Service) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trove_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests by route pattern, method and status code.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"route", "method", "status"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trove_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
	}
	m.series.Store(&map[seriesKey]*series{})
	cs := []prometheus.Collector{
		m.requests, m.duration, m.inFlight,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "trove_providers_cache_entries",
			Help: "Rendered providers.v1 documents held in memory.",
		}, func() float64 { n, _ := p.CacheStats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "trove_providers_cache_bytes",
			Help: "Memory accounted to the providers.v1 document cache.",
		}, func() float64 { _, b := p.CacheStats(); return float64(b) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, registry.Wrap(registry.Internal, err, "registering metrics")
			}
			ok := true
			switch c {
			case m.requests:
				m.requests, ok = are.ExistingCollector.(*prometheus.CounterVec)
			case m.duration:
				m.duration, ok = are.ExistingCollector.(*prometheus.HistogramVec)
			case m.inFlight:
				m.inFlight, ok = are.ExistingCollector.(prometheus.Gauge)
			}
			if !ok {
				return nil, registry.Wrap(registry.Internal, err, "registering metrics: a different collector has the same name")
			}
		}
	}
	return m, nil
}
