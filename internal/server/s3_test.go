package server

// A test of the server on a real S3 blob store whose connection is cut and
// restored. It skips without an S3 test server (see package s3test) and
// fails instead when TROVE_REQUIRE_BACKENDS=1.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// TestS3OutageAndRecovery serves downloads through Trove (proxy mode, not
// redirects) from a bucket reached through a proxy, cuts the proxy and
// restores it: while S3 is unreachable /readyz and the download answer 503
// with a JSON error (the download with Retry-After), and once it is back
// both work again on the same server, without a restart.
func TestS3OutageAndRecovery(t *testing.T) {
	opt := s3test.NewBucket(t)
	proxy := s3test.NewProxy(t, opt)
	opt.Endpoint = proxy.Endpoint
	ctx := t.Context()
	blobs, err := s3blob.Open(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	idx := sqlitetest.NewIndex(t)
	content := bytes.Repeat([]byte("provider zip "), 10_000)
	sum := sha256.Sum256(content)
	blob := hex.EncodeToString(sum[:])
	if err := blobs.Put(ctx, blob, int64(len(content)), bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public, _ := url.Parse("http://" + ln.Addr().String())
	signer := signedurl.New([]byte("s3 outage test key"), 15*time.Minute)
	srv, err := New(Options{
		Index: idx, Blobs: blobs, Signer: signer, PublicURL: public, RedirectDownloads: false,
		Logger: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx, ln, nil) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	// A client timeout turns a hanging request into a failure.
	client := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	download := public.String() + signer.Path(blob, "terraform-provider-widget_1.0.0_linux_amd64.zip")
	get := func(t *testing.T, u string) (*http.Response, []byte) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: reading the body: %v", u, err)
		}
		return resp, body
	}
	working := func(t *testing.T, when string) {
		t.Helper()
		if resp, body := get(t, public.String()+"/readyz"); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: /readyz answered %d %s, want 200", when, resp.StatusCode, body)
		}
		resp, body := get(t, download)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, content) {
			t.Errorf("%s: the download answered %d with %d bytes (Location %q), want 200 with the %d bytes of the blob",
				when, resp.StatusCode, len(body), resp.Header.Get("Location"), len(content))
		}
	}

	working(t, "before the outage")

	proxy.Cut()
	resp, body := get(t, public.String()+"/readyz")
	if resp.StatusCode != http.StatusServiceUnavailable || !slices.ContainsFunc(errorsOf(t, body), func(e string) bool {
		return strings.Contains(e, "blob store")
	}) {
		t.Errorf("/readyz while S3 is unreachable: %d %s, want 503 with a JSON error naming the blob store", resp.StatusCode, body)
	}
	resp, body = get(t, download)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || len(errorsOf(t, body)) == 0 {
		t.Errorf("download while S3 is unreachable: %d, Retry-After %q, body %s; want 503 with Retry-After and a JSON error",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	proxy.Restore()
	working(t, "after S3 came back")
}
