package server

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessLogMatchesSlog: every line AccessLog writes is byte for byte
// the line slog's text and JSON handlers write for the same record, over
// hostile paths (quotes, '=', spaces, control characters, invalid UTF-8,
// line separators, HTML characters, unicode), levels, times and sizes.
func TestAccessLogMatchesSlog(t *testing.T) {
	paths := []string{
		"/v1/providers/acme/widget/versions", "", "/a b", "/a=b", `/a"b`, `/a\b`, "/a\tb", "/a\nb", "/a\x00b", "/a\x7fb",
		"/caf\u00e9", "/\u2028x\u2029", "/\xff\xfe", "/<script>&amp;", "/\u00a0nbsp", "/日本", "/\U0001F600", "/%2e%2e",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		path := paths[i%len(paths)]
		if i >= len(paths) { // and random bytes
			b := make([]byte, rng.IntN(12))
			for j := range b {
				b[j] = byte(rng.IntN(256))
			}
			path = string(b)
		}
		at := time.Unix(1_790_000_000+rng.Int64N(1e8), rng.Int64N(1e9))
		if i%7 == 0 {
			at = at.Truncate(time.Second) // no fraction at all
		}
		level := []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelDebug}[i%3]
		method := []string{"GET", "HEAD", "POST", "OTHER"}[i%4]
		route := []string{"/v1/providers/{namespace}/{type}/versions", unmatchedRoute, "/v1/mirror/{host}/{namespace}/{type}/{file}"}[i%3]
		status, size, d := []int{200, 204, 404, 503}[i%4], rng.Int64N(1<<40), time.Duration(rng.Int64N(int64(10*time.Second)))
		for _, json := range []bool{false, true} {
			var want, got bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
			if json {
				h = slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
			}
			r := slog.NewRecord(at, level, "http request", 0)
			r.AddAttrs(slog.String("method", method), slog.String("route", route), slog.String("path", path),
				slog.Int("status", status), slog.Int64("bytes", size), slog.Duration("duration", d))
			if err := h.Handle(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			(&AccessLog{W: &got, JSON: json, Level: slog.LevelDebug}).write(at, level, method, route, path, status, size, d)
			if got.String() != want.String() {
				t.Fatalf("json %v, path %q:\n got %s\nwant %s", json, path, got.String(), strings.TrimSpace(want.String()))
			}
		}
	}
}

// TestMiddlewareWritesAccessLog: with an AccessLog, the middleware writes
// each request's line there (in slog's format) and not through its
// logger, at the request's level.
func TestMiddlewareWritesAccessLog(t *testing.T) {
	var lines, logged bytes.Buffer
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/thing/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {})
	m, err := newMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &middleware{next: mux, log: slog.New(slog.NewTextHandler(&logged, nil)), access: &AccessLog{W: &lines}, metrics: m}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/thing/a%20b", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil)) // Debug: below Info
	got := lines.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, ` level=INFO msg="http request" method=GET route=/v1/thing/{id} path="/v1/thing/a b" status=200 bytes=2 duration=`) {
		t.Errorf("access log = %q", got)
	}
	if logged.Len() != 0 {
		t.Errorf("the access line also went to the logger: %q", logged.String())
	}
}
