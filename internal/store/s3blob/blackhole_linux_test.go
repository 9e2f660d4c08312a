package s3blob_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/s3blob"
)

// blackhole returns the http:// endpoint of a loopback port that never
// completes a connection, as a host behind a firewall that drops packets
// looks: a listener with a backlog of one that never accepts, filled by a
// first connection, so that the kernel drops further SYNs.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	filler, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	// Check that the port now swallows connections.
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel completed a connection beyond the listen backlog: cannot simulate a blackholed endpoint")
	}
	return "http://" + addr
}

// TestBlackholedEndpointFails checks that an S3 endpoint that drops every
// connection attempt fails a request by itself, each attempt's connection
// timing out, well before a patient caller would give up (20 s here;
// docs/high-availability.md promises about 11 s), rather than after the
// half minute of three 10-second connection timeouts.
func TestBlackholedEndpointFails(t *testing.T) {
	endpoint := blackhole(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := s3blob.Open(ctx, s3blob.Options{
		Endpoint: endpoint, Region: "us-east-1", Bucket: "trove", PathStyle: true, AccessKey: "key", SecretKey: "secret",
	})
	if ctx.Err() != nil {
		t.Fatalf("Open was still waiting for the blackholed endpoint when the caller gave up: %v", err)
	}
	if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "cannot reach S3") {
		t.Errorf("Open = %v, want kind unavailable saying it cannot reach S3", err)
	}

	// A caller that gives up first is told so, not that S3 timed out.
	short, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err = s3blob.Open(short, s3blob.Options{
		Endpoint: endpoint, Region: "us-east-1", Bucket: "trove", PathStyle: true, AccessKey: "key", SecretKey: "secret",
	})
	if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("Open with a caller's deadline shorter than a connection timeout = %v, want kind unavailable saying it was interrupted", err)
	}
}
