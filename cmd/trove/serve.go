package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store"
)

// urlSigningKeyName is the name of the shared secret that signs download
// URLs; every replica sharing the index uses the same one.
const urlSigningKeyName = app.URLSigningKeyName

// runServer builds a Trove as cfg says (app.New) and serves until ctx
// ends, then shuts down gracefully. It prints the start-up banner to
// stdout and logs to stderr.
func runServer(ctx context.Context, cfg config.Config, stdout, stderr io.Writer) error {
	logOut := newFlushingWriter(stderr, 100*time.Millisecond)
	defer logOut.Close()
	log := newLogger(cfg, logOut)
	applyMemoryLimit(log)

	// The access log goes to the same writer in the same format, written
	// without slog's per-line cost (server.AccessLog).
	access := &server.AccessLog{W: logOut, JSON: cfg.LogFormat == "json", Level: cfg.LogLevel}
	a, err := app.New(ctx, cfg, app.Options{Logger: log, CertHosts: certHosts(cfg), UserAgent: "Trove/" + buildVersion(), AccessLog: access})
	if err != nil {
		return err
	}
	defer a.Close()
	cliConfig := ""
	if needsLocalHostName(cfg.PublicURL) {
		if cliConfig, err = writeCLIConfig(cfg.DataDir, a.Server.Services()); err != nil {
			return fmt.Errorf("writing the CLI configuration for %s: %w", localHostName, err)
		}
	}
	admin, err := a.Bootstrap(ctx)
	if err != nil {
		return err
	}
	printBanner(stdout, cfg, a.Listener.Addr(), a.CAFile(), cliConfig, admin)
	log.Info("trove started", append([]any{"listen", a.Listener.Addr().String(), "public_url", cfg.PublicURL, "data_dir", cfg.DataDir}, storageAttrs(cfg)...)...)
	if err := a.Serve(ctx); err != nil {
		return err
	}
	log.Info("trove stopped")
	return nil
}

// openIndex opens the metadata backend that cfg selects.
func openIndex(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Index, error) {
	return app.OpenIndex(ctx, cfg, log)
}

// openBlobs opens the blob backend that cfg selects.
func openBlobs(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Blobs, error) {
	return app.OpenBlobs(ctx, cfg, log)
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

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
