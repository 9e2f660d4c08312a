package e2e

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// wanProxy is a TCP proxy on loopback that makes a server look remote:
// every connection waits latency before it is forwarded, and the bytes
// from the server to its clients share a bandwidth of bytesPerSecond (the
// requests go through unlimited).
type wanProxy struct {
	ln             net.Listener
	latency        time.Duration
	bytesPerSecond float64

	mu   sync.Mutex
	next time.Time // when the shared link is free again
}

// startWANProxy forwards a new loopback port to target (a port on
// 127.0.0.1) and returns the new port. It stops with the test.
func startWANProxy(t *testing.T, target int, bytesPerSecond float64, latency time.Duration) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &wanProxy{ln: ln, latency: latency, bytesPerSecond: bytesPerSecond}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c, "127.0.0.1:"+strconv.Itoa(target))
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func (p *wanProxy) forward(client net.Conn, target string) {
	defer client.Close()
	time.Sleep(p.latency)
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		io.Copy(server, client)
		server.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.wait(n)
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait holds n bytes back for the time the shared link takes to carry
// them.
func (p *wanProxy) wait(n int) {
	p.mu.Lock()
	// A link idle for a while has no credit, but the time a sleep
	// overshoots is made up by the next writes (else the link would run
	// slower than its bandwidth).
	if floor := time.Now().Add(-10 * time.Millisecond); p.next.Before(floor) {
		p.next = floor
	}
	p.next = p.next.Add(time.Duration(float64(n) / p.bytesPerSecond * float64(time.Second)))
	until := p.next
	p.mu.Unlock()
	time.Sleep(time.Until(until))
}
