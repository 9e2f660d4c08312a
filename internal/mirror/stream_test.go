package mirror

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/files"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
)

// The tests of this file run a test registry (testRegistry) serving one
// signed release of acme/time 1.0.0 with a package of any size, and a
// Mirror behind the file route (internal/files) as trove serve mounts it.

const (
	timeZip     = "terraform-provider-time_1.0.0_linux_amd64.zip"
	timeVersion = "1.0.0"
)

func newKey(t testing.TB) *signingtest.Key {
	return signingtest.NewKeyWith(t, "upstream", signingtest.Options{Algorithm: signingtest.Ed25519})
}

// writePackage writes a provider zip whose executable holds size bytes
// (stored, not compressed), the same bytes on every call, without
// holding them in memory.
func writePackage(w io.Writer, size int64) error {
	zw := zip.NewWriter(w)
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-time_v1.0.0", Method: zip.Store, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	for left := size; left > 0; left -= int64(len(chunk)) {
		if _, err := fw.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
			return err
		}
	}
	return zw.Close()
}

// testRegistry is a providers.v1 registry over TLS on loopback.
type testRegistry struct {
	host        string
	srv         *httptest.Server
	key         *signingtest.Key
	signedBy    *signingtest.Key // signs SHA256SUMS (key, unless a test changes it)
	execSize    int64
	digest      string
	zipSize     int64
	archiveGets atomic.Int64
	down        atomic.Bool
	tamper      atomic.Bool   // one byte of the package is changed
	gate        chan struct{} // if set, the package stops at half until it is closed
}

// newTestRegistry serves a package whose executable has execSize bytes,
// signed by key (a new one if nil).
func newTestRegistry(t testing.TB, host string, execSize int64, key *signingtest.Key) *testRegistry {
	t.Helper()
	return newRawRegistry(t, host, execSize, key, nil)
}

// newRawRegistry is newTestRegistry serving raw as the package (signed
// as any other), if raw is not nil.
func newRawRegistry(t testing.TB, host string, execSize int64, key *signingtest.Key, raw []byte) *testRegistry {
	t.Helper()
	if key == nil {
		key = newKey(t)
	}
	u := &testRegistry{host: host, key: key, execSize: execSize}
	u.signedBy = u.key
	write := func(w io.Writer) error {
		if raw != nil {
			_, err := w.Write(raw)
			return err
		}
		return writePackage(w, execSize)
	}
	h := sha256.New()
	cw := &countWriter{w: h}
	if err := write(cw); err != nil {
		t.Fatal(err)
	}
	u.digest, u.zipSize = hex.EncodeToString(h.Sum(nil)), cw.n
	sums := []byte(u.digest + "  " + timeZip + "\n")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/providers/acme/time/versions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"versions": []any{map[string]any{
			"version": timeVersion, "protocols": []string{"5.0"}, "platforms": []any{map[string]string{"os": "linux", "arch": "amd64"}},
		}}})
	})
	mux.HandleFunc("GET /v1/providers/acme/time/1.0.0/download/linux/amd64", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": timeZip,
			"download_url": "/files/" + timeZip, "shasums_url": "/files/SHA256SUMS", "shasums_signature_url": "/files/SHA256SUMS.sig",
			"shasum":       u.digest,
			"signing_keys": map[string]any{"gpg_public_keys": []any{map[string]string{"key_id": u.key.KeyID, "ascii_armor": u.key.ArmoredPublic}}},
		})
	})
	mux.HandleFunc("GET /files/SHA256SUMS", func(w http.ResponseWriter, r *http.Request) { w.Write(sums) })
	mux.HandleFunc("GET /files/SHA256SUMS.sig", func(w http.ResponseWriter, r *http.Request) { w.Write(u.signedBy.Sign(sums)) })
	mux.HandleFunc("GET /files/"+timeZip, func(w http.ResponseWriter, r *http.Request) {
		u.archiveGets.Add(1)
		w.Header().Set("Content-Length", strconv.FormatInt(u.zipSize, 10))
		pw := &packageWriter{u: u, w: w, r: r, tamperAt: -1}
		if u.tamper.Load() {
			pw.tamperAt = 100
		}
		write(pw)
	})
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// hold makes the package stop at half until release.
func (u *testRegistry) hold(t testing.TB) (release func()) {
	u.gate = make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(u.gate) }) }
	t.Cleanup(release) // before the server's Close, which waits for the handler
	return release
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// packageWriter sends the package: tampered at tamperAt, stopped at half
// while the registry's gate is set and open.
type packageWriter struct {
	u        *testRegistry
	w        http.ResponseWriter
	r        *http.Request
	n        int64
	tamperAt int64
}

func (p *packageWriter) Write(b []byte) (int, error) {
	if p.tamperAt >= p.n && p.tamperAt < p.n+int64(len(b)) {
		b = bytes.Clone(b)
		b[p.tamperAt-p.n] ^= 0xff
	}
	half := p.u.zipSize / 2
	if p.u.gate != nil && p.n <= half && p.n+int64(len(b)) > half {
		k := half - p.n
		if _, err := p.w.Write(b[:k]); err != nil {
			return 0, err
		}
		http.NewResponseController(p.w).Flush()
		p.n += k
		select {
		case <-p.u.gate:
		case <-p.r.Context().Done():
			return 0, p.r.Context().Err()
		}
		n, err := p.w.Write(b[k:])
		p.n += int64(n)
		return int(k) + n, err
	}
	n, err := p.w.Write(b)
	p.n += int64(n)
	return n, err
}

// presigner adds store.Presigner to the filesystem store, standing in
// for an object store (its URLs lead nowhere: the tests do not follow
// redirects).
type presigner struct{ *fsblob.Store }

func (presigner) PresignGet(ctx context.Context, digest, filename string, ttl time.Duration) (string, error) {
	return "https://objects.test/" + digest, nil
}

// env is a Mirror of some test registries behind the file route.
type env struct {
	m      *Mirror
	idx    *sqlite.Index
	blobs  *fsblob.Store
	tmp    string
	signer *signedurl.Signer
	srv    *httptest.Server
}

func newEnv(t testing.TB, redirect bool, idle time.Duration, ups ...*testRegistry) *env {
	t.Helper()
	return openEnv(t, t.TempDir(), t.Cleanup, redirect, idle, ups...)
}

// openEnv is newEnv in dir, with its closing steps handed to cleanup
// (t.Cleanup, or a benchmark's own list to run after each iteration).
func openEnv(t testing.TB, dir string, cleanup func(func()), redirect bool, idle time.Duration, ups ...*testRegistry) *env {
	t.Helper()
	ctx := context.Background()
	idx, err := sqlite.Open(ctx, filepath.Join(dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	cleanup(func() { idx.Close() })
	blobs, err := fsblob.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups {
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw})
		if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
			Host: u.host, ServiceURL: u.srv.URL + "/v1/providers/", CACertificates: string(ca),
			Allow: []registry.MirrorRule{{Provider: "acme/*"}}, CreatedAt: time.Now(), UpdatedAt: time.Now(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{idx: idx, blobs: blobs, tmp: filepath.Join(dir, "tmp"), signer: signedurl.New([]byte("test key"), 10*time.Minute)}
	e.m, err = New(Options{Index: idx, Blobs: blobs, TempDir: e.tmp, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	cleanup(e.m.Close) // before the index closes: no download outlives it
	var served store.Blobs = blobs
	if redirect {
		served = presigner{blobs}
	}
	mux := http.NewServeMux()
	files.New(files.Options{Blobs: served, Signer: e.signer, RedirectDownloads: redirect, Fetcher: e.m}).Register(mux)
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.EnableHTTP2 = true
	e.srv.StartTLS()
	cleanup(e.srv.Close)
	return e
}

// origin names acme/time 1.0.0 linux_amd64 of host.
func origin(host string) registry.PackageOrigin {
	return registry.PackageOrigin{Host: host, Namespace: "acme", Type: "time", Version: timeVersion, OS: "linux", Arch: "amd64"}
}

// version mirrors acme/time 1.0.0 of host.
func (e *env) version(t testing.TB, host string) {
	t.Helper()
	if _, err := e.m.MirroredVersion(context.Background(), host, "acme", "time", timeVersion); err != nil {
		t.Fatal(err)
	}
}

// url is the signed file URL of the package of host, as the mirror
// document lists it.
func (e *env) url(u *testRegistry) string {
	return e.srv.URL + e.signer.PathFrom(u.digest, timeZip, origin(u.host).String())
}

// clients are an HTTP/1.1 and an HTTP/2 client of e, following no
// redirect.
func (e *env) clients(t testing.TB) map[string]*http.Client {
	h2 := e.srv.Client()
	tr := h2.Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = false
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return map[string]*http.Client{
		"HTTP/1.1": {Transport: tr, CheckRedirect: noRedirect},
		"HTTP/2":   {Transport: h2.Transport, CheckRedirect: noRedirect},
	}
}

// stored reports whether the mirror holds the package of host or has
// its blob.
func (e *env) stored(t testing.TB, u *testRegistry) bool {
	t.Helper()
	ctx := context.Background()
	_, err := e.blobs.Stat(ctx, u.digest)
	if err == nil {
		return true
	}
	mv, err := e.idx.GetMirroredVersion(ctx, u.host, "acme", "time", timeVersion)
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := mv.Platform("linux", "amd64")
	return pl.Held()
}

// TestTamperedArchiveNeverEndsCleanly: a package whose bytes do not
// match the signed SHA256SUMS reaches no client as a whole response, over
// HTTP/1.1 (Content-Length never completed) or HTTP/2 (the stream is
// reset), streamed or with redirects, and nothing of it is stored.
func TestTamperedArchiveNeverEndsCleanly(t *testing.T) {
	for _, redirect := range []bool{false, true} {
		u := newTestRegistry(t, "upstream.example", 1<<20, nil)
		e := newEnv(t, redirect, 0, u)
		e.m.refusals = newRefusals(-1, 0) // each client below streams a download of its own, none is refused from memory
		e.version(t, u.host)
		u.tamper.Store(true)
		for proto, client := range e.clients(t) {
			t.Run(fmt.Sprintf("%s redirect=%v", proto, redirect), func(t *testing.T) {
				resp, err := client.Get(e.url(u))
				if err != nil {
					t.Fatal(err)
				}
				if want := map[string]int{"HTTP/1.1": 1, "HTTP/2": 2}[proto]; resp.ProtoMajor != want {
					t.Fatalf("answered over %s, want %s", resp.Proto, proto)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusFound:
					t.Fatalf("redirected to %s before the package was verified", resp.Header.Get("Location"))
				case resp.StatusCode == http.StatusOK && err == nil:
					t.Fatalf("a tampered package ended cleanly after %d of %d bytes", n, u.zipSize)
				case resp.StatusCode == http.StatusOK && n >= u.zipSize:
					t.Errorf("every byte of a tampered package was sent (%d), then %v", n, err)
				case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadGateway:
					t.Errorf("status %d, want 200 broken off, or 502", resp.StatusCode)
				}
				t.Logf("status %d, %d of %d bytes, then %v", resp.StatusCode, n, u.zipSize, err)
			})
		}
		// Waiting for the download (or a new one) to end: nothing stored.
		if err := e.m.FetchPackage(context.Background(), origin(u.host)); !registry.IsKind(err, registry.UpstreamInvalid) {
			t.Errorf("FetchPackage of the tampered package: %v, want UpstreamInvalid", err)
		}
		if e.stored(t, u) {
			t.Errorf("redirect=%v: the tampered package was stored", redirect)
		}
		if left, _ := os.ReadDir(e.tmp); len(left) != 0 {
			t.Errorf("redirect=%v: staged files left: %v", redirect, left)
		}
	}
}

// TestSignedNonZipNeverEndsCleanly: a package that matches the signed
// SHA256SUMS but is not a zip archive (no zip directory at its end) is
// refused like a tampered one: no client's answer ends cleanly, nothing is
// stored.
func TestSignedNonZipNeverEndsCleanly(t *testing.T) {
	raw := bytes.Repeat([]byte("not a zip archive, though signed. "), 8<<10) // 272 KiB: more than HoldBack
	u := newRawRegistry(t, "upstream.example", 0, nil, raw)
	e := newEnv(t, false, 0, u)
	e.m.refusals = newRefusals(-1, 0) // each client below streams a download of its own, none is refused from memory
	e.version(t, u.host)
	for proto, client := range e.clients(t) {
		resp, err := client.Get(e.url(u))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && err == nil:
			t.Errorf("%s: a signed package that is not a zip ended cleanly after %d of %d bytes", proto, n, len(raw))
		case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadGateway:
			t.Errorf("%s: status %d, want 200 broken off, or 502", proto, resp.StatusCode)
		}
	}
	err := e.m.FetchPackage(context.Background(), origin(u.host))
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "not a zip archive") {
		t.Errorf("FetchPackage of a signed package that is not a zip: %v, want UpstreamInvalid saying it is not a zip archive", err)
	}
	if e.stored(t, u) {
		t.Error("a package that is not a zip was stored")
	}
}

// TestVerifiedArchiveEndsCleanly: the same route serves a good package
// whole over both protocols, and redirects to it once it is stored.
func TestVerifiedArchiveEndsCleanly(t *testing.T) {
	u := newTestRegistry(t, "upstream.example", 1<<20, nil)
	e := newEnv(t, true, 0, u)
	e.version(t, u.host)
	for proto, client := range e.clients(t) {
		resp, err := client.Get(e.url(u))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusFound && u.archiveGets.Load() == 1:
			// the other client's download stored it
		case resp.StatusCode != http.StatusOK || err != nil || n != u.zipSize || hex.EncodeToString(h.Sum(nil)) != u.digest:
			t.Errorf("%s: status %d, %d of %d bytes, %v", proto, resp.StatusCode, n, u.zipSize, err)
		}
	}
	if err := e.m.FetchPackage(context.Background(), origin(u.host)); err != nil || !e.stored(t, u) || u.archiveGets.Load() != 1 {
		t.Errorf("after the downloads: %v, stored %v, %d upstream downloads", err, e.stored(t, u), u.archiveGets.Load())
	}
}

// TestWaitersStreamWhileUpstreamSends: every client asking for a package
// being fetched gets its first bytes while the upstream is still sending
// (here: stopped at half), not once the fetch ended; the upstream is
// asked once.
func TestWaitersStreamWhileUpstreamSends(t *testing.T) {
	u := newTestRegistry(t, "upstream.example", 1<<20, nil)
	release := u.hold(t)
	e := newEnv(t, false, 0, u)
	e.version(t, u.host)
	client := e.clients(t)["HTTP/1.1"]
	const waiters = 8
	first := make(chan struct{}, waiters)
	results := make(chan error, waiters)
	for range waiters {
		go func() {
			resp, err := client.Get(e.url(u))
			if err != nil {
				results <- err
				first <- struct{}{}
				return
			}
			defer resp.Body.Close()
			b := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, b); err != nil {
				results <- err
				first <- struct{}{}
				return
			}
			first <- struct{}{}
			h := sha256.New()
			h.Write(b)
			n, err := io.Copy(h, resp.Body)
			if err == nil && (n+1 != u.zipSize || hex.EncodeToString(h.Sum(nil)) != u.digest) {
				err = fmt.Errorf("got %d bytes of another package", n+1)
			}
			results <- err
		}()
	}
	deadlock := time.After(5 * time.Minute) // a guard against hanging, no timing assertion
	for range waiters {
		select {
		case <-first:
		case <-deadlock:
			t.Fatal("the waiters got no byte while the upstream held back the second half")
		}
	}
	select {
	case <-u.gate:
		t.Fatal("the gate opened early")
	default: // every waiter had bytes while the upstream was still sending
	}
	release()
	for range waiters {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
	if err := e.m.FetchPackage(context.Background(), origin(u.host)); err != nil || !e.stored(t, u) {
		t.Errorf("after the downloads: %v, stored %v", err, e.stored(t, u))
	}
	if n := u.archiveGets.Load(); n != 1 {
		t.Errorf("%d waiters made %d upstream downloads, want 1", waiters, n)
	}
}

// TestStalledUpstreamTimesOut: an upstream that stops sending is given
// up after the idle timeout; the readers get an error, nothing is stored.
func TestStalledUpstreamTimesOut(t *testing.T) {
	u := newTestRegistry(t, "upstream.example", 1<<20, nil)
	u.hold(t) // never released by the test
	e := newEnv(t, false, 50*time.Millisecond, u)
	e.version(t, u.host)
	var n int64
	body, _, err := e.m.OpenPackage(context.Background(), origin(u.host).String(), u.digest)
	if err == nil { // else the upstream was too slow to answer already
		n, err = io.Copy(io.Discard, body)
		body.Close()
	}
	if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(registry.Message(err), "sent nothing for") {
		t.Fatalf("reading a stalled download: %d bytes, %v; want Unavailable saying the upstream sent nothing", n, err)
	}
	if n >= u.zipSize/2 {
		t.Errorf("read %d bytes of %d: more than the upstream sent before it stalled, less the held-back end", n, u.zipSize)
	}
	if err := e.m.FetchPackage(context.Background(), origin(u.host)); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("FetchPackage from the stalled upstream: %v, want Unavailable (a stall is no refusal to remember)", err)
	}
	if n := e.m.refusals.count(); n != 0 {
		t.Errorf("%d refusals remembered after stalls", n)
	}
	if e.stored(t, u) {
		t.Errorf("a stalled download was stored")
	}
}

// TestPackageFromTheUpstreamAskedFor: two upstreams list the same signed
// package under acme/time; with the one whose host sorts first down, the
// other's provider installs from its own upstream.
func TestPackageFromTheUpstreamAskedFor(t *testing.T) {
	key := newKey(t)
	for _, downFirst := range []bool{true, false} {
		a := newTestRegistry(t, "upstream-a.example", 1<<10, key)
		b := newTestRegistry(t, "upstream-b.example", 1<<10, key)
		if a.digest != b.digest {
			t.Fatal("the two upstreams should serve the same package")
		}
		e := newEnv(t, false, 0, a, b)
		e.version(t, a.host)
		e.version(t, b.host)
		asked, down := b, a // the one whose host sorts first is down
		if !downFirst {
			asked, down = a, b
		}
		down.down.Store(true)
		for proto, client := range e.clients(t) {
			resp, err := client.Get(e.url(asked))
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err != nil || int64(len(body)) != asked.zipSize {
				t.Errorf("%s: package of %s with %s down: status %d, %d bytes, %v: %s", proto, asked.host, down.host, resp.StatusCode, len(body), err, body[:min(len(body), 300)])
			}
		}
		if down.archiveGets.Load() != 0 || asked.archiveGets.Load() != 1 {
			t.Errorf("archive downloads: %s %d, %s %d; want the package from %s once", down.host, down.archiveGets.Load(), asked.host, asked.archiveGets.Load(), asked.host)
		}
		// A URL whose origin lists another package is not served.
		bad := e.srv.URL + e.signer.PathFrom(strings.Repeat("0", 64), timeZip, origin(asked.host).String())
		resp, err := e.clients(t)["HTTP/2"].Get(bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("a digest the origin does not list: status %d, want 404", resp.StatusCode)
		}
	}
}

// TestUnknownKeyIsRefusedForGood: SHA256SUMS signed by a key the
// upstream does not list is refused as UpstreamInvalid, and the message
// does not tell the operator to trust the key.
func TestUnknownKeyIsRefusedForGood(t *testing.T) {
	u := newTestRegistry(t, "upstream.example", 1<<10, nil)
	u.signedBy = signingtest.NewKeyWith(t, "rogue", signingtest.Options{Algorithm: signingtest.Ed25519})
	e := newEnv(t, false, 0, u)
	_, err := e.m.MirroredVersion(context.Background(), u.host, "acme", "time", timeVersion)
	msg := registry.Message(err)
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(msg, u.signedBy.KeyID) || !strings.Contains(msg, "out of band") || strings.Contains(msg, "key add") {
		t.Errorf("a signature by an unlisted key: %v; want UpstreamInvalid naming the key, saying to verify it out of band, not to add it", err)
	}
}

// TestLargePackageFlatMemory streams a large package (200 MB; 20 MB with
// -short) from the upstream through the mirror to a client: the heap
// stays far below the package's size.
func TestLargePackageFlatMemory(t *testing.T) {
	size := int64(200 << 20)
	if testing.Short() {
		size = 20 << 20
	}
	u := newTestRegistry(t, "upstream.example", size, nil)
	e := newEnv(t, false, 0, u)
	e.m.opt.MaxPackageBytes = 1 << 30
	e.version(t, u.host)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	resp, err := e.clients(t)["HTTP/1.1"].Get(e.url(u))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	peak := base
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		h.Write(buf[:k])
		if n/(16<<20) != (n+int64(k))/(16<<20) {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
	}
	resp.Body.Close()
	if n != u.zipSize || hex.EncodeToString(h.Sum(nil)) != u.digest {
		t.Fatalf("got %d bytes of %d, digest mismatch %v", n, u.zipSize, hex.EncodeToString(h.Sum(nil)) != u.digest)
	}
	if err := e.m.FetchPackage(context.Background(), origin(u.host)); err != nil {
		t.Fatal(err)
	}
	const bound = 64 << 20
	t.Logf("heap in use: %d MiB before, %d MiB at most while streaming %d MiB", base>>20, peak>>20, n>>20)
	if peak > base+bound {
		t.Errorf("the heap grew by %d MiB while streaming a %d MiB package, want under %d MiB", (peak-base)>>20, n>>20, bound>>20)
	}
}

// TestOpenStoredPackage: a package stored by an earlier fetch that
// stopped before recording it is read from the blob store, with its size,
// and recorded; the upstream is not asked.
func TestOpenStoredPackage(t *testing.T) {
	u := newTestRegistry(t, "upstream.example", 1<<10, nil)
	e := newEnv(t, false, 0, u)
	e.version(t, u.host)
	var pkg bytes.Buffer
	if err := writePackage(&pkg, u.execSize); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.blobs.Put(ctx, u.digest, int64(pkg.Len()), bytes.NewReader(pkg.Bytes())); err != nil {
		t.Fatal(err)
	}
	body, size, err := e.m.OpenPackage(ctx, origin(u.host).String(), u.digest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || size != int64(pkg.Len()) || !bytes.Equal(got, pkg.Bytes()) {
		t.Errorf("OpenPackage of a stored package: size %d, %d bytes, %v; want %d", size, len(got), err, pkg.Len())
	}
	if err := e.m.FetchPackage(ctx, origin(u.host)); err != nil {
		t.Fatal(err)
	}
	mv, err := e.idx.GetMirroredVersion(ctx, u.host, "acme", "time", timeVersion)
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := mv.Platform("linux", "amd64"); !pl.Held() || u.archiveGets.Load() != 0 {
		t.Errorf("after OpenPackage of a stored package: %+v, %d upstream downloads; want held, none", pl, u.archiveGets.Load())
	}
}
