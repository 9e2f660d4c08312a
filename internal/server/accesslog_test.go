package server

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// TestAccessLogTimes: the cached second of the access line's time gives
// the text time package formats, in every location (offsets of both
// signs and of half hours, a zone's change of offset), for times within
// one second (the cache hit), across seconds and back again, and for
// fractions with trailing zeros or none.
func TestAccessLogTimes(t *testing.T) {
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("", 0), time.FixedZone("IST", 5*3600+30*60),
		time.FixedZone("NST", -(3*3600 + 30*60)), time.FixedZone("X", 14*3600)}
	for _, name := range []string{"Europe/Berlin", "America/St_Johns", "Australia/Lord_Howe"} {
		if l, err := time.LoadLocation(name); err == nil {
			locs = append(locs, l)
		}
	}
	// 2026-03-29 00:59:59 UTC: Berlin moves from +01:00 to +02:00 one
	// second later.
	dst := time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(at time.Time) {
		t.Helper()
		want := at.Truncate(time.Millisecond).Add(time.Millisecond / 10).Format(time.RFC3339Nano)
		want = want[:len("2006-01-02T15:04:05.000")] + want[len("2006-01-02T15:04:05.0000"):]
		if got := string(appendRFC3339Millis([]byte("x"), at)); got != "x"+want {
			t.Fatalf("millis of %v = %q, want %q", at, got, "x"+want)
		}
		if got, want := string(appendRFC3339Nano([]byte("x"), at)), "x"+at.Format(time.RFC3339Nano); got != want {
			t.Fatalf("nanos of %v = %q, want %q", at, got, want)
		}
	}
	for i := range 20000 {
		loc := locs[i%len(locs)]
		var at time.Time
		switch i % 5 {
		case 0:
			at = dst.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
		case 1:
			at = time.Unix(rng.Int64N(1<<34)-1<<33, 0) // whole seconds, before 1970 too
		case 2:
			at = time.Unix(1_790_000_000, int64(rng.IntN(1000))*1e6) // the same second, whole milliseconds
		default:
			at = time.Unix(1_790_000_000+rng.Int64N(3), rng.Int64N(1e9))
		}
		check(at.In(loc))
	}
	for _, at := range []time.Time{time.Date(0, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)} {
		check(at)
	}
}

// TestMiddlewareAccessLineAsSlog: the line the middleware writes to an
// AccessLog (method and route formatted once per metrics series) is the
// line it writes through slog without one, but for the time and the
// duration, in both formats, for standard methods and others (whose
// series is "OTHER" but whose line shows the method), on routes and
// paths that need quoting or escaping, and for unmatched requests.
func TestMiddlewareAccessLineAsSlog(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/thing/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	mux.HandleFunc("/v1/odd=\"x\"/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	m, err := newMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	varying := regexp.MustCompile(`time=\S+|"time":"[^"]*"|duration=\S+|"duration":\d+`)
	for _, json := range []bool{false, true} {
		for _, method := range []string{"GET", "HEAD", "POST", "PROPFIND", "get", "GET"} {
			for _, path := range []string{"/v1/thing/a", "/v1/thing/a%20b", "/v1/odd=%22x%22/%E2%80%A8", "/nowhere", "/v1/thing/%22%3C"} {
				var fast, slow bytes.Buffer
				var h slog.Handler = slog.NewTextHandler(&slow, nil)
				if json {
					h = slog.NewJSONHandler(&slow, nil)
				}
				for _, mw := range []*middleware{
					{next: mux, log: slog.New(slog.DiscardHandler), access: &AccessLog{W: &fast, JSON: json}, metrics: m},
					{next: mux, log: slog.New(h), metrics: m},
				} {
					mw.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
				}
				got, want := varying.ReplaceAllString(fast.String(), "T"), varying.ReplaceAllString(slow.String(), "T")
				if got != want || strings.Count(got, "\n") != 1 {
					t.Errorf("json %v, %s %s:\n got %s\nwant %s", json, method, path, got, want)
				}
			}
		}
	}
}
