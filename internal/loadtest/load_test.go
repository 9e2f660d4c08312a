package loadtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadCountsAndReusesConnections(t *testing.T) {
	body := strings.Repeat("x", 1000)
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		if r.Header.Get("Accept-Encoding") != "" {
			http.Error(w, "unexpected Accept-Encoding", http.StatusBadRequest)
			return
		}
		if r.ProtoMajor != 1 {
			http.Error(w, "want HTTP/1.1", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	opt := LoadOptions{Conns: 3, Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, TLS: &tls.Config{RootCAs: pool}}

	res, err := Load(context.Background(), srv.URL+"/ok", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("ok endpoint: %d requests, %d errors (first: %s); want some requests and no errors", res.Requests, res.Errors, res.FirstError)
	}
	if res.Bytes < int64(res.Requests)*int64(len(body)) {
		t.Errorf("read %d bytes for %d requests of %d bytes", res.Bytes, res.Requests, len(body))
	}
	if res.P50 <= 0 || res.P99 < res.P50 {
		t.Errorf("percentiles p50=%v p99=%v", res.P50, res.P99)
	}
	if res.Elapsed != opt.Duration {
		t.Errorf("Elapsed = %v, want the window %v", res.Elapsed, opt.Duration)
	}
	if n := conns.Load(); n > int64(opt.Conns) {
		t.Errorf("server saw %d connections for %d workers: keep-alive not used", n, opt.Conns)
	}

	res, err = Load(context.Background(), srv.URL+"/fail", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "500") {
		t.Errorf("failing endpoint: %d requests, %d errors, first %q; want only errors naming status 500", res.Requests, res.Errors, res.FirstError)
	}
}

func TestLoadRejectsBadOptions(t *testing.T) {
	tests := map[string]LoadOptions{
		"no conns":        {Conns: 0, Duration: time.Second},
		"too many conns":  {Conns: 5000, Duration: time.Second},
		"no duration":     {Conns: 1},
		"negative warmup": {Conns: 1, Duration: time.Second, Warmup: -time.Second},
		"unbounded":       {Conns: 1, Duration: time.Hour},
	}
	for name, opt := range tests {
		if _, err := Load(context.Background(), "http://127.0.0.1:1/", opt); err == nil {
			t.Errorf("%s: Load accepted %+v", name, opt)
		}
	}
}

func TestLoadCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	res, err := Load(context.Background(), "http://"+addr+"/", LoadOptions{Conns: 1, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 {
		t.Errorf("closed port: %d requests, %d errors; want only errors", res.Requests, res.Errors)
	}
}
