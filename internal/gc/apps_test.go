package gc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// server is one Trove replica started by app.New as `trove serve` starts
// it, on the shared PostgreSQL index and S3 bucket.
type server struct {
	app  *app.App
	url  string
	http *http.Client
}

func startServer(t *testing.T, dsn string, bucket s3blob.Options) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	cfg, err := config.Load([]string{"--data-dir", t.TempDir(), "--listen", host, "--public-url", "https://" + host,
		"--index-backend", "postgres", "--postgres-dsn", dsn,
		"--blob-backend", "s3", "--s3-endpoint", bucket.Endpoint, "--s3-region", bucket.Region, "--s3-bucket", bucket.Bucket,
		"--s3-path-style", "--s3-access-key", bucket.AccessKey, "--s3-secret-key", bucket.SecretKey,
	}, func(string) string { return "" })
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, app.Options{Listener: ln, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		a.Close()
	})
	pem, err := os.ReadFile(a.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &server{app: a, url: cfg.PublicURL,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: time.Minute}}
}

func (s *server) client(t *testing.T, token string) *client.Client {
	t.Helper()
	c, err := client.New(s.url, token, client.WithCAFile(s.app.CAFile()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// download fetches a module version as Terraform does, through s: the
// modules.v1 download answer, then the archive at X-Terraform-Get.
func (s *server) download(t *testing.T, token, version string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/modules/acme/net/aws/"+version+"/download", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	get := resp.Header.Get("X-Terraform-Get")
	if resp.StatusCode != http.StatusNoContent || get == "" {
		return nil, fmt.Errorf("download answer %d, X-Terraform-Get %q", resp.StatusCode, get)
	}
	resp, err = s.http.Get(get)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("archive answer %d", resp.StatusCode)
	}
	return body, err
}

// protocolVersions returns the versions of the modules.v1 versions
// answer of s.
func (s *server) protocolVersions(t *testing.T, token string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/modules/acme/net/aws/versions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Modules []struct {
			Versions []struct{ Version string } `json:"versions"`
		} `json:"modules"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK || len(doc.Modules) != 1 {
		t.Fatalf("versions answer %d: %v", resp.StatusCode, err)
	}
	out := map[string]bool{}
	for _, v := range doc.Modules[0].Versions {
		out[v.Version] = true
	}
	return out
}

// TestTwoServersPublishWhileCollecting is the race of
// TestTwoReplicasPublishWhileCollecting through two whole Trove servers
// (app.New, as trove serve) sharing one PostgreSQL index and one S3
// bucket: A's API publishes module versions in a loop, reusing archives;
// B's API deletes versions and B collects over and over with a grace
// period of seconds. Afterwards every version the API lists downloads
// through the modules protocol of the other server with the content of
// its digest, a delete through B reaches A's cache through the change
// feed, and a final collection leaves only referenced blobs.
func TestTwoServersPublishWhileCollecting(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	bucket := s3test.NewBucket(t)
	a, b := startServer(t, dsn, bucket), startServer(t, dsn, bucket)
	token, err := a.app.Bootstrap(t.Context())
	if err != nil || token == "" {
		t.Fatalf("first admin token: %q, %v", token, err)
	}
	ctx := t.Context()
	ca, cb := a.client(t, token), b.client(t, token)
	if _, err := ca.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	// Version i has an archive of its own, but every fourth one reuses
	// the archive of the version published eight before (which B may
	// have deleted and be collecting).
	archiveOf := func(i int) []byte {
		if i%4 == 0 && i >= 8 {
			i -= 8
		}
		return moduleArchive(t, i)
	}
	collector, err := gc.New(gc.Options{Index: b.app.Index, Blobs: b.app.Blobs, AllowShortGrace: true})
	if err != nil {
		t.Fatal(err)
	}
	const grace = 2 * time.Second
	const minVersions, maxVersions = 60, 1000
	done := make(chan struct{})
	var wg sync.WaitGroup
	var publishErr, collectErr error
	var reclaimed atomic.Int64
	versions, deleted, runs := 0, 0, 0
	wg.Add(2)
	go func() { // server A
		defer wg.Done()
		defer close(done)
		for i := 0; i < maxVersions && (i < minVersions || reclaimed.Load() == 0); i++ {
			versions++
			if _, publishErr = ca.PublishModule(ctx, client.ModuleUpload{Namespace: "acme", Name: "net", System: "aws",
				Version: fmt.Sprintf("1.%d.0", i), Archive: bytes.NewReader(archiveOf(i))}); publishErr != nil {
				return
			}
		}
	}()
	go func() { // server B
		defer wg.Done()
		rng := rand.New(rand.NewPCG(3, 4))
		for {
			select {
			case <-done:
				return
			default:
			}
			if m, err := cb.GetModule(ctx, "acme", "net", "aws"); err == nil && len(m.Versions) > 1 {
				// in use: the versions were just downloaded, and what this test
				// races is the collector, not the consumers' check
				if err := cb.DeleteModuleVersion(ctx, "acme", "net", "aws", m.Versions[rng.IntN(len(m.Versions))].Version, client.InUse()); err == nil {
					deleted++
				}
			}
			rep, err := collector.Run(ctx, gc.Run{Grace: grace})
			if err != nil {
				collectErr = err
				return
			}
			runs++
			reclaimed.Add(int64(len(rep.Reclaimed)))
		}
	}()
	wg.Wait()
	if publishErr != nil || collectErr != nil {
		t.Fatalf("publishing: %v; collecting: %v", publishErr, collectErr)
	}
	t.Logf("%d versions published, %d deleted, %d collections reclaimed %d blobs meanwhile", versions, deleted, runs, reclaimed.Load())
	if reclaimed.Load() == 0 {
		t.Fatalf("no collection reclaimed anything in %d publishes: the test did not race them", versions)
	}

	m, err := ca.GetModule(ctx, "acme", "net", "aws")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Versions)+deleted != versions {
		t.Errorf("%d versions listed and %d deleted, want %d in all", len(m.Versions), deleted, versions)
	}
	for _, v := range m.Versions {
		body, err := b.download(t, token, v.Version)
		sum := sha256.Sum256(body)
		if err != nil || hex.EncodeToString(sum[:]) != v.ArchiveDigest {
			t.Errorf("version %s does not download with its archive %s: %v", v.Version, v.ArchiveDigest, err)
		}
	}

	// A delete through B drops A's cached versions answer through the
	// change feed: well before the cache's maximum age (30 s).
	if len(m.Versions) > 1 {
		gone := m.Versions[len(m.Versions)-1].Version
		if got := a.protocolVersions(t, token); !got[gone] {
			t.Fatalf("A's versions answer lacks %s before its delete: %v", gone, got)
		}
		if err := cb.DeleteModuleVersion(ctx, "acme", "net", "aws", gone, client.InUse()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for a.protocolVersions(t, token)[gone] && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a.protocolVersions(t, token)[gone] {
			t.Errorf("A still lists %s, deleted through B: the change feed did not reach A's cache", gone)
		}
	}

	final, err := gc.New(gc.Options{Index: b.app.Index, Blobs: b.app.Blobs, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := final.Run(ctx, gc.Run{}); err != nil {
		t.Fatal(err)
	}
	referenced := map[string]bool{}
	if err := a.app.Index.ReferencedBlobs(ctx, func(d string) error { referenced[d] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := a.app.Blobs.Walk(ctx, func(d string, _ int64) error {
		if !referenced[d] {
			t.Errorf("blob %s survived the final collection although no version names it", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
