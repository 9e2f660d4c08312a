package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// feedBound is how long a replica may serve a versions document that
// another replica's publish made stale. It is a third of the cache's
// maximum age, so a replica that passes within it has been told of the
// change by the index's change feed rather than by its cache expiring.
const feedBound = providers.DefaultMaxAge / 3

// TestTwoReplicas runs Trove as a deployment of two replicas sharing one
// PostgreSQL index and one S3 bucket, each with its own data directory
// (for staging uploads) and both with the same TLS certificate. What one
// replica publishes, the other serves, its cached documents kept in step
// by the change feed, and terraform installs from it; two rival
// publishes of one version through different replicas have exactly one
// winner, which both replicas then serve.
func TestTwoReplicas(t *testing.T) {
	requireTerraform(t)
	dsn := pgtest.NewDatabase(t)
	bucket := s3test.NewBucket(t)
	cert, err := server.EnsureSelfSigned(filepath.Join(t.TempDir(), "tls"), []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatalf("creating the replicas' certificate: %v", err)
	}
	// The secrets go through the environment, as an operator would pass
	// them; the rest as flags.
	env := []string{"TROVE_POSTGRES_DSN=" + dsn, "TROVE_S3_SECRET_KEY=" + bucket.SecretKey}
	flags := []string{
		"--index-backend", "postgres",
		"--blob-backend", "s3", "--s3-endpoint", bucket.Endpoint, "--s3-region", bucket.Region,
		"--s3-bucket", bucket.Bucket, "--s3-path-style", "--s3-access-key", bucket.AccessKey,
		"--download-mode", "redirect",
		"--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile,
	}
	// One after the other: the first start on the fresh index prints the
	// first admin token, the second must not (its stop checks that).
	a := startReplica(t, cert, true, env, flags)
	b := startReplica(t, cert, false, env, flags)
	b.AdminToken = a.AdminToken // the tokens are in the shared index

	key, publishToken := setupNamespace(t, a)
	publish(t, a, publishToken, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	// B has never rendered the provider: it reads the index directly.
	if got := getVersions(t, b).platforms(); !slices.Equal(slices.Sorted(maps.Keys(got)), []string{"1.0.0"}) {
		t.Fatalf("replica B lists versions %v after replica A published 1.0.0, want [1.0.0]", got)
	}

	// B now holds 1.0.0's versions document in its cache; a publish
	// through A must reach it through the change feed.
	rel := packageRelease(t, key, releaseSpec{Version: "1.1.0"})
	publish(t, a, publishToken, rel)
	waitForVersion(t, b, "1.1.0")

	t.Run("terraform installs through replica B", func(t *testing.T) {
		tf := newTerraform(t, b, "") // cert.CAFile, which both replicas' certificate chains to
		dir := writeProject(t, b, "~> 1.0", "from-replica-b")
		res := tf.mustRun(t, dir, "init", "-input=false")
		want := fmt.Sprintf("Installed %s/%s/%s v1.1.0 (self-signed, key ID %s)", b.Host, namespace, providerType, key.KeyID)
		if !strings.Contains(res.Flat, want) {
			t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
		}
		lock := readLock(t, b, dir)
		if lock.Version != "1.1.0" {
			t.Errorf("lock file version = %q, want 1.1.0", lock.Version)
		}
		h1, err := dirhash.HashZip(rel.path(rel.zipName(hostPlatform)), dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		wantHashes := []string{h1}
		for line := range strings.Lines(string(rel.sums(t))) {
			digest, _, _ := strings.Cut(line, "  ")
			wantHashes = append(wantHashes, "zh:"+digest)
		}
		slices.Sort(wantHashes)
		if !slices.Equal(lock.Hashes, wantHashes) {
			t.Errorf("lock file hashes = %q\nwant the h1: of the %s package and a zh: for every line of SHA256SUMS: %q", lock.Hashes, hostPlatform, wantHashes)
		}
		applyAndCheck(t, tf, dir, "from-replica-b")
	})

	t.Run("rival publishes through both replicas", func(t *testing.T) {
		replicas := []*troveServer{a, b}
		for round := range 3 {
			version := fmt.Sprintf("2.0.%d", round)
			t.Run(version, func(t *testing.T) {
				rivals := []*dist{
					packageRelease(t, key, releaseSpec{Version: version, Platforms: []string{hostPlatform}}),
					packageRelease(t, key, releaseSpec{Version: version, Platforms: []string{hostPlatform}, Modified: fixedZipTime.Add(time.Hour)}),
				}
				if bytes.Equal(rivals[0].sums(t), rivals[1].sums(t)) {
					t.Fatal("the two releases have the same SHA256SUMS; the race would be an idempotent retry")
				}
				if round%2 == 1 { // give each replica each release once
					rivals[0], rivals[1] = rivals[1], rivals[0]
				}
				results := make([]cliResult, len(rivals))
				errs := make([]error, len(rivals))
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i, d := range rivals {
					home := t.TempDir()
					wg.Go(func() {
						<-start
						results[i], errs[i] = replicas[i].runCLI(t.Context(), home, publishToken, "publish", "--namespace", namespace, d.Dir)
					})
				}
				close(start)
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}

				winner := -1
				for i, r := range results {
					switch {
					case r.Code == 0 && winner == -1:
						winner = i
					case r.Code == 0:
						t.Fatalf("both publishes of %s with different bytes succeeded:\nthrough A: %+v\nthrough B: %+v", version, results[0], results[1])
					case r.Code != 1 || !strings.Contains(r.Stderr, "already published with different content"):
						t.Errorf("losing publish through replica %c: exit %d, stderr %q; want exit 1 and a conflict", 'A'+i, r.Code, r.Stderr)
					}
				}
				if winner == -1 {
					t.Fatalf("neither publish of %s succeeded:\nthrough A: %+v\nthrough B: %+v", version, results[0], results[1])
				}
				t.Logf("the publish through replica %c won", 'A'+winner)
				won := rivals[winner]
				wantZip := won.zipDigest(t, hostPlatform)
				for i, s := range replicas {
					waitForVersion(t, s, version) // the loser's replica learns of it from the feed
					doc, resp := getDownload(t, s, version, hostPlatform)
					if doc.SHASum != wantZip {
						t.Errorf("replica %c serves shasum %s, want the winner's %s", 'A'+i, doc.SHASum, wantZip)
					}
					if r := s.get(t, resp.resolve(t, doc.DownloadURL)); r.Status != http.StatusOK || sha256Hex(r.Body) != wantZip {
						t.Errorf("replica %c download_url: status %d, SHA-256 %s; want 200 and %s", 'A'+i, r.Status, sha256Hex(r.Body), wantZip)
					}
					if r := s.get(t, resp.resolve(t, doc.SHASumsURL)); r.Status != http.StatusOK || !bytes.Equal(r.Body, won.sums(t)) {
						t.Errorf("replica %c shasums_url: status %d, body %q; want 200 and the winner's SHA256SUMS %q", 'A'+i, r.Status, r.Body, won.sums(t))
					}
				}
			})
		}
	})

	// Nothing was kept on the replicas' disks: the index and the blobs
	// are the shared ones.
	for i, s := range []*troveServer{a, b} {
		for _, name := range []string{"trove.db", "blobs"} {
			if _, err := os.Stat(filepath.Join(s.DataDir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("replica %c's data directory holds %s (stat: %v): it did not use the shared backends", 'A'+i, name, err)
			}
		}
	}
	if keys := s3test.Keys(t, bucket); len(keys) == 0 {
		t.Error("the shared bucket is empty after the publishes")
	}
}

// waitForVersion polls s's versions document until it lists version,
// failing the test if it still does not after feedBound.
func waitForVersion(t *testing.T, s *troveServer, version string) {
	t.Helper()
	deadline := time.Now().Add(feedBound)
	for {
		listed := getVersions(t, s).platforms()
		if _, ok := listed[version]; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica on port %d still lists versions %v, without %s, %s after it was published: the change feed did not reach it", s.Port, slices.Sorted(maps.Keys(listed)), version, feedBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startReplica runs `trove serve` on a fresh data directory with the
// shared backends (flags, and secrets in env) and the shared certificate
// cert, and stops it when the test ends. first says whether it is the
// first replica on the index, which must print the first admin token; the
// others must not print one (troveServer.stop checks).
func startReplica(t *testing.T, cert server.TLSFiles, first bool, env, flags []string) *troveServer {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	var lastErr error
	for range 3 { // another process may take the port meanwhile
		s, err := tryStartReplica(t, dataDir, cert, first, env, flags)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting a trove replica: %v", lastErr)
	return nil
}

// tryStartReplica is tryStartTrove for a server with a certificate of its
// operator's (--tls-cert), whose banner has no SSL_CERT_FILE line.
func tryStartReplica(t *testing.T, dataDir string, cert server.TLSFiles, first bool, env, flags []string) (*troveServer, error) {
	port := freePort(t)
	s := &troveServer{
		Port:    port,
		Host:    "localhost:" + strconv.Itoa(port),
		Addr:    "https://localhost:" + strconv.Itoa(port),
		DataDir: dataDir,
		CAFile:  cert.CAFile,
		exited:  make(chan struct{}),
		first:   first,
	}
	logFile, err := os.CreateTemp(t.TempDir(), "trove-serve-*.log")
	if err != nil {
		return nil, err
	}
	s.stderr = logFile.Name()
	args := append([]string{"serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--public-url", s.Addr,
		"--data-dir", dataDir,
	}, flags...)
	s.cmd = exec.Command(troveBin, args...)
	s.cmd.Env = append(baseEnv(t.TempDir()), env...)
	s.cmd.Stderr = logFile
	stdout, stdoutW, err := os.Pipe() // see tryStartTrove
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s.cmd.Stdout = stdoutW
	err = s.cmd.Start()
	logFile.Close()
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	s.stdout = newLineLog(stdout)
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	fail := func(format string, args ...any) (*troveServer, error) {
		s.kill()
		return nil, fmt.Errorf("%s\nstdout:\n%s\nstderr:\n%s", fmt.Sprintf(format, args...), s.stdout, s.log())
	}
	if _, ok := s.stdout.wait(ctx, "Trove listening on "+s.Addr); !ok {
		return fail("trove serve did not print %q", "Trove listening on "+s.Addr)
	}
	if first {
		line, ok := s.stdout.wait(ctx, "export TROVE_TOKEN=")
		if !ok {
			return fail("the first replica to start on a fresh index did not print the export TROVE_TOKEN= line")
		}
		s.AdminToken = strings.TrimPrefix(line, "export TROVE_TOKEN=")
	}
	for {
		resp, err := s.httpClient(t).Get(s.Addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return fail("trove serve exited: %v", s.err)
		case <-ctx.Done():
			return fail("/healthz did not answer 200 (last error: %v)", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
