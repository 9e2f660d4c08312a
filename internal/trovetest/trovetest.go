// Package trovetest starts a real Trove server in-process for the tests of
// other packages: built by app.New as `trove serve` builds it, with the
// SQLite index and filesystem blobs in a temporary directory (or the
// PostgreSQL index and S3 bucket Options name), HTTPS with a self-signed
// certificate, and a first admin token.
package trovetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/s3blob"
)

// Server is a running in-process Trove.
type Server struct {
	URL        string // https://127.0.0.1:<port>
	Host       string // 127.0.0.1:<port>
	AdminToken string // a global admin token
	CAFile     string // PEM of the CA that signed the server certificate
	DataDir    string
	Index      store.Index
	Blobs      store.Blobs
	Signer     *signedurl.Signer
	// PrivateSigner signs the download URLs of private namespaces.
	PrivateSigner *signedurl.Signer
	// SigningSecret is the key-encryption secret of managed signing
	// keys: DataDir/signing-secret, created by the first managed key, as
	// the embedded default of `trove serve` (written at the start with
	// Options.PostgresDSN).
	SigningSecret signing.SecretFile
	// Downloads is the server's download counter: Flush writes what it
	// counted to Index.
	Downloads *downloads.Counter

	client *http.Client
}

// Options tunes a test server.
type Options struct {
	// DownloadURLTTL is the lifetime of signed file URLs (0: the
	// default of trove serve, 15m).
	DownloadURLTTL time.Duration
	// MaxZipBytes bounds each archive (0: the default, 1 GiB).
	MaxZipBytes int64
	// MaxUnpackedBytes bounds what each archive unpacks to (0: the
	// default, 1 GiB).
	MaxUnpackedBytes int64
	// PrivateDownloadURLTTL is the lifetime of the file URLs of private
	// namespaces (0: the default, 5m).
	PrivateDownloadURLTTL time.Duration
	// Login adjusts login.v1 (Index and Authenticator are filled in).
	Login login.Options
	// NoLocalPasswords starts Trove with --local-passwords=false.
	NoLocalPasswords bool
	// WebhookReceivers starts Trove with --webhook-allow-private and
	// --webhook-allow-http, so that webhooks can reach test receivers
	// (httptest servers on loopback).
	WebhookReceivers bool
	// GitServers starts Trove with --git-source-allow-private, so that
	// git sources can fetch from test git servers on loopback.
	GitServers bool
	// PostgresDSN, when set, starts Trove on this PostgreSQL index
	// (--index-backend postgres; pgtest.NewSchema gives one) instead of
	// SQLite, with a signing secret file of its own, as replicas need
	// one (--signing-secret-file DataDir/signing-secret).
	PostgresDSN string
	// S3, when its Bucket is set, starts Trove on this S3 bucket
	// (--blob-backend s3; s3test.NewBucket gives one) instead of files.
	S3 s3blob.Options
}

// Start starts a Trove for the duration of the test, built by app.New
// like `trove serve` from the configuration `trove serve --data-dir
// <temporary directory> --listen 127.0.0.1:<free port>` would have,
// adjusted by opts.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	noEnv := func(string) string { return "" }
	args := []string{"--data-dir", dir, "--listen", host, "--public-url", "https://" + host}
	if opt.NoLocalPasswords {
		args = append(args, "--local-passwords=false")
	}
	if opt.WebhookReceivers {
		args = append(args, "--webhook-allow-private", "--webhook-allow-http")
	}
	if opt.GitServers {
		args = append(args, "--git-source-allow-private")
	}
	if opt.PostgresDSN != "" {
		secret := filepath.Join(dir, "signing-secret")
		if err := os.WriteFile(secret, []byte(rand.Text()+rand.Text()+"\n"), 0o600); err != nil {
			ln.Close()
			t.Fatal(err)
		}
		args = append(args, "--index-backend", "postgres", "--postgres-dsn", opt.PostgresDSN, "--signing-secret-file", secret)
	}
	if b := opt.S3; b.Bucket != "" {
		args = append(args, "--blob-backend", "s3", "--s3-endpoint", b.Endpoint, "--s3-region", b.Region, "--s3-bucket", b.Bucket,
			"--s3-access-key", b.AccessKey, "--s3-secret-key", b.SecretKey)
		if b.Prefix != "" {
			args = append(args, "--s3-prefix", b.Prefix)
		}
		if b.PathStyle {
			args = append(args, "--s3-path-style")
		}
	}
	cfg, err := config.Load(args, noEnv)
	if err != nil {
		ln.Close()
		t.Fatalf("trovetest: configuration: %v", err)
	}
	if opt.DownloadURLTTL != 0 {
		cfg.DownloadURLTTL = opt.DownloadURLTTL
	}
	if opt.PrivateDownloadURLTTL != 0 {
		cfg.Access.PrivateDownloadURLTTL = opt.PrivateDownloadURLTTL
	}
	if opt.MaxZipBytes > 0 {
		cfg.Limits.MaxZipBytes = opt.MaxZipBytes
	}
	if opt.MaxUnpackedBytes > 0 {
		cfg.Limits.MaxUnpackedBytes = opt.MaxUnpackedBytes
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, app.Options{Logger: log, Listener: ln, Login: opt.Login})
	if err != nil {
		cancel()
		t.Fatalf("trovetest: %v", err)
	}
	admin, err := a.Bootstrap(ctx)
	if err != nil {
		cancel()
		a.Close()
		t.Fatalf("trovetest: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("trovetest: serve: %v", err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("trovetest: close: %v", err)
		}
	})

	s := &Server{URL: cfg.PublicURL, Host: host, AdminToken: admin, CAFile: a.CAFile(), DataDir: dir,
		Index: a.Index, Blobs: a.Blobs, Signer: a.Signer, PrivateSigner: a.PrivateSigner, SigningSecret: a.SigningSecret,
		Downloads: a.Downloads}
	s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: s.TLSConfig(t)}, Timeout: time.Minute}
	return s
}

// TLSConfig returns a client TLS configuration that trusts the server.
func (s *Server) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("trovetest: bad CA file")
	}
	return &tls.Config{RootCAs: pool}
}

// Blob stores content in the blob store, as a publish does before it
// writes the rows that name it (the index refuses rows naming a blob it
// lacks), and returns its digest.
func (s *Server) Blob(t testing.TB, content string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	d := hex.EncodeToString(sum[:])
	if err := s.Blobs.Put(t.Context(), d, int64(len(content)), strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	return d
}

// HTTPClient returns an HTTP client that trusts the server.
func (s *Server) HTTPClient() *http.Client { return s.client }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
