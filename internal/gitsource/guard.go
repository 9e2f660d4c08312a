package gitsource

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/registry"
)

// AllowPrivateFlag is the server flag that lets git sources reach
// loopback, private and link-local addresses (Options.Guard).
const AllowPrivateFlag = "--git-source-allow-private"

// remote is where a git URL points.
type remote struct {
	scheme string // https, http, git or ssh (scp-like URLs too)
	host   string // without brackets
	port   string // "" for the transport's default
	parsed *url.URL
}

// defaultPorts are the ports of the transports, for pinning.
var defaultPorts = map[string]string{"https": "443", "http": "80", "git": "9418", "ssh": "22"}

// parseRemote returns the transport, host and port of a URL that
// registry.ParseGitURL accepted. An scp-like URL ([user@]host:path,
// [user@][host]:path, [user@][host:port]:path) is read as git reads it.
func parseRemote(raw string) (remote, error) {
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return remote{}, registry.Errorf(registry.Invalid, "repository URL %q has no host", registry.Elide(raw))
		}
		return remote{scheme: strings.ToLower(scheme), host: u.Hostname(), port: u.Port(), parsed: u}, nil
	}
	r := remote{scheme: "ssh"}
	start := 0
	if i := strings.Index(raw, "@["); i >= 0 {
		start = i + 1
	}
	if strings.HasPrefix(raw[start:], "[") {
		end := strings.IndexByte(raw[start:], ']')
		if end < 0 {
			return remote{}, registry.Errorf(registry.Invalid, "repository URL %q has an unclosed [", registry.Elide(raw))
		}
		inner := raw[start+1 : start+end]
		r.host = inner
		if h, p, err := net.SplitHostPort(inner); err == nil {
			r.host, r.port = h, p
		}
		r.host = r.host[strings.LastIndex(r.host, "@")+1:]
	} else {
		hostPart, _, _ := strings.Cut(raw, ":")
		r.host = hostPart[strings.LastIndex(hostPart, "@")+1:]
	}
	if r.host == "" {
		return remote{}, registry.Errorf(registry.Invalid, "repository URL %q has no host", registry.Elide(raw))
	}
	return r, nil
}

// checkHost refuses, at creation, a URL whose host is a literal
// non-public address or localhost (netguard.CheckHost), unless the guard
// allows them. Names are judged when a sync connects (pinTo).
func checkHost(g netguard.Guard, raw string) error {
	r, err := parseRemote(raw)
	if err != nil {
		return err
	}
	if g.AllowPrivate {
		return nil
	}
	var he *netguard.HostError
	if err := netguard.CheckHost(r.host); errors.As(err, &he) {
		return registry.Errorf(registry.Invalid, "repository URL %q %s: this Trove fetches git sources from public addresses only (serve with %s to allow loopback, private and link-local ones)",
			registry.Elide(raw), he, g.Flag)
	}
	return nil
}

// pin is where the git commands of one sync connect: the address the
// guard allowed for the source's host, resolved once and fixed for every
// command, so that no later resolution (DNS rebinding) leads git
// elsewhere. Over http(s) curl is told the address (http.curloptResolve:
// TLS and the Host header still use the name; redirects are off); over
// ssh, ssh connects to the address (HostName) and checks the host key of
// the name (HostKeyAlias); over git://, the URL names the address.
type pin struct {
	url     string      // the URL given to git
	config  [][2]string // git configuration to add
	sshOpts string      // options to add to the ssh command
}

// pinTo resolves the host of raw with the guard and returns the pin of a
// sync. With AllowPrivate nothing is resolved or pinned.
func pinTo(ctx context.Context, g netguard.Guard, raw string) (pin, error) {
	p := pin{url: raw}
	if g.AllowPrivate {
		return p, nil
	}
	r, err := parseRemote(raw)
	if err != nil {
		return p, err
	}
	addr, err := g.Resolve(ctx, r.host)
	if err != nil {
		var ge *netguard.GuardError
		if errors.As(err, &ge) {
			return p, registry.Errorf(registry.Invalid, "git source %s refused: %s", registry.Elide(raw), ge)
		}
		return p, registry.Errorf(registry.Unavailable, "the repository is unreachable: cannot resolve %s (%v)", r.host, err)
	}
	return pinAddr(raw, r, addr), nil
}

// pinAddr returns the pin of raw (parsed as r) to addr.
func pinAddr(raw string, r remote, addr netip.Addr) pin {
	p := pin{url: raw}
	port := r.port
	if port == "" {
		port = defaultPorts[r.scheme]
	}
	switch r.scheme {
	case "https", "http":
		p.config = append(p.config, [2]string{"http.curloptResolve", netguard.CurlResolve(r.host, port, addr)})
	case "git":
		u := *r.parsed
		u.Host = net.JoinHostPort(addr.String(), port)
		p.url = u.String()
	case "ssh":
		alias := r.host
		if port != "22" {
			alias = "[" + r.host + "]:" + port
		}
		p.sshOpts = " -o HostName=" + addr.String() + " -o HostKeyAlias=" + shellQuote(alias) + " -o CheckHostIP=no"
	}
	return p
}
