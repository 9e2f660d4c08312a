// Package app builds a running Trove from a configuration: it is the one
// place the packages are wired together, used by `trove serve`, by
// internal/trovetest (a Trove in-process for tests) and so by every harness
// that starts a server.
//
// Contract of New: it creates the data directory and takes its lock
// (serve.lock: one server per data directory), opens the index and the
// blob store that cfg selects, loads or creates the URL-signing key,
// checks the signing secret, removes the unfinished uploads a crash left
// in the data directory's tmp/, builds the publishers, the management API,
// the login service and the server with its response caches, prepares TLS
// (cfg's certificate, checked now, or a self-signed one in DataDir/tls)
// and listens. Nothing runs in the background until Serve: Serve serves
// on the listener, follows the index's change feed (store.ChangeFeed,
// when the index has one), flushes the download counts
// (downloads.Counter.Run; once more after the server shut down, and in
// Close), sweeps a blob store's stale staging (S3's
// crashed multipart uploads) and computes the h1 hashes of packages
// published before Trove did (publish.BackfillPackageHashes) and delivers
// webhook events (webhook.Worker.Run) until its context ends. The caller owns the
// App and must Close it (after Serve returned) to close the listener, the
// stores and the lock; New closes what it opened when it fails.
//
// The first admin token is created by Bootstrap, which the caller runs
// after whatever may still fail before serving (`trove serve` writes its
// CLI configuration first), so that no stored token is lost unseen.
package app

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/flock"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/protocol/login"
	protomodules "trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/sso"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/web"
	"trove.dev/trove/internal/webhook"
)

// URLSigningKeyName is the name of the shared secret that signs download
// URLs; every replica sharing the index uses the same one.
const URLSigningKeyName = "url-signing-key"

// Options tune what New builds beyond what the configuration says.
type Options struct {
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Listener, if not nil, is served instead of a new listener on
	// cfg.Listen (for a caller that needs the address before it knows the
	// public URL). The App owns it from New on, also when New fails.
	Listener net.Listener
	// CertHosts are the names of the self-signed certificate made when cfg
	// names none and serves HTTPS; nil means the public URL's host,
	// localhost and 127.0.0.1.
	CertHosts []string
	// Login tunes login.v1. New fills in Index and Authenticator, and
	// Logger and TokenTTL (cfg.Access.LoginTokenTTL) when they are zero.
	Login login.Options
	// UserAgent names Trove in the provider mirror's requests to upstream
	// registries ("Trove/dev" if empty).
	UserAgent string
	// AccessLog, if set, writes the access log instead of Logger (see
	// server.AccessLog).
	AccessLog *server.AccessLog
}

// App is a Trove built by New: what it opened, the server, and the
// listener it serves on.
type App struct {
	// Config is the configuration the App was built from.
	Config config.Config
	Index  store.Index
	Blobs  store.Blobs
	// Signer signs download URLs; PrivateSigner those of private
	// namespaces (same key, shorter lifetime).
	Signer, PrivateSigner *signedurl.Signer
	// SigningSecret encrypts the registry-managed signing keys.
	SigningSecret signing.SecretFile
	// Downloads counts the downloads this process answers and adds them
	// to the index every cfg.DownloadsFlushInterval while Serve runs, and
	// once more when Serve ends and in Close.
	Downloads *downloads.Counter
	// Webhooks delivers the events of the index's outbox while Serve
	// runs; Events enqueues them (docs/webhooks.md).
	Webhooks *webhook.Worker
	Events   *webhook.Emitter
	// GC runs garbage collections: POST /api/v1/gc, and every
	// cfg.GCInterval while Serve runs.
	GC *gc.Collector
	// ops makes the writes of every entrance, the scheduled garbage
	// collections' too.
	ops *operations.Operations
	// GitSources syncs the git sources of modules: on demand, on push
	// webhooks and every poll interval while Serve runs.
	GitSources *gitsource.Service
	Server     *server.Server
	// TLS names the certificate Serve uses; nil for plain HTTP.
	TLS      *server.TLSFiles
	Listener net.Listener

	log     *slog.Logger
	pub     *publish.Publisher
	closers []func() error // in the order they were opened
}

// New builds a Trove as cfg (validated by config.Load) says; see the
// package comment for what it opens, starts and leaves to the caller.
func New(ctx context.Context, cfg config.Config, opt Options) (_ *App, err error) {
	a := &App{Config: cfg, log: opt.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if opt.Listener != nil {
		a.Listener = opt.Listener
		a.onClose(opt.Listener.Close)
	}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if err := a.lockDataDir(); err != nil {
		return nil, err
	}
	if a.Index, err = OpenIndex(ctx, cfg, a.log); err != nil {
		return nil, err
	}
	a.onClose(a.Index.Close)
	if a.Blobs, err = OpenBlobs(ctx, cfg, a.log); err != nil {
		return nil, err
	}
	if c, ok := a.Blobs.(io.Closer); ok {
		a.onClose(c.Close)
	}
	// Writes of rows naming blobs check them under the lock the garbage
	// collector deletes under (store.GarbageCollection.GuardBlobs).
	a.Index.GuardBlobs(store.BlobsPresent(a.Blobs))
	if a.Server, err = a.build(ctx, opt); err != nil {
		return nil, err
	}
	if err := a.prepareTLS(opt.CertHosts); err != nil {
		return nil, err
	}
	if a.Listener == nil {
		// Listen before the first admin token is created (Bootstrap), so
		// that a busy port cannot lose a token that was stored but never
		// shown.
		if a.Listener, err = net.Listen("tcp", cfg.Listen); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("%s is in use by another program (another trove serve?): stop it, or listen elsewhere with --listen (TROVE_LISTEN), e.g. --listen 127.0.0.1:9443 --public-url https://localhost:9443", cfg.Listen)
			}
			return nil, fmt.Errorf("listening on %s (--listen): %w", cfg.Listen, err)
		}
		a.onClose(a.Listener.Close)
	}
	return a, nil
}

// LockFileName is the file in the data directory that trove serve holds
// locked while it runs (see lockDataDir); `trove restore` takes it too.
const LockFileName = "serve.lock"

// lockDataDir creates the data directory and locks it. Start-up removes
// the unfinished uploads staged in the data directory's tmp/ (a crash's
// leftovers), which is only right while no other server stages there:
// one trove serve per data directory. The kernel releases the lock when
// the process ends, kill -9 included.
func (a *App) lockDataDir() error {
	dir := a.Config.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	lock, err := flock.TryLock(filepath.Join(dir, LockFileName))
	switch {
	case errors.Is(err, flock.ErrLocked):
		return fmt.Errorf("another trove serve uses the data directory %s: give every server its own --data-dir (replicas share PostgreSQL and S3, never a data directory)", dir)
	case err == nil:
		a.onClose(lock.Close)
	case !errors.Is(err, flock.ErrUnsupported):
		return fmt.Errorf("locking the data directory %s: %w", dir, err)
	}
	return nil
}

// build wires the handlers and returns the server. No writer reports its
// changes to the caches: the index does, with the change records its
// writes make (the server registers for this process's as it is built,
// store.ChangeHook, and follows every replica's while it serves,
// store.ChangeFeed), and nothing writes before the server exists.
func (a *App) build(ctx context.Context, opt Options) (*server.Server, error) {
	cfg, idx, log := a.Config, a.Index, a.log
	key, err := idx.Secret(ctx, URLSigningKeyName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("loading the URL-signing key: %w", err)
	}
	a.Signer = signedurl.New(key, cfg.DownloadURLTTL)
	a.PrivateSigner = signedurl.New(key, cfg.Access.PrivateDownloadURLTTL)
	authn := auth.NewAuthenticator(idx)
	access := auth.NewAccess(authn, idx)
	access.SetMirrorPublic(cfg.Access.MirrorPublic)
	lopt := opt.Login
	lopt.Index, lopt.Authenticator = idx, authn
	if lopt.Logger == nil {
		lopt.Logger = log
	}
	if lopt.TokenTTL == 0 {
		lopt.TokenTTL = cfg.Access.LoginTokenTTL
	}
	if !cfg.Access.LocalPasswords {
		lopt.NoLocalPasswords = true
	}
	if lopt.PublicURL == "" {
		lopt.PublicURL = cfg.PublicURL
	}
	var ssoSvc *sso.Service // set below; the login page lists its providers at request time
	lopt.Providers = func(ctx context.Context) []login.Provider { return ssoSvc.Providers(ctx) }
	public, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return nil, err // config.Validate has checked it
	}

	tempDir := filepath.Join(cfg.DataDir, "tmp")
	if err := os.MkdirAll(tempDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the upload staging directory: %w", err)
	}
	// The secret is read now, so that a wrong file fails the start, not
	// the first publish; the embedded default is created on first use.
	a.SigningSecret = signing.SecretFile{Path: cfg.Signing.SecretFile, Create: cfg.Signing.CreateSecret}
	if err := a.SigningSecret.Check(); err != nil {
		return nil, err
	}
	managed := signing.NewManaged(signing.ManagedOptions{Keys: idx, Secret: a.SigningSecret})
	pub := publish.New(publish.Options{
		Index:       idx,
		Blobs:       a.Blobs,
		TempDir:     tempDir,
		MaxZipBytes: cfg.Limits.MaxZipBytes,
		ZipLimits:   release.Limits{MaxEntries: cfg.Limits.MaxZipEntries, MaxUnpackedBytes: cfg.Limits.MaxUnpackedBytes},
		Managed:     managed,
		Logger:      log,
	})
	if err := pub.RemoveStaleUploads(); err != nil {
		return nil, fmt.Errorf("removing unfinished uploads from %s: %w", tempDir, err)
	}
	a.pub = pub
	mods := modules.NewPublisher(modules.Options{
		Index:           idx,
		Blobs:           a.Blobs,
		TempDir:         tempDir,
		MaxArchiveBytes: cfg.Limits.MaxZipBytes,
		Limits:          modules.Limits{MaxEntries: cfg.Limits.MaxZipEntries, MaxUnpackedBytes: cfg.Limits.MaxUnpackedBytes},
		Managed:         managed,
		Logger:          log,
	})
	if err := mods.RemoveStaleUploads(); err != nil {
		return nil, fmt.Errorf("removing unfinished module uploads from %s: %w", tempDir, err)
	}
	metrics := prometheus.NewRegistry()
	mir, err := mirror.New(mirror.Options{
		Index: idx, Blobs: a.Blobs, TempDir: tempDir, MaxPackageBytes: cfg.Limits.MaxZipBytes,
		UserAgent: opt.UserAgent, Logger: log, Metrics: metrics,
		IdleTimeout: cfg.MirrorIdleTimeout,
	})
	if err != nil {
		return nil, err
	}
	a.onClose(func() error { mir.Close(); return nil }) // before the index and blobs it writes to
	if err := mir.RemoveStaleDownloads(); err != nil {
		return nil, fmt.Errorf("removing unfinished mirror downloads from %s: %w", tempDir, err)
	}
	// The operations are made below; the mirror and the git sources
	// publish through them only once serving.
	var ops *operations.Operations
	modMirror, err := a.moduleMirror(ctx, mir, modulePublishFunc(func(ctx context.Context, up modules.Upload) (modules.Result, error) {
		return ops.PublishMirroredModule(ctx, up)
	}))
	if err != nil {
		return nil, err
	}
	// The protocol handlers name each download's consumer as the access
	// guard found it (auth.Reader), so the request is authenticated once.
	counter, err := downloads.New(downloads.Options{
		Store: idx, Interval: cfg.DownloadsFlushInterval, Logger: log, Metrics: metrics,
		ConsumerRetention: cfg.ConsumerRetentionDays, Consumers: cfg.ConsumerRetentionDays > 0,
	})
	if err != nil {
		return nil, err
	}
	a.Downloads = counter
	a.Webhooks, err = webhook.NewWorker(webhook.WorkerOptions{
		Store: idx, AllowPrivate: cfg.Webhooks.AllowPrivate, Timeout: cfg.Webhooks.Timeout,
		Backoff:   webhook.Backoff{Base: webhook.DefaultBackoff.Base, Max: webhook.DefaultBackoff.Max, Attempts: cfg.Webhooks.Attempts},
		Retention: cfg.Webhooks.Retention, Metrics: metrics, Logger: log, UserAgent: webhookUserAgent(opt.UserAgent),
	})
	if err != nil {
		return nil, err
	}
	a.Events = webhook.NewEmitter(webhook.EmitterOptions{Store: idx, PublicURL: public, Logger: log, Wake: a.Webhooks.Wake})
	if a.GC, err = gc.New(gc.Options{Index: idx, Blobs: a.Blobs, Logger: log, Metrics: metrics, Versions: idx}); err != nil {
		return nil, err
	}
	gitRec := audit.New(idx, log)
	a.GitSources = gitsource.New(gitsource.Options{
		Index: idx, Modules: mods, Secret: a.SigningSecret, TempDir: tempDir,
		PollInterval: cfg.GitPollInterval, MaxRepoBytes: cfg.GitMaxRepoBytes,
		Guard: netguard.Guard{AllowPrivate: cfg.GitAllowPrivate, Flag: gitsource.AllowPrivateFlag},
		Publish: func(ctx context.Context, actor string, up modules.Upload) (modules.Result, error) {
			return ops.PublishModule(ctx, operations.Actor{Operator: actor}, up)
		},
		Record: func(ctx context.Context, e registry.AuditEvent) { gitRec.Record(ctx, nil, e) },
		Logger: log,
	})
	// Closed before the index (closers run newest first): what Serve's
	// final flush did not write, if Serve ran at all.
	a.onClose(func() error { counter.FinalFlush(context.Background()); return nil })
	// One layer of operations below every entrance: the API and the web
	// UI's forms make their writes through the same rules.
	rec := audit.New(idx, log)
	ops = operations.New(operations.Options{
		Index: idx, Access: access, Audit: rec, Events: a.Events, Managed: managed, SignInTokenTTL: lopt.TokenTTL,
		GitSources:       a.GitSources,
		NoLocalPasswords: !cfg.Access.LocalPasswords,
		Publisher:        pub, Modules: mods, Blobs: a.Blobs,
		Logger:      log,
		WebhookURLs: registry.WebhookURLRules{AllowHTTP: cfg.Webhooks.AllowHTTP, AllowPrivate: cfg.Webhooks.AllowPrivate},
		PublicURL:   public,
		CheckIssuer: func(ctx context.Context, issuer string) (string, error) {
			return sso.CheckIssuer(ctx, nil, issuer)
		},
		OnMirrorChange: mir.Reload, GC: a.GC, Consumers: counter,
	})
	a.ops = ops
	lopt.Operations = ops // sign-ins mint their tokens through the same rules
	loginSvc, err := login.New(ctx, lopt)
	if err != nil {
		return nil, fmt.Errorf("setting up login: %w", err)
	}
	apiHandler := api.New(api.Options{
		Operations:       ops,
		Audit:            rec,
		Index:            idx,
		Publisher:        pub,
		Modules:          mods,
		Auth:             authn,
		Access:           access,
		Managed:          managed,
		Logger:           log,
		MaxUploadBytes:   cfg.Limits.MaxUploadBytes,
		OnMirrorChange:   mir.Reload,
		PublicURL:        public,
		Blobs:            a.Blobs,
		Mirror:           mir,
		ModuleMirror:     modMirror,
		TempDir:          tempDir,
		Downloads:        counter,
		NoLocalPasswords: !cfg.Access.LocalPasswords,
		Events:           a.Events,
		WebhookURLs:      registry.WebhookURLRules{AllowHTTP: cfg.Webhooks.AllowHTTP, AllowPrivate: cfg.Webhooks.AllowPrivate},
		GC:               a.GC,
		GitSources:       a.GitSources,
		SignInTokenTTL:   lopt.TokenTTL,
		CheckIssuer: func(ctx context.Context, issuer string) (string, error) {
			return sso.CheckIssuer(ctx, nil, issuer)
		},
	})
	ui, err := web.New(ctx, web.Options{
		Index: idx, Access: access, Login: loginSvc, Operations: ops, Blobs: a.Blobs, PublicURL: public,
		Host: discovery.RegistryHost(cfg.PublicURL), TokenTTL: lopt.TokenTTL, Downloads: counter, Logger: log,
		Holds: mir.Holds,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the web UI: %w", err)
	}
	ssoSvc, err = sso.New(ctx, sso.Options{
		Index: idx, Login: loginSvc, Sessions: ui, PublicURL: public, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up single sign-on: %w", err)
	}
	srv, err := server.New(server.Options{
		Index: idx, Blobs: a.Blobs, Signer: a.Signer, PublicURL: public, API: apiHandler, Logger: log,
		RedirectDownloads: RedirectDownloads(cfg),
		Access:            access, PrivateSigner: a.PrivateSigner, Login: loginSvc,
		ProviderOptions: []providers.Option{providers.WithCacheBytes(cfg.CacheBytes), providers.WithDownloadCounter(counter)},
		ModuleOptions:   []protomodules.Option{protomodules.WithDownloadCounter(counter), protomodules.WithMirror(modMirror)},
		Mirror:          mir, Metrics: metrics, AccessLog: opt.AccessLog, UI: ui, SSO: ssoSvc,
		OCICacheBytes: cfg.CacheBytes,
		// One budget for the three protocol caches: --cache-bytes bounds
		// them together, whichever the clients ask (docs/configuration.md).
		CacheBudget: respcache.NewBudget(cfg.CacheBytes),
	})
	if err != nil {
		return nil, err
	}
	return srv, nil
}

// prepareTLS picks the certificate: none for plain HTTP, cfg's (checked
// now rather than after the first admin token has been created and
// printed), or a self-signed one in DataDir/tls for hosts.
func (a *App) prepareTLS(hosts []string) error {
	cfg := a.Config
	switch {
	case cfg.InsecureHTTP:
	case cfg.TLSCert != "":
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
		}
		a.TLS = &server.TLSFiles{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey}
	default:
		if hosts == nil {
			hosts = []string{"localhost", "127.0.0.1"}
			if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1" {
				hosts = append([]string{u.Hostname()}, hosts...)
			}
		}
		files, err := server.EnsureSelfSigned(filepath.Join(cfg.DataDir, "tls"), hosts)
		if err != nil {
			return fmt.Errorf("creating the self-signed certificate: %w", err)
		}
		a.TLS = &files
	}
	return nil
}

// CAFile is the certificate clients should trust: the self-signed CA, ""
// for a certificate of cfg or plain HTTP.
func (a *App) CAFile() string {
	if a.TLS == nil {
		return ""
	}
	return a.TLS.CAFile
}

// Handler returns every route of the server with its middleware.
func (a *App) Handler() http.Handler { return a.Server.Handler() }

// Bootstrap creates the first admin token if the index has no admin yet
// and returns it, "" otherwise (auth.Bootstrap).
func (a *App) Bootstrap(ctx context.Context) (string, error) {
	admin, err := auth.Bootstrap(ctx, a.Index, time.Now())
	if err != nil {
		return "", fmt.Errorf("creating the first admin token: %w", err)
	}
	return admin, nil
}

// Serve serves on the listener until ctx ends, following the index's
// change feed meanwhile, then shuts down gracefully (server.Serve). It
// returns nil after a shutdown caused by ctx. Call Close afterwards.
func (a *App) Serve(ctx context.Context) error {
	if sw, ok := a.Blobs.(stagingSweeper); ok {
		sweepCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sw.SweepStaleUploads(sweepCtx, 0)
		}()
		defer func() { stop(); <-done }()
	}
	// Packages published before Trove computed h1 hashes get theirs in
	// the background, so that start-up does not wait for them.
	backfillCtx, stopBackfill := context.WithCancel(ctx)
	backfilled := make(chan struct{})
	go func() {
		defer close(backfilled)
		if err := a.pub.BackfillPackageHashes(backfillCtx, a.Index); err != nil && backfillCtx.Err() == nil {
			a.log.Warn("computing the h1 hashes of packages published before Trove did", "err", err)
		}
	}()
	defer func() { stopBackfill(); <-backfilled }()
	// Download counts are flushed every interval, and once more after the
	// server has shut down (no request is answered any more): a graceful
	// stop loses none.
	flushCtx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		a.Downloads.Run(flushCtx)
	}()
	defer func() { stopFlush(); <-flushed }()
	// Webhook deliveries: a delivery in flight at the stop is claimed
	// again by a replica once its lease expires.
	hooksCtx, stopHooks := context.WithCancel(ctx)
	hooksDone := make(chan struct{})
	go func() {
		defer close(hooksDone)
		a.Webhooks.Run(hooksCtx)
	}()
	defer func() { stopHooks(); <-hooksDone }()
	// Git sources: triggered syncs, and polls every interval.
	gitCtx, stopGit := context.WithCancel(ctx)
	gitDone := make(chan struct{})
	go func() {
		defer close(gitDone)
		a.GitSources.Run(gitCtx)
	}()
	defer func() { stopGit(); <-gitDone }()
	if a.Config.GCInterval > 0 {
		gcCtx, stopGC := context.WithCancel(ctx)
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			a.collectGarbage(gcCtx)
		}()
		defer func() { stopGC(); <-collected }()
	}
	return a.Server.Serve(ctx, a.Listener, a.TLS)
}

// webhookUserAgent names Trove in webhook deliveries: "Trove-Webhook"
// and the version of ua ("Trove/1.2.3").
func webhookUserAgent(ua string) string {
	if v, ok := strings.CutPrefix(ua, "Trove/"); ok && v != "" {
		return "Trove-Webhook/" + v
	}
	return "Trove-Webhook"
}

// collectGarbage runs a garbage collection every cfg.GCInterval until ctx
// ends (the first one interval after the start). A replica finding
// another's collection running (Conflict) skips its turn: with every
// replica doing this, about one collection runs per interval.
func (a *App) collectGarbage(ctx context.Context) {
	tick := time.NewTicker(a.Config.GCInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		const actor = "trove serve --gc-interval"
		_, err := a.ops.CollectGarbage(ctx, operations.Actor{Operator: actor}, gc.Run{Grace: a.Config.GCGrace})
		switch {
		case registry.IsKind(err, registry.Conflict):
			a.log.Info("garbage collection skipped: another replica is collecting")
		case err != nil && ctx.Err() == nil:
			a.log.Warn("garbage collection failed", "err", err)
		}
	}
}

// stagingSweeper is a blob store whose staging (S3's multipart uploads)
// a crashed replica can leave behind while others run on: Serve sweeps it
// periodically (s3blob.Store.SweepStaleUploads).
type stagingSweeper interface {
	SweepStaleUploads(ctx context.Context, interval time.Duration)
}

// Close closes what New opened, newest first: the listener, the blob
// store, the index and the data directory's lock. Call it once, after
// Serve returned.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	a.closers = nil
	return errors.Join(errs...)
}

func (a *App) onClose(fn func() error) { a.closers = append(a.closers, fn) }

// OpenIndex opens the metadata backend that cfg selects.
func OpenIndex(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Index, error) {
	switch cfg.Index.Backend {
	case config.IndexPostgres:
		pg := cfg.Index.Postgres
		idx, err := postgres.Open(ctx, pg.DSN, postgres.WithMaxConns(pg.MaxConns),
			postgres.WithMigrations(pg.MigrateOnStart), postgres.WithLogger(log))
		if err != nil {
			return nil, fmt.Errorf("opening the PostgreSQL index: %w", err)
		}
		return idx, nil
	case config.IndexSQLite:
		idx, err := sqlite.Open(ctx, cfg.Index.SQLite.Path)
		if err != nil {
			return nil, fmt.Errorf("opening the SQLite index %s: %w", cfg.Index.SQLite.Path, err)
		}
		return idx, nil
	default:
		return nil, fmt.Errorf("unknown index backend %q", cfg.Index.Backend)
	}
}

// OpenBlobs opens the blob backend that cfg selects; log hears what
// opening cleans up (multipart uploads that crashed processes left).
func OpenBlobs(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Blobs, error) {
	switch cfg.Blobs.Backend {
	case config.BlobsFS:
		b, err := fsblob.Open(cfg.Blobs.FS.Dir)
		if err != nil {
			return nil, fmt.Errorf("opening the blob directory %s: %w", cfg.Blobs.FS.Dir, err)
		}
		return b, nil
	case config.BlobsS3:
		s := cfg.Blobs.S3
		b, err := s3blob.Open(ctx, s3blob.Options{
			Endpoint: s.Endpoint, Region: s.Region, Bucket: s.Bucket, Prefix: s.Prefix, PathStyle: s.PathStyle,
			AccessKey: s.AccessKey, SecretKey: s.SecretKey, Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("opening the S3 blob store: %w", err)
		}
		return b, nil
	default:
		return nil, fmt.Errorf("unknown blob backend %q", cfg.Blobs.Backend)
	}
}

// RedirectDownloads reports whether verified file downloads are answered
// with a redirect to the blob store (which must be able to presign URLs)
// rather than streamed through Trove.
func RedirectDownloads(cfg config.Config) bool {
	return cfg.Blobs.Backend == config.BlobsS3 && cfg.Blobs.S3.DownloadMode == config.DownloadRedirect
}
