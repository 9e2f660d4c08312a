package app

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/config"
)

// testConfig is the configuration of a plain-HTTP Trove in dir; New gets
// a listener of its own (testListener), not cfg.Listen's port.
func testConfig(t *testing.T, dir string) config.Config {
	t.Helper()
	cfg, err := config.Load([]string{"--data-dir", dir, "--listen", "127.0.0.1:1", "--insecure-http", "--public-url", "https://trove.test"},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func testListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestNewOwnsTheDataDirectory checks that an App holds its data
// directory until Close: a second one refuses to start there, removing
// nothing, and starts once the first is closed. It also checks that New
// removes the uploads a crash left staged.
func TestNewOwnsTheDataDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	stale := filepath.Join(dir, "tmp", "publish-123.zip")
	if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(ctx, cfg, Options{Listener: testListener(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crash's staged upload survived New: %v", err)
	}
	if err := os.WriteFile(stale, []byte("a live upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := New(ctx, cfg, Options{Listener: testListener(t)}); err == nil {
		b.Close()
		t.Fatal("a second App started on the same data directory")
	} else if !strings.Contains(err.Error(), "another trove serve uses the data directory") {
		t.Errorf("second New: %v", err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the refused second App removed the first one's upload: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, cfg, Options{Listener: testListener(t)})
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	b.Close()
}

// TestBusyPortNamesTheFlag: a port another program holds is answered with
// the flag that moves Trove elsewhere, and the data directory is released.
func TestBusyPortNamesTheFlag(t *testing.T) {
	busy := testListener(t)
	defer busy.Close()
	dir := t.TempDir()
	cfg, err := config.Load([]string{"--data-dir", dir, "--listen", busy.Addr().String(), "--insecure-http", "--public-url", "https://trove.test"},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if a, err := New(context.Background(), cfg, Options{}); err == nil {
		a.Close()
		t.Fatal("New listened on a busy port")
	} else if !strings.Contains(err.Error(), busy.Addr().String()+" is in use") || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("New on a busy port: %v; want it to name the address and --listen", err)
	}
	// Nothing holds the data directory after the refusal.
	cfg.Listen = "127.0.0.1:0"
	a, err := New(context.Background(), cfg, Options{Listener: testListener(t)})
	if err != nil {
		t.Fatalf("New after the busy port: %v", err)
	}
	a.Close()
}

// TestServe serves an App and asks it for its discovery document and
// readiness until the context ends.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, testConfig(t, t.TempDir()), Options{Listener: testListener(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.TLS != nil || a.CAFile() != "" {
		t.Errorf("plain HTTP has TLS files %+v", a.TLS)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	for _, path := range []string{"/.well-known/terraform.json", "/readyz"} {
		resp, err := http.Get("http://" + a.Listener.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
