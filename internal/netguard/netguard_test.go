package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"trove.dev/trove/internal/netguard/netguardtest"
)

func TestPublic(t *testing.T) {
	tests := map[string]bool{ // address: public
		"127.0.0.1": false, "127.255.0.9": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false,
		"192.168.1.1": false, "169.254.169.254": false, "fe80::1": false, "0.0.0.0": false, "::": false,
		"100.64.0.1": false, "fd00::1": false, "fc00::5": false, "::ffff:127.0.0.1": false, "::ffff:169.254.169.254": false,
		"::127.0.0.1": false, "224.0.0.1": false, "ff02::1": false, "64:ff9b::a00:1": false, "2002:7f00:1::": false,
		"255.255.255.255": false, "198.18.0.1": false, "fec0::1": false,
		"93.184.215.14": true, "2606:4700::1111": true, "8.8.8.8": true, "::ffff:8.8.8.8": true,
	}
	for addr, want := range tests {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
	if Public(netip.Addr{}) {
		t.Error("the zero address is public")
	}
}

// TestCheckHost is the hostile table of hosts written in URLs: every
// form of a literal non-public address, localhost names, legacy numeric
// forms.
func TestCheckHost(t *testing.T) {
	refused := map[string]string{ // host (as url.Hostname or with brackets): what the error says
		"127.0.0.1":                "non-public address 127.0.0.1",
		"127.1":                    "non-standard form",
		"0x7f.1":                   "non-standard form",
		"0x7f000001":               "non-standard form",
		"0177.0.0.1":               "non-standard form",
		"2130706433":               "non-standard form",
		"127.0.0.1.":               "non-public address 127.0.0.1",
		"[::ffff:127.0.0.1]":       "non-public address ::ffff:127.0.0.1",
		"::ffff:7f00:1":            "non-public address",
		"::1":                      "non-public address ::1",
		"[::1]":                    "non-public address ::1",
		"::":                       "non-public address",
		"0.0.0.0":                  "non-public address 0.0.0.0",
		"169.254.169.254":          "non-public address 169.254.169.254",
		"fd00::1":                  "non-public address fd00::1",
		"FD00::1":                  "non-public address fd00::1",
		"fe80::1%eth0":             "non-public address fe80::1",
		"10.0.0.1":                 "non-public address",
		"192.168.0.10":             "non-public address",
		"100.100.100.200":          "non-public address",
		"localhost":                "names localhost",
		"localhost.":               "names localhost",
		"LOCALHOST..":              "names localhost",
		"metadata.localhost":       "names localhost",
		"":                         "names localhost",
		"[::ffff:169.254.169.254]": "non-public address ::ffff:169.254.169.254",
	}
	for host, want := range refused {
		err := CheckHost(host)
		var he *HostError
		if !errors.As(err, &he) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHost(%q) = %v, want a HostError with %q", host, err, want)
		}
	}
	for _, host := range []string{"git.example.com", "8.8.8.8", "[2606:4700::1111]", "localhost.example.com", "127.example", "0x7g.1", "1.2.3.4.example"} {
		if err := CheckHost(host); err != nil {
			t.Errorf("CheckHost(%q) = %v, want nil", host, err)
		}
	}
}

func TestControl(t *testing.T) {
	g := Guard{Flag: "--x-allow-private"}
	for _, addr := range []string{"127.0.0.1:443", "[::1]:22", "[::ffff:127.0.0.1]:80", "169.254.169.254:80", "[fd00::1]:443", "[fe80::1%25eth0]:443", "0.0.0.0:9418"} {
		err := g.Control("tcp", addr, nil)
		var ge *GuardError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), "--x-allow-private") {
			t.Errorf("Control(%s) = %v, want a GuardError naming the flag", addr, err)
		}
	}
	if err := g.Control("tcp", "8.8.8.8:443", nil); err != nil {
		t.Errorf("Control(8.8.8.8) = %v", err)
	}
	if err := (Guard{AllowPrivate: true}).Control("tcp", "127.0.0.1:1", nil); err != nil {
		t.Errorf("Control with AllowPrivate = %v", err)
	}
}

// TestDialerRefusesLoopback dials a real loopback server: refused by the
// guarded dialer (by address and by a name that resolves to it), allowed
// with AllowPrivate.
func TestDialerRefusesLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, addr := range []string{srv.Listener.Addr().String(), net.JoinHostPort("localhost", port)} {
		_, err := Guard{}.Dialer(0).DialContext(context.Background(), "tcp", addr)
		var ge *GuardError
		if !errors.As(err, &ge) || !ge.Addr.IsLoopback() {
			t.Errorf("guarded dial of %s = %v, want a GuardError", addr, err)
		}
	}
	c, err := Guard{AllowPrivate: true}.Dialer(0).DialContext(context.Background(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial with AllowPrivate: %v", err)
	}
	c.Close()
}

// TestResolve resolves names through a real resolver asking a DNS
// server: a name resolving only to loopback, link-local or private
// addresses is refused, one with a public address among private ones
// gets the public one (to pin), and literal hosts are judged as such.
func TestResolve(t *testing.T) {
	r := netguardtest.DNS(t, map[string][]netip.Addr{
		"loop.trove.test":  {netip.MustParseAddr("127.0.0.1")},
		"meta.trove.test":  {netip.MustParseAddr("169.254.169.254")},
		"ula.trove.test":   {netip.MustParseAddr("fd00::1")},
		"mixed.trove.test": {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("93.184.215.14")},
		"pub.trove.test":   {netip.MustParseAddr("93.184.215.14")},
	})
	g := Guard{Flag: "--git-source-allow-private", Resolver: r}
	ctx := context.Background()
	for _, host := range []string{"loop.trove.test", "meta.trove.test", "ula.trove.test", "LOOP.trove.test.", "localhost", "localhost.",
		"x.localhost", "127.0.0.1", "[::1]", "::ffff:127.0.0.1", "169.254.169.254", "[fd00::1]", "127.1", "0x7f.1"} {
		_, err := g.Resolve(ctx, host)
		var ge *GuardError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), "--git-source-allow-private") {
			t.Errorf("Resolve(%q) = %v, want a GuardError naming the flag", host, err)
		}
	}
	for host, want := range map[string]string{"pub.trove.test": "93.184.215.14", "mixed.trove.test": "93.184.215.14", "8.8.8.8": "8.8.8.8", "[2606:4700::1111]": "2606:4700::1111"} {
		got, err := g.Resolve(ctx, host)
		if err != nil || got.String() != want {
			t.Errorf("Resolve(%q) = %v, %v, want %s", host, got, err, want)
		}
	}
	if got, err := (Guard{AllowPrivate: true, Resolver: r}).Resolve(ctx, "loop.trove.test"); err != nil || !got.IsLoopback() {
		t.Errorf("Resolve with AllowPrivate = %v, %v", got, err)
	}
	if _, err := g.Resolve(ctx, "missing.trove.test"); err == nil {
		t.Error("a name that does not resolve was resolved")
	}
}

func TestCurlResolve(t *testing.T) {
	for _, c := range [][4]string{
		{"Git.Example.com", "443", "93.184.215.14", "git.example.com:443:93.184.215.14"},
		{"git.example.com", "80", "2606:4700::1111", "git.example.com:80:[2606:4700::1111]"},
		{"[2606:4700::1111]", "443", "2606:4700::1111", "[2606:4700::1111]:443:[2606:4700::1111]"},
	} {
		if got := CurlResolve(c[0], c[1], netip.MustParseAddr(c[2])); got != c[3] {
			t.Errorf("CurlResolve(%q) = %q, want %q", c[0], got, c[3])
		}
	}
}
