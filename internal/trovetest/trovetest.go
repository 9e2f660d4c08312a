// Package trovetest starts a real Trove server in-process for the tests of
// other packages: SQLite index and filesystem blobs in a temporary
// directory, the real handlers, HTTPS with a self-signed certificate, and
// a first admin token.
package trovetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
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
	// the embedded default of `trove serve`.
	SigningSecret signing.SecretFile

	client *http.Client
}

// Options tunes a test server.
type Options struct {
	// DownloadURLTTL is the lifetime of signed file URLs (default 15m).
	DownloadURLTTL time.Duration
	// MaxZipBytes bounds each archive (default 1 GiB).
	MaxZipBytes int64
	// PrivateDownloadURLTTL is the lifetime of the file URLs of private
	// namespaces (default 5m).
	PrivateDownloadURLTTL time.Duration
	// Login adjusts login.v1 (Index is filled in).
	Login login.Options
}

// Start starts a Trove for the duration of the test.
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	if opt.DownloadURLTTL == 0 {
		opt.DownloadURLTTL = 15 * time.Minute
	}
	if opt.PrivateDownloadURLTTL == 0 {
		opt.PrivateDownloadURLTTL = 5 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	idx, err := sqlite.Open(ctx, filepath.Join(dir, "trove.db"))
	if err != nil {
		t.Fatalf("trovetest: open index: %v", err)
	}
	blobs, err := fsblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatalf("trovetest: open blobs: %v", err)
	}
	key, err := idx.Secret(ctx, "url-signing-key", func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		t.Fatalf("trovetest: signing key: %v", err)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	public, _ := url.Parse("https://" + host)
	signer := signedurl.New(key, opt.DownloadURLTTL)
	privateSigner := signedurl.New(key, opt.PrivateDownloadURLTTL)
	authn := auth.NewAuthenticator(idx)
	access := auth.NewAccess(authn, idx)
	opt.Login.Index = idx
	opt.Login.Authenticator = authn
	if opt.Login.Logger == nil {
		opt.Login.Logger = log
	}
	loginSvc, err := login.New(ctx, opt.Login)
	if err != nil {
		t.Fatalf("trovetest: login: %v", err)
	}

	var srv *server.Server
	secret := signing.SecretFile{Path: filepath.Join(dir, "signing-secret"), Create: true}
	managed := signing.NewManaged(signing.ManagedOptions{Keys: idx, Secret: secret})
	pub := publish.New(publish.Options{
		Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp"), MaxZipBytes: opt.MaxZipBytes, Logger: log,
		OnPublish: func(ns, typ string) { srv.InvalidateProvider(ns, typ) }, Managed: managed,
	})
	mods := modules.NewPublisher(modules.Options{
		Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp"), MaxArchiveBytes: opt.MaxZipBytes, Logger: log,
		OnChange: func(ns, name, system string) { srv.InvalidateModule(ns, name, system) },
	})
	apiHandler := api.New(api.Options{Index: idx, Publisher: pub, Modules: mods, Auth: authn, Access: access, Logger: log, Managed: managed})
	srv, err = server.New(server.Options{Index: idx, Blobs: blobs, Signer: signer, PublicURL: public, API: apiHandler, Logger: log,
		Access: access, PrivateSigner: privateSigner, Login: loginSvc})
	if err != nil {
		t.Fatalf("trovetest: server: %v", err)
	}
	tlsFiles, err := server.EnsureSelfSigned(filepath.Join(dir, "tls"), []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatalf("trovetest: tls: %v", err)
	}
	admin, err := auth.Bootstrap(ctx, idx, time.Now())
	if err != nil {
		t.Fatalf("trovetest: bootstrap: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, &tlsFiles) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("trovetest: serve: %v", err)
		}
		idx.Close()
	})

	s := &Server{URL: public.String(), Host: host, AdminToken: admin, CAFile: tlsFiles.CAFile, DataDir: dir,
		Index: idx, Blobs: blobs, Signer: signer, PrivateSigner: privateSigner, SigningSecret: secret}
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

// HTTPClient returns an HTTP client that trusts the server.
func (s *Server) HTTPClient() *http.Client { return s.client }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
