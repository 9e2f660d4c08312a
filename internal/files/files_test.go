package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
)

// presigningBlobs adds store.Presigner to the filesystem store, standing
// in for an object store.
type presigningBlobs struct {
	*fsblob.Store
	gotTTL time.Duration
}

func (b *presigningBlobs) PresignGet(ctx context.Context, digest, filename string, ttl time.Duration) (string, error) {
	b.gotTTL = ttl
	return "https://objects.test/" + digest + "?name=" + url.QueryEscape(filename), nil
}

type fixture struct {
	srv    *httptest.Server
	signer *signedurl.Signer
	blobs  store.Blobs
}

func openBlobs(t testing.TB) *fsblob.Store {
	t.Helper()
	b, err := fsblob.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newFixture serves blobs (a fresh filesystem store if nil).
func newFixture(t testing.TB, redirect bool, blobs store.Blobs, fetcher ...Fetcher) *fixture {
	signer := signedurl.New([]byte("files test key"), 10*time.Minute)
	if blobs == nil {
		blobs = openBlobs(t)
	}
	opt := Options{Blobs: blobs, Signer: signer, RedirectDownloads: redirect}
	if len(fetcher) > 0 {
		opt.Fetcher = fetcher[0]
	}
	h := New(opt)
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, signer: signer, blobs: blobs}
}

func (f *fixture) put(t testing.TB, content []byte) string {
	t.Helper()
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	if err := f.blobs.Put(context.Background(), digest, int64(len(content)), bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	return digest
}

func (f *fixture) get(t testing.TB, method, pathAndQuery string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

const zipName = "terraform-provider-widget_1.2.0_linux_amd64.zip"

func TestServeFile(t *testing.T) {
	f := newFixture(t, false, nil)
	content := bytes.Repeat([]byte("0123456789"), 1000)
	digest := f.put(t, content)
	path := f.signer.Path(digest, zipName)

	resp, body := f.get(t, http.MethodGet, path)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("GET: status %d, %d bytes", resp.StatusCode, len(body))
	}
	for name, want := range map[string]string{
		"Content-Type":        "application/zip",
		"Content-Length":      "10000",
		"ETag":                `"` + digest + `"`,
		"Content-Disposition": `attachment; filename=` + zipName,
		"Accept-Ranges":       "bytes",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := http.ParseTime(resp.Header.Get("Last-Modified")); err != nil {
		t.Errorf("Last-Modified %q: %v", resp.Header.Get("Last-Modified"), err)
	}
	cc := resp.Header.Get("Cache-Control")
	if !strings.HasPrefix(cc, "private, max-age=") || !strings.HasSuffix(cc, ", immutable") {
		t.Errorf("Cache-Control %q", cc)
	}

	head, body := f.get(t, http.MethodHead, path)
	if head.StatusCode != http.StatusOK || len(body) != 0 || head.ContentLength != 10000 {
		t.Fatalf("HEAD: status %d, %d body bytes, length %d", head.StatusCode, len(body), head.ContentLength)
	}

	part, body := f.get(t, http.MethodGet, path, "Range", "bytes=10-19")
	if part.StatusCode != http.StatusPartialContent || string(body) != "0123456789" || part.Header.Get("Content-Range") != "bytes 10-19/10000" {
		t.Fatalf("Range: status %d, body %q, Content-Range %q", part.StatusCode, body, part.Header.Get("Content-Range"))
	}

	cached, body := f.get(t, http.MethodGet, path, "If-None-Match", `"`+digest+`"`)
	if cached.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("If-None-Match: status %d, %d bytes", cached.StatusCode, len(body))
	}
}

// TestUnsatisfiableRange expects the JSON error of every other refusal
// for a Range beyond the file, with the file's size in Content-Range, and
// the file itself for a satisfiable one after it on the same handler.
func TestUnsatisfiableRange(t *testing.T) {
	f := newFixture(t, false, nil)
	digest := f.put(t, []byte("0123456789"))
	path := f.signer.Path(digest, zipName)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp, body := f.get(t, method, path, "Range", "bytes=100-200")
		if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Fatalf("%s: status %d, want 416", method, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q, want application/json; body %q", method, ct, body)
		}
		if cr := resp.Header.Get("Content-Range"); cr != "bytes */10" {
			t.Fatalf("%s: Content-Range %q, want bytes */10", method, cr)
		}
		if method == http.MethodHead {
			continue
		}
		var doc struct {
			Errors []string `json:"errors"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], "range") {
			t.Fatalf("body %q, want one JSON error about the range", body)
		}
	}
	resp, body := f.get(t, http.MethodGet, path, "Range", "bytes=2-4")
	if resp.StatusCode != http.StatusPartialContent || string(body) != "234" {
		t.Fatalf("a satisfiable range after it: status %d, body %q", resp.StatusCode, body)
	}
	// Range units compare without regard to case; a unit Trove does not
	// serve is ignored: the whole file (RFC 9110, 14.1 and 14.2).
	if resp, body := f.get(t, http.MethodGet, path, "Range", "Bytes=2-4"); resp.StatusCode != http.StatusPartialContent || string(body) != "234" {
		t.Errorf("Range: Bytes=2-4: status %d, body %q, want 206 234", resp.StatusCode, body)
	}
	for _, rg := range []string{"items=0-1", "lines", ""} {
		if resp, body := f.get(t, http.MethodGet, path, "Range", rg); resp.StatusCode != http.StatusOK || string(body) != "0123456789" {
			t.Errorf("Range: %q: status %d, body %q, want the whole file", rg, resp.StatusCode, body)
		}
	}
}

func TestContentTypes(t *testing.T) {
	f := newFixture(t, false, nil)
	digest := f.put(t, []byte("x"))
	tests := map[string]string{
		zipName: "application/zip",
		"terraform-provider-widget_1.2.0_SHA256SUMS":     "text/plain; charset=utf-8",
		"terraform-provider-widget_1.2.0_SHA256SUMS.sig": "application/pgp-signature",
		"terraform-provider-widget_1.2.0_manifest.json":  "application/json",
		"other.bin": "application/octet-stream",
	}
	for name, want := range tests {
		resp, _ := f.get(t, http.MethodGet, f.signer.Path(digest, name))
		if got := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || got != want {
			t.Errorf("%s: status %d, Content-Type %q, want %q", name, resp.StatusCode, got, want)
		}
	}
}

func TestRefusedRequests(t *testing.T) {
	f := newFixture(t, false, nil)
	digest := f.put(t, []byte("archive"))
	other := f.put(t, []byte("other archive"))
	good := f.signer.Path(digest, zipName)
	u, _ := url.Parse(good)
	q := u.Query()

	expiredSigner := f.signer.WithClock(func() time.Time { return time.Now().Add(-time.Hour) })
	missing := strings.Repeat("ab", 32)
	tests := map[string]struct {
		path   string
		status int
		msg    string
	}{
		"expired":           {expiredSigner.Path(digest, zipName), http.StatusForbidden, "expired"},
		"tampered":          {u.Path + "?expires=" + q.Get("expires") + "&signature=" + strings.Repeat("A", len(q.Get("signature"))), http.StatusForbidden, "signature is invalid"},
		"later expiry":      {u.Path + "?expires=" + q.Get("expires") + "9&signature=" + q.Get("signature"), http.StatusForbidden, "signature is invalid"},
		"other blob":        {signedurl.PathPrefix + other + "/" + zipName + "?" + u.RawQuery, http.StatusForbidden, "signature is invalid"},
		"other name":        {signedurl.PathPrefix + digest + "/evil.zip?" + u.RawQuery, http.StatusForbidden, "signature is invalid"},
		"no signature":      {u.Path, http.StatusForbidden, "expiry"},
		"bad digest":        {signedurl.PathPrefix + "XYZ/" + zipName + "?" + u.RawQuery, http.StatusNotFound, "not found"},
		"missing blob":      {f.signer.Path(missing, zipName), http.StatusNotFound, "blob " + missing + " is missing"},
		"encoded traversal": {signedurl.PathPrefix + digest + "/..%2f..%2fetc%2fpasswd?" + u.RawQuery, http.StatusNotFound, "not found"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			resp, body := f.get(t, http.MethodGet, tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			var doc struct{ Errors []string }
			if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], tt.msg) {
				t.Fatalf("body %s, want one error containing %q", body, tt.msg)
			}
		})
	}
}

func TestRedirectToPresignedURL(t *testing.T) {
	blobs := &presigningBlobs{Store: openBlobs(t)}
	f := newFixture(t, true, blobs)
	digest := f.put(t, []byte("archive"))
	resp, _ := f.get(t, http.MethodGet, f.signer.Path(digest, zipName))
	want := "https://objects.test/" + digest + "?name=" + url.QueryEscape(zipName)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
		t.Fatalf("status %d, Location %q; want 302 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if blobs.gotTTL < time.Minute || blobs.gotTTL > 10*time.Minute {
		t.Fatalf("presigned for %v, want within the signed URL's lifetime", blobs.gotTTL)
	}
	// A presigned GET URL refuses HEAD: HEAD is answered without redirect.
	head, _ := f.get(t, http.MethodHead, f.signer.Path(digest, zipName))
	if head.StatusCode != http.StatusOK || head.ContentLength != int64(len("archive")) || head.Header.Get("Location") != "" {
		t.Fatalf("HEAD with redirects: status %d, Content-Length %d, Location %q; want 200, 7 and none", head.StatusCode, head.ContentLength, head.Header.Get("Location"))
	}
	// A refused signature is refused before any presigning.
	bad, _ := f.get(t, http.MethodGet, signedurl.PathPrefix+digest+"/"+zipName+"?expires=1&signature=x")
	if bad.StatusCode != http.StatusForbidden {
		t.Fatalf("bad signature with redirects: status %d", bad.StatusCode)
	}

	// Without the option the same store streams the blob.
	g := newFixture(t, false, &presigningBlobs{Store: blobs.Store})
	resp, body := g.get(t, http.MethodGet, g.signer.Path(digest, zipName))
	if resp.StatusCode != http.StatusOK || string(body) != "archive" {
		t.Fatalf("redirects disabled: status %d, body %q", resp.StatusCode, body)
	}
}

func BenchmarkServe50MiB(b *testing.B) {
	f := newFixture(b, false, nil)
	content := make([]byte, 50<<20)
	for i := range content {
		content[i] = byte(i)
	}
	digest := f.put(b, content)
	u := f.srv.URL + f.signer.Path(digest, zipName)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(content)) || resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d, %d bytes, %v", resp.StatusCode, n, err)
		}
	}
}

// fakeFetcher streams the blobs it knows and stores each once it was
// read whole, counting the calls.
type fakeFetcher struct {
	blobs  store.Blobs
	known  map[string][]byte // digest -> content
	err    error             // returned instead when set
	calls  atomic.Int64
	origin atomic.Value // the last origin asked for

	breakAfterHalf bool // the stream fails after half of the content
}

func (f *fakeFetcher) HasPackage(ctx context.Context, origin, digest string) (bool, error) {
	_, ok := f.known[digest]
	return ok, f.err
}

func (f *fakeFetcher) OpenPackage(ctx context.Context, origin, digest string) (io.ReadCloser, int64, error) {
	f.calls.Add(1)
	f.origin.Store(origin)
	if f.err != nil {
		return nil, 0, f.err
	}
	content, ok := f.known[digest]
	if !ok {
		return nil, 0, registry.Errorf(registry.NotFound, "unknown")
	}
	if f.breakAfterHalf {
		return io.NopCloser(io.MultiReader(bytes.NewReader(content[:len(content)/2]),
			errReader{registry.Errorf(registry.UpstreamInvalid, "upstream sent a package that does not match SHA256SUMS")})), int64(len(content)), nil
	}
	if err := f.blobs.Put(ctx, digest, int64(len(content)), bytes.NewReader(content)); err != nil {
		return nil, 0, err
	}
	return io.NopCloser(bytes.NewReader(content)), int64(len(content)), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestStreamedFetch(t *testing.T) {
	blobs := openBlobs(t)
	content := bytes.Repeat([]byte("streamed "), 5000)
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	fetcher := &fakeFetcher{blobs: blobs, known: map[string][]byte{digest: content}}
	f := newFixture(t, false, blobs, fetcher)
	const origin = "registry.example.com/acme/widget/1.2.0/linux_amd64"
	resp, body := f.get(t, http.MethodGet, f.signer.PathFrom(digest, zipName, origin))
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) || resp.ContentLength != int64(len(content)) ||
		resp.Header.Get("ETag") != `"`+digest+`"` || resp.Header.Get("Content-Type") != "application/zip" {
		t.Errorf("streamed download: status %d, %d bytes, Content-Length %d, header %v", resp.StatusCode, len(body), resp.ContentLength, resp.Header)
	}
	if got := fetcher.origin.Load(); got != origin {
		t.Errorf("the fetcher was asked for origin %q, want the signed URL's %q", got, origin)
	}

	broken := bytes.Repeat([]byte("tampered "), 5000)
	sum = sha256.Sum256(broken)
	other := hex.EncodeToString(sum[:])
	fetcher.known[other], fetcher.breakAfterHalf = broken, true
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+f.signer.Path(other, zipName), nil)
	r, err := f.srv.Client().Do(req)
	if err == nil {
		_, err = io.ReadAll(r.Body)
		r.Body.Close()
	}
	if err == nil {
		t.Errorf("a stream that failed half way was answered as a whole download")
	}
}

func TestFetcherFillsMissingBlobs(t *testing.T) {
	for _, redirect := range []bool{false, true} {
		blobs := store.Blobs(openBlobs(t))
		if redirect {
			blobs = &presigningBlobs{Store: blobs.(*fsblob.Store)}
		}
		content := bytes.Repeat([]byte("mirrored "), 500)
		sum := sha256.Sum256(content)
		digest := hex.EncodeToString(sum[:])
		fetcher := &fakeFetcher{blobs: blobs, known: map[string][]byte{digest: content}}
		f := newFixture(t, redirect, blobs, fetcher)

		// A blob being fetched is streamed, with redirects too: only a
		// stored (verified) blob is redirected to.
		resp, body := f.get(t, http.MethodGet, f.signer.Path(digest, zipName))
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
			t.Errorf("redirect %v: status %d, %d bytes: want the fetched blob", redirect, resp.StatusCode, len(body))
		}
		if _, err := blobs.Stat(context.Background(), digest); err != nil || fetcher.calls.Load() != 1 {
			t.Errorf("redirect %v: blob after the first request: %v, %d fetches", redirect, err, fetcher.calls.Load())
		}
		resp, _ = f.get(t, http.MethodGet, f.signer.Path(digest, zipName))
		if fetcher.calls.Load() != 1 {
			t.Errorf("redirect %v: a stored blob was fetched again", redirect)
		}
		if redirect && resp.StatusCode != http.StatusFound {
			t.Errorf("redirect: a stored blob answered %d, want 302", resp.StatusCode)
		}

		unknown := strings.Repeat("ab", 32)
		if resp, body := f.get(t, http.MethodGet, f.signer.Path(unknown, zipName)); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "not stored") {
			t.Errorf("redirect %v: unknown blob: status %d %s", redirect, resp.StatusCode, body)
		}
		fetcher.err = registry.Errorf(registry.Unavailable, "upstream registry.example.com is unreachable")
		other := strings.Repeat("cd", 32)
		if resp, body := f.get(t, http.MethodGet, f.signer.Path(other, zipName)); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "registry.example.com") {
			t.Errorf("redirect %v: upstream down: status %d %s, want 503 naming the upstream", redirect, resp.StatusCode, body)
		}
		// A refusal is permanent: 502, not "try again later".
		fetcher.err = registry.Errorf(registry.UpstreamInvalid, "upstream registry.example.com sent a package that does not match its signed SHA256SUMS")
		if resp, body := f.get(t, http.MethodGet, f.signer.Path(other, zipName)); resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Retry-After") != "" || strings.Contains(string(body), "temporarily") {
			t.Errorf("redirect %v: refused package: status %d, Retry-After %q, %s; want 502 without a retry hint", redirect, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}

// pausingFetcher streams its content in two halves with a pause between
// them that lasts until release is closed: an upstream that is slow, not
// stalled.
type pausingFetcher struct {
	content []byte
	release chan struct{}
}

func (f *pausingFetcher) HasPackage(context.Context, string, string) (bool, error) { return true, nil }

func (f *pausingFetcher) OpenPackage(ctx context.Context, origin, digest string) (io.ReadCloser, int64, error) {
	half := len(f.content) / 2
	rest := &waitingReader{release: f.release, r: bytes.NewReader(f.content[half:])}
	return io.NopCloser(io.MultiReader(bytes.NewReader(f.content[:half]), rest)), int64(len(f.content)), nil
}

type waitingReader struct {
	release chan struct{}
	r       io.Reader
}

func (w *waitingReader) Read(p []byte) (int, error) {
	<-w.release
	return w.r.Read(p)
}

// TestStreamSurvivesUpstreamPauseOverHTTP2: a streamed download whose
// upstream pauses for longer than the write timeout still arrives whole
// over HTTP/2 (a write deadline left armed while the handler waits for
// the upstream would reset the stream).
func TestStreamSurvivesUpstreamPauseOverHTTP2(t *testing.T) {
	saved := streamWriteTimeout
	streamWriteTimeout = 20 * time.Millisecond
	t.Cleanup(func() { streamWriteTimeout = saved })

	content := bytes.Repeat([]byte("paused "), 20000)
	sum := sha256.Sum256(content)
	digest := hex.EncodeToString(sum[:])
	fetcher := &pausingFetcher{content: content, release: make(chan struct{})}
	signer := signedurl.New([]byte("files test key"), 10*time.Minute)
	h := New(Options{Blobs: openBlobs(t), Signer: signer, Fetcher: fetcher})
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Get(srv.URL + signer.Path(digest, zipName))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
	}
	first := make([]byte, len(content)/2)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("reading the first half: %v", err)
	}
	// Many times the write timeout: a deadline still armed has passed.
	time.Sleep(100 * streamWriteTimeout)
	close(fetcher.release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(append(first, rest...), content) {
		t.Errorf("after the upstream's pause: %d more bytes, %v; want the rest of the download", len(rest), err)
	}
}
