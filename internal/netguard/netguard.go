// Package netguard is Trove's one guard against server-side request
// forgery (SSRF): the rule of which addresses are public (Public), the
// check of a host name written in a URL before anything is stored
// (CheckHost), and the checks at connection time that every outgoing
// fetch of a user-named location goes through: a net.Dialer Control
// function that judges every address actually dialled (Guard.Control,
// Guard.Dialer) and, for programs Trove runs rather than dials for (git),
// a resolution that returns an allowed address to pin the program to
// (Guard.Resolve, CurlResolve).
//
// Webhook deliveries, the module mirror and git sources all use it; each
// names its own opt-out flag in the errors (Guard.Flag).
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// nonPublic are the address ranges besides loopback, private, link-local,
// multicast and unspecified ones that Public refuses.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated), may embed private IPv4
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64, may reach IPv4 private ranges
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002::/16"),      // 6to4, may embed private IPv4
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("192.88.99.0/24"), // 6to4 relay anycast
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Public reports whether ip is a public unicast address: not loopback,
// private (RFC 1918, fc00::/7), link-local (the cloud metadata address
// 169.254.169.254 included), multicast, unspecified, carrier-grade NAT or
// another special-purpose range. An IPv4-mapped IPv6 address is judged as
// its IPv4 address.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// HostError is a host name refused by CheckHost. Its message completes
// "<the URL> ...": "names the non-public address 127.0.0.1".
type HostError struct {
	Host string
	// Addr is the literal address the host names, if it names one.
	Addr netip.Addr
	// NonStandard is set for a numeric host in a legacy form (127.1).
	NonStandard bool
}

// Error says what the host names.
func (e *HostError) Error() string {
	switch {
	case e.Addr.IsValid():
		return fmt.Sprintf("names the non-public address %s", e.Addr)
	case e.NonStandard:
		return fmt.Sprintf("names the address %q in a non-standard form: write an IP address in dotted decimal (IPv4) or in brackets (IPv6), or use a host name", e.Host)
	}
	return "names localhost"
}

// CheckHost checks the host of a URL (u.Hostname(); brackets allowed)
// before it is stored: it refuses a literal non-public address in any
// form (::ffff:127.0.0.1, fe80::1%eth0), localhost and the names under
// .localhost (with or without the root's trailing dot), and numeric hosts
// in the legacy forms resolvers read differently (127.1, 0x7f.1,
// 2130706433, 0177.0.0.1), which are refused rather than judged. Other
// names pass: what they resolve to is judged when connecting (Guard).
func CheckHost(host string) error {
	// The name as a resolver reads it: case and the root's trailing dots
	// do not change which address it names.
	h := strings.TrimRight(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		if !Public(ip) {
			return &HostError{Host: host, Addr: ip.WithZone("")}
		}
		return nil
	}
	if h == "" || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return &HostError{Host: host}
	}
	if numericHost(h) {
		return &HostError{Host: host, NonStandard: true}
	}
	return nil
}

// numericHost reports whether host could be read as an IPv4 address in one
// of the legacy forms resolvers accept (127.1, 0x7f.1, 2130706433, 0177.0.0.1):
// dot-separated parts of digits or 0x-prefixed hex digits only.
func numericHost(host string) bool {
	for part := range strings.SplitSeq(host, ".") {
		if h, ok := strings.CutPrefix(part, "0x"); ok {
			if strings.Trim(h, "0123456789abcdef") != "" {
				return false
			}
			continue
		}
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return true
}

// GuardError is a connection refused by the guard: the address it would
// have reached is not public.
type GuardError struct {
	Addr netip.Addr
	// Host is the name that resolved to Addr, if known.
	Host string
	// Flag is the server flag that allows non-public addresses.
	Flag string
	// Name is set instead of Addr when the host itself was refused
	// before resolution (CheckHost: localhost, a legacy numeric form).
	Name *HostError
}

// Error says which address was refused and how to allow it.
func (e *GuardError) Error() string {
	var msg string
	if e.Name != nil {
		msg = "refused to connect to " + e.Host + ": it " + e.Name.Error()
	} else {
		what := e.Addr.String()
		if e.Host != "" && e.Host != what {
			what = e.Host + " (" + what + ")"
		}
		msg = "refused to connect to the non-public address " + what
	}
	if e.Flag != "" {
		msg += " (serve with " + e.Flag + " to allow it)"
	}
	return msg
}

// Guard judges the addresses of outgoing connections. The zero Guard
// refuses every non-public address.
type Guard struct {
	// AllowPrivate turns the guard off: every address is allowed.
	AllowPrivate bool
	// Flag names the server flag that sets AllowPrivate, for errors
	// ("--webhook-allow-private").
	Flag string
	// Resolver resolves names for Resolve; nil is net.DefaultResolver.
	Resolver *net.Resolver
}

// Allowed reports whether the guard lets a connection reach ip.
func (g Guard) Allowed(ip netip.Addr) bool { return g.AllowPrivate || Public(ip) }

// Control is a net.Dialer Control function: it runs after the name was
// resolved, for every address tried, so a name that resolves (or is
// rebound) to a non-public address is refused too, with a *GuardError.
func (g Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused to connect: cannot parse address %q", address)
	}
	if !g.Allowed(ap.Addr()) {
		return &GuardError{Addr: ap.Addr().Unmap(), Flag: g.Flag}
	}
	return nil
}

// Dialer returns a dialer with the guard on every connection and the
// given connect timeout.
func (g Guard) Dialer(timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !g.AllowPrivate {
		d.Control = g.Control
	}
	return d
}

// Resolve returns an address of host (a name or a literal address, with
// or without brackets) that the guard allows, for a program Trove runs
// that must then be pinned to it (CurlResolve for git over http(s)), so
// that no second resolution can be rebound elsewhere. A *GuardError if
// the host resolves to non-public addresses only; literal addresses in
// legacy forms (127.1) are refused as CheckHost refuses them.
func (g Guard) Resolve(ctx context.Context, host string) (netip.Addr, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(h); err == nil {
		ip = ip.Unmap()
		if !g.Allowed(ip) {
			return netip.Addr{}, &GuardError{Addr: ip.WithZone(""), Flag: g.Flag}
		}
		return ip, nil
	}
	if !g.AllowPrivate {
		var he *HostError
		if err := CheckHost(h); errors.As(err, &he) {
			return netip.Addr{}, &GuardError{Host: host, Flag: g.Flag, Name: he}
		}
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if g.Allowed(a) {
			return a.Unmap(), nil
		}
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("%s resolves to no address", host)
	}
	return netip.Addr{}, &GuardError{Addr: addrs[0].Unmap(), Host: host, Flag: g.Flag}
}

// CurlResolve returns the value of git's http.curloptResolve setting
// that pins host:port to addr, so that git (curl) connects to the address
// Resolve allowed without resolving host again. The host is lowercased,
// as curl keys its cache; an IPv6 host or address is bracketed.
func CurlResolve(host, port string, addr netip.Addr) string {
	bracket := func(s string) string {
		if strings.Contains(s, ":") {
			return "[" + s + "]"
		}
		return s
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return bracket(strings.ToLower(host)) + ":" + port + ":" + bracket(addr.String())
}
