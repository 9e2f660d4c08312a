package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// TestDownloadCountsAcrossReplicas runs two Troves on one PostgreSQL
// index. Both count downloads of the same versions; one flushes midway,
// then both stop gracefully (no explicit flush): the stored totals are
// the exact sums of both replicas' downloads.
func TestDownloadCountsAcrossReplicas(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	blobs := t.TempDir()
	replica := func() (*App, func()) {
		cfg, err := config.Load([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:1", "--insecure-http",
			"--public-url", "https://trove.test", "--index-backend", "postgres", "--postgres-dsn", dsn, "--fs-blob-dir", blobs,
			"--downloads-flush-interval", "1h"}, // only the explicit and the final flushes write
			func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		a, err := New(ctx, cfg, Options{Listener: testListener(t)})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Serve(ctx) }()
		stop := func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		return a, sync.OnceFunc(stop)
	}
	a, stopA := replica()
	defer stopA()
	b, stopB := replica()
	defer stopB()
	seed(t, a)

	download := func(app *App, path string, want, times int) {
		t.Helper()
		for range times {
			resp, err := http.Get("http://" + app.Listener.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("GET %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
	}
	const linux, module = "/v1/providers/acme/widget/1.0.0/download/linux/amd64", "/v1/modules/acme/net/aws/1.0.0/download"
	var wg sync.WaitGroup
	wg.Go(func() { download(a, linux, http.StatusOK, 30); download(a, module, http.StatusNoContent, 7) })
	wg.Go(func() { download(b, linux, http.StatusOK, 20); download(b, module, http.StatusNoContent, 5) })
	wg.Wait()
	if err := a.Downloads.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	download(a, linux, http.StatusOK, 1)
	download(b, linux, http.StatusOK, 2)
	stopA() // graceful stops flush what is pending
	stopB()

	idx, err := OpenIndex(t.Context(), config.Config{Index: config.Index{Backend: config.IndexPostgres,
		Postgres: config.Postgres{DSN: dsn, MigrateOnStart: false}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ps, err := idx.ProviderDownloads(t.Context(), "acme", "widget")
	if err != nil || len(ps) != 1 || ps[0].Count != 53 || ps[0].OS != "linux" {
		t.Errorf("stored provider downloads %+v, %v; want linux_amd64 53", ps, err)
	}
	ms, err := idx.ModuleDownloads(t.Context(), "acme", "net", "aws")
	if err != nil || registry.DownloadTotal(ms) != 12 {
		t.Errorf("stored module downloads %+v, %v; want 12", ms, err)
	}
}

// seed stores provider acme/widget 1.0.0 (linux_amd64) and module
// acme/net/aws 1.0.0 in a public namespace acme.
func seed(t *testing.T, a *App) {
	t.Helper()
	ctx := t.Context()
	// Stored, as a publish stores them before its rows: the index checks.
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		d := hex.EncodeToString(h[:])
		if err := a.Blobs.Put(ctx, d, int64(len(s)), strings.NewReader(s)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := a.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := a.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.0.0",
		Protocols: []string{"6.0"}, PublishedAt: time.Now(), SHASumsDigest: sum("sums"), SHASumsSignatureDigest: sum("sig"),
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
			ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxx\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: time.Now()},
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip", SHA256: sum("zip"), Size: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Index.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: sum("net"), ArchiveFormat: "tar.gz", ArchiveSize: 1, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}
