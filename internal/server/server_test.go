package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"
	"github.com/hashicorp/terraform-svchost/disco"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/logbuf"
)

// faultyIndex is the real SQLite index with an injectable Ping failure.
type faultyIndex struct {
	*sqlite.Index
	pingErr atomic.Pointer[error]
}

func (f *faultyIndex) Ping(ctx context.Context) error {
	if err := f.pingErr.Load(); err != nil {
		return *err
	}
	return f.Index.Ping(ctx)
}

// add publishes v (in namespace acme) straight into the index.
func (f *faultyIndex) add(t testing.TB, v registry.ProviderVersion) {
	t.Helper()
	v.PublishedAt = time.Now()
	v.SigningKey.CreatedAt = time.Now()
	if err := f.CreateProviderVersion(context.Background(), v); err != nil {
		t.Fatal(err)
	}
}

// faultyBlobs is the real filesystem blob store with an injectable Stat failure.
type faultyBlobs struct {
	*fsblob.Store
	statErr atomic.Pointer[error]
}

func (b *faultyBlobs) Stat(ctx context.Context, digest string) (int64, error) {
	if err := b.statErr.Load(); err != nil {
		return 0, *err
	}
	return b.Store.Stat(ctx, digest)
}

func (b *faultyBlobs) put(t testing.TB, content []byte) string {
	t.Helper()
	sum := sha256.Sum256(content)
	d := hex.EncodeToString(sum[:])
	if err := b.Put(context.Background(), d, int64(len(content)), bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	return d
}

type testServer struct {
	srv    *Server
	idx    *faultyIndex
	blobs  *faultyBlobs
	signer *signedurl.Signer
	logs   *logbuf.Buffer
}

func newTestServer(t testing.TB, api http.Handler, publicURL string) *testServer {
	t.Helper()
	return newTestServerUI(t, api, publicURL, nil)
}

// newTestServerUI is newTestServer with ui as its web UI (none if nil).
func newTestServerUI(t testing.TB, api http.Handler, publicURL string, ui UI) *testServer {
	t.Helper()
	ctx := context.Background()
	st := sqlitetest.New(t)
	x, blobs := st.Index, st.Blobs
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ts := &testServer{
		idx:    &faultyIndex{Index: x},
		blobs:  &faultyBlobs{Store: blobs},
		signer: signedurl.New([]byte("server test key"), 10*time.Minute),
		logs:   &logbuf.Buffer{},
	}
	u, err := url.Parse(publicURL)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{
		Index: ts.idx, Blobs: ts.blobs, Signer: ts.signer, PublicURL: u, API: api, UI: ui,
		Logger: slog.New(slog.NewJSONHandler(ts.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = srv
	return ts
}

// serveTLS runs the server on a loopback port with a self-signed
// certificate and returns its URL, a client that trusts only ca.pem, and
// a function that stops it and returns Serve's result.
func (ts *testServer) serveTLS(t *testing.T) (string, *http.Client, func() error) {
	t.Helper()
	files, err := EnsureSelfSigned(t.TempDir(), []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, ln, &files) }()

	caPEM, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.pem holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		client.CloseIdleConnections() // else HTTP/2 shutdown waits a second for the client to hang up
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop(); client.CloseIdleConnections() })
	return "https://" + ln.Addr().String(), client, stop
}

func get(t *testing.T, c *http.Client, u string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
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

func errorsOf(t *testing.T, body []byte) []string {
	t.Helper()
	var doc struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not a JSON error body: %s", body)
	}
	return doc.Errors
}

func TestServerOverTLS(t *testing.T) {
	api := http.NewServeMux()
	api.HandleFunc("GET /api/v1/boom", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Partial", "yes")
		panic("kaboom")
	})
	api.HandleFunc("GET /api/v1/boom-late", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		panic("kaboom late")
	})
	ts := newTestServer(t, api, "https://localhost")
	base, client, stop := ts.serveTLS(t)

	// Discovery, judged by Terraform's own library.
	d := disco.New()
	d.Transport = client.Transport
	host, err := svchost.ForComparison(strings.TrimPrefix(base, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	pu, err := d.DiscoverServiceURL(host, "providers.v1")
	if err != nil || pu.String() != base+"/v1/providers/" {
		t.Fatalf("providers.v1 = %v, %v", pu, err)
	}

	resp, body := get(t, client, base+"/.well-known/terraform.json")
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("discovery: status %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("TLS state %+v", resp.TLS)
	}
	for name, want := range map[string]string{
		"Content-Type": "application/json", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("discovery %s = %q, want %q", name, got, want)
		}
	}
	if string(body) != `{"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"}` {
		t.Errorf("discovery body %s", body)
	}

	if resp, body := get(t, client, base+"/healthz"); resp.StatusCode != http.StatusOK || !json.Valid(body) {
		t.Errorf("healthz: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, client, base+"/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %d %s", resp.StatusCode, body)
	}
	down := errors.New("dial tcp 10.0.0.9:5432: connection refused")
	ts.idx.pingErr.Store(&down)
	resp, body = get(t, client, base+"/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with the index down: %d", resp.StatusCode)
	}
	if msgs := errorsOf(t, body); len(msgs) != 1 || !strings.Contains(msgs[0], "index is not reachable") || strings.Contains(msgs[0], "10.0.0.9") {
		t.Errorf("readyz error %q: want the cause named, its detail hidden", msgs)
	}
	ts.idx.pingErr.Store(nil)
	gone := registry.Errorf(registry.Unavailable, "disk gone")
	ts.blobs.statErr.Store(&gone)
	if resp, body := get(t, client, base+"/readyz"); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "blob store") {
		t.Errorf("readyz with the blob store down: %d %s", resp.StatusCode, body)
	}
	ts.blobs.statErr.Store(nil)

	// A panic before the response began becomes a logged 500 JSON answer.
	resp, body = get(t, client, base+"/api/v1/boom")
	if resp.StatusCode != http.StatusInternalServerError || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Partial") != "" {
		t.Fatalf("panic: status %d, Content-Type %q, X-Partial %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Partial"))
	}
	if msgs := errorsOf(t, body); len(msgs) != 1 || msgs[0] != "internal error" {
		t.Fatalf("panic answer %q", msgs)
	}
	if !strings.Contains(ts.logs.String(), "kaboom") {
		t.Fatal("the panic was not logged")
	}
	// After the response began, the client must not see a clean success.
	if resp, err := client.Get(base + "/api/v1/boom-late"); err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatal("a panic after the first byte ended in a complete response")
		}
	}

	// Unknown routes answer JSON 404.
	resp, body = get(t, client, base+"/nope")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(strings.Join(errorsOf(t, body), ""), "no route GET /nope") {
		t.Fatalf("unknown route: %d %s", resp.StatusCode, body)
	}

	// Metrics are labelled by route pattern, never by raw path.
	get(t, client, base+"/v1/providers/acme/one/versions")
	get(t, client, base+"/v1/providers/acme/two/versions")
	resp, body = get(t, client, base+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	text := string(body)
	for _, want := range []string{
		`trove_http_requests_total{method="GET",route="/v1/providers/{namespace}/{type}/versions",status="404"} 2`,
		`trove_http_requests_total{method="GET",route="/.well-known/terraform.json",status="200"}`,
		`trove_http_requests_total{method="GET",route="/api/v1/boom",status="500"} 1`,
		`trove_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="0.005"}`,
		`go_goroutines`, `process_open_fds`, `trove_providers_cache_entries`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "acme/one") {
		t.Error("metrics carry a raw path")
	}

	if err := stop(); err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = w.Write([]byte("finished"))
	})
	ts := newTestServer(t, api, "https://localhost")
	base, client, stop := ts.serveTLS(t)

	type result struct {
		body string
		err  error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, err := client.Get(base + "/api/v1/slow")
		if err != nil {
			inflight <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		inflight <- result{string(b), err}
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) while a request was in flight", err)
	case r := <-inflight:
		t.Fatalf("in-flight request ended before it was released: %+v", r)
	default:
	}
	close(release)
	if r := <-inflight; r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := client.Get(base + "/healthz"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}

func TestAccessLogHidesSecrets(t *testing.T) {
	ts := newTestServer(t, nil, "http://localhost")
	digest := ts.blobs.put(t, []byte("zip bytes"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, ln, nil) }()
	defer func() { cancel(); <-done }()

	signed := ts.signer.Path(digest, "terraform-provider-x_1.0.0_linux_amd64.zip")
	sig := signed[strings.Index(signed, "signature=")+len("signature="):]
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+signed, nil)
	req.Header.Set("Authorization", "Bearer trove_supersecret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "zip bytes" {
		t.Fatalf("download: %d %q", resp.StatusCode, body)
	}

	var line map[string]any
	for l := range strings.SplitSeq(ts.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"http request"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line == nil {
		t.Fatalf("no access log line in %s", ts.logs.String())
	}
	want := map[string]any{"method": "GET", "route": "/v1/files/{digest}/{filename}", "status": float64(200), "bytes": float64(9)}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access log %s = %v, want %v", k, line[k], v)
		}
	}
	if _, ok := line["duration"]; !ok {
		t.Error("access log has no duration")
	}
	logs := ts.logs.String()
	if strings.Contains(logs, sig) || strings.Contains(logs, "signature=") || strings.Contains(logs, "supersecret") {
		t.Fatalf("access log leaks a secret: %s", logs)
	}
}

func TestProviderFlowOverPlainHTTP(t *testing.T) {
	ts := newTestServer(t, nil, "https://trove.test:8443")
	zip := bytes.Repeat([]byte("z"), 100_000)
	v := registry.ProviderVersion{
		Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: ts.blobs.put(t, []byte("sums")), SHASumsSignatureDigest: ts.blobs.put(t, []byte("sig")),
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip", SHA256: ts.blobs.put(t, zip), Size: int64(len(zip))}},
	}
	ts.idx.add(t, v)
	h := ts.srv.Handler()
	do := func(method, target string, header ...string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, target, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	_, body := do(http.MethodGet, "/v1/providers/acme/widget/versions")
	if !strings.Contains(string(body), `"1.0.0"`) {
		t.Fatalf("versions: %s", body)
	}
	// The index hands its change to the server's caches before the write
	// returns (store.ChangeHook), without Serve running: the next read
	// shows the new version.
	ts.idx.add(t, registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.1.0"})
	if _, body := do(http.MethodGet, "/v1/providers/acme/widget/versions"); !strings.Contains(string(body), `"1.1.0"`) {
		t.Fatalf("a write through the index did not show the new version: %s", body)
	}

	_, body = do(http.MethodGet, "/v1/providers/acme/widget/1.0.0/download/linux/amd64")
	var doc struct {
		DownloadURL string `json:"download_url"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || !strings.HasPrefix(doc.DownloadURL, "https://trove.test:8443/v1/files/") {
		t.Fatalf("download document: %s", body)
	}
	path := strings.TrimPrefix(doc.DownloadURL, "https://trove.test:8443")
	resp, body := do(http.MethodGet, path, "Range", "bytes=0-9")
	if resp.StatusCode != http.StatusPartialContent || len(body) != 10 {
		t.Fatalf("ranged download: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp, body = do(http.MethodHead, path)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.ContentLength != int64(len(zip)) {
		t.Fatalf("HEAD download: %d, %d bytes, length %d", resp.StatusCode, len(body), resp.ContentLength)
	}
	// Archives are never compressed, whatever the client accepts: the
	// bytes are the signed file's.
	for _, ae := range []string{"gzip", "*", "gzip, deflate, br, zstd"} {
		resp, body = do(http.MethodGet, path, "Accept-Encoding", ae)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, zip) {
			t.Fatalf("download with Accept-Encoding %q: %d, Content-Encoding %q, %d bytes", ae, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(body))
		}
	}
}

func TestNewValidatesOptions(t *testing.T) {
	u, _ := url.Parse("https://localhost")
	ts := newTestServer(t, nil, "https://localhost")
	base := Options{Index: ts.idx, Blobs: ts.blobs, Signer: signedurl.New([]byte("k"), time.Minute), PublicURL: u}
	tests := map[string]func(o *Options){
		"no index":    func(o *Options) { o.Index = nil },
		"no blobs":    func(o *Options) { o.Blobs = nil },
		"no signer":   func(o *Options) { o.Signer = nil },
		"no URL":      func(o *Options) { o.PublicURL = nil },
		"relative":    func(o *Options) { o.PublicURL = &url.URL{Path: "/x"} },
		"ftp":         func(o *Options) { o.PublicURL = &url.URL{Scheme: "ftp", Host: "x"} },
		"valid (nil)": nil,
	}
	for name, mutate := range tests {
		o := base
		if mutate != nil {
			mutate(&o)
		}
		_, err := New(o)
		if (err == nil) != (mutate == nil) {
			t.Errorf("%s: New error = %v", name, err)
		}
	}
}
