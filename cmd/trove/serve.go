package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/flock"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/sqlite"
)

// urlSigningKeyName is the name of the shared secret that signs download
// URLs; every replica sharing the index uses the same one.
const urlSigningKeyName = "url-signing-key"

// runServer wires the packages together as cfg says and serves until ctx
// ends, then shuts down gracefully. It prints the start-up banner to
// stdout and logs to stderr.
func runServer(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	// Start-up removes the unfinished uploads staged in the data
	// directory's tmp/ (a crash's leftovers), which is only right while no
	// other server stages there: one trove serve per data directory. The
	// kernel releases the lock when the process ends, kill -9 included.
	lock, err := flock.TryLock(filepath.Join(cfg.DataDir, "serve.lock"))
	switch {
	case errors.Is(err, flock.ErrLocked):
		return fmt.Errorf("another trove serve uses the data directory %s: give every server its own --data-dir (replicas share PostgreSQL and S3, never a data directory)", cfg.DataDir)
	case err == nil:
		defer lock.Close()
	case !errors.Is(err, flock.ErrUnsupported):
		return fmt.Errorf("locking the data directory %s: %w", cfg.DataDir, err)
	}
	logOut := newFlushingWriter(stderr, 100*time.Millisecond)
	defer logOut.Close()
	log := newLogger(cfg, logOut)

	idx, err := openIndex(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer idx.Close()
	blobs, err := openBlobs(ctx, cfg, log)
	if err != nil {
		return err
	}
	key, err := idx.Secret(ctx, urlSigningKeyName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return fmt.Errorf("loading the URL-signing key: %w", err)
	}
	signer := signedurl.New(key, cfg.DownloadURLTTL)
	privateSigner := signedurl.New(key, cfg.Access.PrivateDownloadURLTTL)
	authn := auth.NewAuthenticator(idx)
	access := auth.NewAccess(authn, idx)
	loginSvc, err := login.New(ctx, login.Options{Index: idx, Logger: log, TokenTTL: cfg.Access.LoginTokenTTL, Authenticator: authn})
	if err != nil {
		return fmt.Errorf("setting up login: %w", err)
	}
	public, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return err // config.Validate has checked it
	}

	tempDir := filepath.Join(cfg.DataDir, "tmp")
	if err := os.MkdirAll(tempDir, 0o700); err != nil {
		return fmt.Errorf("creating the upload staging directory: %w", err)
	}
	// The secret is read now, so that a wrong file fails the start, not
	// the first publish; the embedded default is created on first use.
	secret := signing.SecretFile{Path: cfg.Signing.SecretFile, Create: cfg.Signing.CreateSecret}
	if err := secret.Check(); err != nil {
		return err
	}
	managed := signing.NewManaged(signing.ManagedOptions{Keys: idx, Secret: secret})
	var srv *server.Server
	pub := publish.New(publish.Options{
		Index:       idx,
		Blobs:       blobs,
		TempDir:     tempDir,
		MaxZipBytes: cfg.Limits.MaxZipBytes,
		ZipLimits:   release.Limits{MaxEntries: cfg.Limits.MaxZipEntries, MaxUnpackedBytes: cfg.Limits.MaxUnpackedBytes},
		OnPublish:   func(namespace, typ string) { srv.InvalidateProvider(namespace, typ) },
		Managed:     managed,
		Logger:      log,
	})
	if err := pub.RemoveStaleUploads(); err != nil {
		return fmt.Errorf("removing unfinished uploads from %s: %w", tempDir, err)
	}
	mods := modules.NewPublisher(modules.Options{
		Index:           idx,
		Blobs:           blobs,
		TempDir:         tempDir,
		MaxArchiveBytes: cfg.Limits.MaxZipBytes,
		Limits:          modules.Limits{MaxEntries: cfg.Limits.MaxZipEntries, MaxUnpackedBytes: cfg.Limits.MaxUnpackedBytes},
		OnChange:        func(namespace, name, system string) { srv.InvalidateModule(namespace, name, system) },
		Logger:          log,
	})
	if err := mods.RemoveStaleUploads(); err != nil {
		return fmt.Errorf("removing unfinished module uploads from %s: %w", tempDir, err)
	}
	apiHandler := api.New(api.Options{
		Index:          idx,
		Publisher:      pub,
		Modules:        mods,
		Auth:           authn,
		Access:         access,
		Managed:        managed,
		Logger:         log,
		MaxUploadBytes: cfg.Limits.MaxUploadBytes,
	})
	srv, err = server.New(server.Options{
		Index: idx, Blobs: blobs, Signer: signer, PublicURL: public, API: apiHandler, Logger: log,
		RedirectDownloads: redirectDownloads(cfg),
		Access:            access, PrivateSigner: privateSigner, Login: loginSvc,
		ProviderOptions: []providers.Option{providers.WithCacheBytes(cfg.CacheBytes)},
	})
	if err != nil {
		return err
	}

	var tlsFiles *server.TLSFiles
	switch {
	case cfg.InsecureHTTP:
	case cfg.TLSCert != "":
		// Check the pair now rather than after the first admin token
		// has been created and printed.
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
		}
		tlsFiles = &server.TLSFiles{CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey}
	default:
		files, err := server.EnsureSelfSigned(filepath.Join(cfg.DataDir, "tls"), certHosts(cfg))
		if err != nil {
			return fmt.Errorf("creating the self-signed certificate: %w", err)
		}
		tlsFiles = &files
	}

	// Listen before creating the first admin token, so that a busy port
	// cannot lose a token that was stored but never shown.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	cliConfig := ""
	if needsLocalHostName(cfg.PublicURL) {
		if cliConfig, err = writeCLIConfig(cfg.DataDir, srv.Services()); err != nil {
			ln.Close()
			return fmt.Errorf("writing the CLI configuration for %s: %w", localHostName, err)
		}
	}
	admin, err := auth.Bootstrap(ctx, idx, time.Now())
	if err != nil {
		ln.Close()
		return fmt.Errorf("creating the first admin token: %w", err)
	}
	caFile := ""
	if tlsFiles != nil {
		caFile = tlsFiles.CAFile
	}
	printBanner(stdout, cfg, ln.Addr(), caFile, cliConfig, admin)
	log.Info("trove started", append([]any{"listen", ln.Addr().String(), "public_url", cfg.PublicURL, "data_dir", cfg.DataDir}, storageAttrs(cfg)...)...)
	if err := srv.Serve(ctx, ln, tlsFiles); err != nil {
		return err
	}
	log.Info("trove stopped")
	return nil
}

// openIndex opens the metadata backend that cfg selects.
func openIndex(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Index, error) {
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

// openBlobs opens the blob backend that cfg selects; log hears what
// opening cleans up (multipart uploads that crashed processes left).
func openBlobs(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Blobs, error) {
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

// storageAttrs names the index and blob backends in use and where they
// are, for the start-up log line: never a password or key (the DSN is
// reduced to its host, port, database and user).
func storageAttrs(cfg config.Config) []any {
	var attrs []any
	switch cfg.Index.Backend {
	case config.IndexSQLite:
		attrs = append(attrs, "index", "sqlite", "sqlite_path", cfg.Index.SQLite.Path)
	case config.IndexPostgres:
		attrs = append(attrs, "index", "postgres")
		if pc, err := pgconn.ParseConfig(cfg.Index.Postgres.DSN); err == nil {
			attrs = append(attrs, "postgres_host", net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port))),
				"postgres_database", pc.Database, "postgres_user", pc.User)
		}
	default:
		attrs = append(attrs, "index", cfg.Index.Backend)
	}
	switch cfg.Blobs.Backend {
	case config.BlobsFS:
		attrs = append(attrs, "blobs", "fs", "fs_blob_dir", cfg.Blobs.FS.Dir)
	case config.BlobsS3:
		s := cfg.Blobs.S3
		endpoint := s.Endpoint
		if u, err := url.Parse(endpoint); err == nil && u.User != nil {
			u.User = nil // never log credentials written into the URL
			endpoint = u.String()
		}
		if endpoint == "" {
			endpoint = "aws"
		}
		attrs = append(attrs, "blobs", "s3", "s3_bucket", s.Bucket, "s3_prefix", s.Prefix, "s3_endpoint", endpoint,
			"download_mode", s.DownloadMode)
	default:
		attrs = append(attrs, "blobs", cfg.Blobs.Backend)
	}
	return attrs
}

// redirectDownloads reports whether verified file downloads are answered
// with a redirect to the blob store (which must be able to presign URLs)
// rather than streamed through Trove.
func redirectDownloads(cfg config.Config) bool {
	return cfg.Blobs.Backend == config.BlobsS3 && cfg.Blobs.S3.DownloadMode == config.DownloadRedirect
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
