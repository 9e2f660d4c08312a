package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
)

// discardWriter is a ResponseWriter that, like net/http, gives every
// request an empty header map and keeps nothing else.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(b), nil
}

func benchServer(b *testing.B, versions int) (*testServer, string) {
	ts := newTestServer(b, nil, "https://localhost")
	for i := range versions {
		ts.idx.add(b, registry.ProviderVersion{
			Namespace: "acme", Type: "widget", Version: fmt.Sprintf("%d.%d.%d", i/100, i%100/10, i%10), Protocols: []string{"5.0"},
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}, {OS: "windows", Arch: "amd64"}},
		})
	}
	return ts, "/v1/providers/acme/widget/versions"
}

func benchHandler(b *testing.B, h http.Handler, path string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		b.Fatalf("status %d", w.status)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.h = make(http.Header) // as net/http does for every request
		w.status = 0
		h.ServeHTTP(w, req)
	}
}

// BenchmarkMiddlewareVersions30 serves a cached versions document through
// the whole stack: middleware (metrics, security headers, access log
// disabled at info) and mux.
func BenchmarkMiddlewareVersions30(b *testing.B) {
	ts, path := benchServer(b, 30)
	ts.srv.handler.(*middleware).log = discardLogger()
	benchHandler(b, ts.srv.Handler(), path)
}

// BenchmarkMiddlewareVersions30AccessLog is BenchmarkMiddlewareVersions30
// with the access log on, formatted by slog's text handler as in
// production (written to io.Discard).
func BenchmarkMiddlewareVersions30AccessLog(b *testing.B) {
	ts, path := benchServer(b, 30)
	ts.srv.handler.(*middleware).log = slog.New(slog.NewTextHandler(io.Discard, nil))
	benchHandler(b, ts.srv.Handler(), path)
}

// BenchmarkMiddlewareVersions30FastAccessLog is
// BenchmarkMiddlewareVersions30AccessLog with the lines written by
// AccessLog, as trove serve writes them (the same bytes).
func BenchmarkMiddlewareVersions30FastAccessLog(b *testing.B) {
	ts, path := benchServer(b, 30)
	ts.srv.handler.(*middleware).access = &AccessLog{W: io.Discard}
	benchHandler(b, ts.srv.Handler(), path)
}

// BenchmarkMiddlewareStatic is the same stack around a handler that
// writes precomputed bytes: the yardstick for the cache's own cost.
func BenchmarkMiddlewareStatic(b *testing.B) {
	ts, path := benchServer(b, 0)
	body := make([]byte, 2000)
	mux := http.NewServeMux()
	mux.HandleFunc(providers.RouteVersions, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"application/json"}
		_, _ = w.Write(body)
	})
	mw := ts.srv.handler.(*middleware)
	benchHandler(b, &middleware{next: mux, log: discardLogger(), metrics: mw.metrics}, path)
}

// The end-to-end benchmarks compare request throughput over loopback TCP
// with keep-alive clients: a static server answering precomputed JSON
// from memory against Trove's versions route with all its middleware.
func BenchmarkEndToEndStatic(b *testing.B) {
	h, path := staticVersions(b)
	benchEndToEnd(b, h, path)
}

// staticVersions returns a handler answering the bytes Trove answers for
// a versions document of 30 versions, precomputed, and that path.
func staticVersions(b *testing.B) (http.Handler, string) {
	ts, path := benchServer(b, 30)
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body := rec.Body.Bytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"application/json"}
		_, _ = w.Write(body)
	}), path
}

func BenchmarkEndToEndVersions30(b *testing.B) {
	ts, path := benchServer(b, 30)
	ts.srv.handler.(*middleware).log = discardLogger()
	benchEndToEnd(b, ts.srv.Handler(), path)
}

func benchEndToEnd(b *testing.B, h http.Handler, path string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	benchGets(b, &http.Client{Transport: tr}, "http://"+ln.Addr().String()+path, "", 1)
}

// benchGets GETs url in parallel loops, with authz as the
// Authorization header unless empty, reading every body, and fails the
// benchmark if any request failed, did not answer 200 or did not speak
// HTTP major version proto.
func benchGets(b *testing.B, client *http.Client, url, authz string, proto int) {
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			failed.Add(1)
			return
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		for pb.Next() {
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.ProtoMajor != proto {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed or did not speak HTTP/%d", n, proto)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The HTTP/2 end-to-end benchmarks are the end-to-end ones over HTTPS
// with HTTP/2, as terraform and tofu connect to a registry: net/http
// runs every HTTP/2 request's handler on a new goroutine, whose stack
// starts small, so a handler chain that needs a deeper stack than a
// static handler pays for growing it on every request.
func BenchmarkEndToEndHTTP2Static(b *testing.B) {
	h, path := staticVersions(b)
	benchEndToEndHTTP2(b, h, path, "")
}

func BenchmarkEndToEndHTTP2Versions30(b *testing.B) {
	ts, path := benchServer(b, 30)
	ts.srv.handler.(*middleware).access = &AccessLog{W: io.Discard}
	benchEndToEndHTTP2(b, ts.srv.Handler(), path, "")
}

func benchEndToEndHTTP2(b *testing.B, h http.Handler, path, authz string) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	benchGets(b, srv.Client(), srv.URL+path, authz, 2) // srv.Client trusts the server and speaks HTTP/2
}
