package server

import (
	"net/http"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/route"
)

// The pre-router. ServeMux's routing (cleaning the path, walking its
// pattern tree, unescaping segments and allocating the path values) was a
// fifth of a cached protocol answer's CPU (docs/benchmarks.md). The hot
// protocol routes, and the web UI's most read pages (DirectUI), are few
// and their paths simple, so a request to one of them is matched here
// first, with no allocation, and everything else goes to the mux
// unchanged.
//
// The pre-router claims a request only when it can prove the mux would
// route it to the same pattern with the same path values: a GET or HEAD
// whose path is written the default way (no RawPath), holds only
// unreserved bytes (letters, digits, "-", ".", "_", "~" and the "/"
// separators: no "%", so the mux's unescaping changes nothing), has no
// empty, "." or ".." segment (which the mux would redirect) and has the
// exact segment shape of one of the routes: the same number of segments
// and the same literals, no trailing "/" (but for a pattern that ends in
// "/", which matches every path under it). Trove registers no host
// patterns. New checks at start-up that the mux routes a sample path of
// every pre-routed pattern to that pattern, and the tests compare the
// pre-router with the mux on a table of odd paths and under fuzzing
// (fastroute_test.go).
//
// A pre-routed request has r.Pattern set as the mux would set it (the
// metrics and the access line read it), but no path values: its handler
// takes them as arguments. Each handler has one implementation; the
// HandlerFunc registered on the mux reads its PathValues and calls it.

// maxRouteSegments bounds the segments of a pre-routed pattern.
const maxRouteSegments = len(pathValues{})

// pathValues are the wildcard values of a pre-routed path, in the order
// of the pattern's wildcards. It is passed by value: an array behind a
// pointer would escape to the heap through the indirect call.
type pathValues = route.Values

// fastRoute is one pattern the pre-router serves.
type fastRoute struct {
	// pattern is the pattern exactly as registered on the mux (it
	// becomes r.Pattern): "GET /v1/providers/{namespace}/{type}/versions".
	pattern string
	// serve answers a request matched to pattern with its path values.
	serve func(w http.ResponseWriter, r *http.Request, v pathValues)

	segs   []string // the path's segments: "" stands for a wildcard
	prefix bool     // the pattern ends in "/": it matches every path under segs
}

// fastRouter serves the requests of its routes and hands every other
// request to the mux.
type fastRouter struct {
	routes []fastRoute
	mux    *http.ServeMux
}

// unreserved marks the bytes a pre-routed path may hold besides "/": the
// ones that escape to themselves and that no router reads specially.
var unreserved = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['-'], t['.'], t['_'], t['~'] = true, true, true, true
	return t
}()

// newFastRouter returns a router of routes in front of mux, whose
// registered patterns are all of registered. It refuses a pattern it
// cannot pre-route (a host, a method other than GET, a wildcard that is
// not a whole segment, "{...}" or "{$}"), one the mux does not route a
// sample path of to that very pattern (a pattern not registered), and one
// another registered pattern shadows for some of the paths it would
// claim: for every other pattern that can match a path the route claims,
// a witness path of both (witness) must reach the route in the mux.
func newFastRouter(mux *http.ServeMux, registered []string, routes []fastRoute) (*fastRouter, error) {
	fr := &fastRouter{mux: mux}
	for _, rt := range routes {
		path, ok := strings.CutPrefix(rt.pattern, "GET ")
		if !ok && !strings.HasPrefix(rt.pattern, "/") {
			return nil, registry.Errorf(registry.Internal, "pre-router: pattern %q: only GET patterns and patterns of every method without a host", rt.pattern)
		}
		if !ok {
			path = rt.pattern
		}
		if !strings.HasPrefix(path, "/") || len(path) < 2 {
			return nil, registry.Errorf(registry.Internal, "pre-router: pattern %q has no path under /", rt.pattern)
		}
		rest := path[1:]
		if rt.prefix = strings.HasSuffix(rest, "/"); rt.prefix {
			rest = rest[:len(rest)-1]
		}
		rt.segs = strings.Split(rest, "/")
		wild, sample := 0, ""
		for i, s := range rt.segs {
			lit := s
			if strings.HasPrefix(s, "{") {
				if !strings.HasSuffix(s, "}") || len(s) < 3 || strings.ContainsAny(s, ".$") {
					return nil, registry.Errorf(registry.Internal, "pre-router: pattern %q: segment %q", rt.pattern, s)
				}
				rt.segs[i], lit = "", "x"
				wild++
			} else if !plainSegment(s) {
				return nil, registry.Errorf(registry.Internal, "pre-router: pattern %q: segment %q", rt.pattern, s)
			}
			sample += "/" + lit
		}
		if len(rt.segs) > maxRouteSegments || (rt.prefix && wild > 0) {
			return nil, registry.Errorf(registry.Internal, "pre-router: pattern %q: too many segments or a wildcard in a prefix", rt.pattern)
		}
		if rt.prefix {
			sample += "/x"
		}
		req, err := http.NewRequest(http.MethodGet, "http://trove.invalid"+sample, nil)
		if err != nil {
			return nil, registry.Wrap(registry.Internal, err, "pre-router: sample path")
		}
		if _, got := mux.Handler(req); got != rt.pattern {
			return nil, registry.Errorf(registry.Internal, "pre-router: the mux routes %s to %q, not %q", sample, got, rt.pattern)
		}
		if err := checkShadows(mux, registered, rt); err != nil {
			return nil, err
		}
		fr.routes = append(fr.routes, rt)
	}
	return fr, nil
}

// checkShadows asks the mux, for every registered pattern that can match
// a path rt claims, where a witness path of both goes: it must go to rt.
func checkShadows(mux *http.ServeMux, registered []string, rt fastRoute) error {
	only := &fastRouter{routes: []fastRoute{rt}}
	for _, other := range registered {
		if other == rt.pattern {
			continue
		}
		method, path, ok := witness(rt, other)
		if !ok {
			continue
		}
		if path == "" {
			return registry.Errorf(registry.Internal, "pre-router: pattern %q: a host pattern is registered (%q)", rt.pattern, other)
		}
		req, err := http.NewRequest(method, "http://trove.invalid"+path, nil)
		if err != nil {
			continue // not a path a client can send
		}
		if got, _ := only.match(req); got == nil {
			continue // not a path the pre-router claims
		}
		if _, got := mux.Handler(req); got != rt.pattern {
			return registry.Errorf(registry.Internal, "pre-router: the mux routes %s %s to %q, not %q", method, path, got, rt.pattern)
		}
	}
	return nil
}

// witness returns a request line (method and path) that both rt claims
// and the pattern other can match, with ok false when there is none or
// other cannot match a GET or HEAD. A host pattern gives ok true and an
// empty path: the pre-router's proof does not cover host routing.
func witness(rt fastRoute, other string) (method, path string, ok bool) {
	method = http.MethodGet
	p := other
	if m, rest, found := strings.Cut(other, " "); found {
		switch m = strings.TrimSpace(m); m {
		case http.MethodGet:
		case http.MethodHead:
			method = http.MethodHead
		default:
			return "", "", false // a GET or HEAD never reaches it
		}
		p = strings.TrimLeft(rest, " \t")
	}
	if !strings.HasPrefix(p, "/") {
		return "", "", true
	}
	p = p[1:]
	prefix := p == "" || strings.HasSuffix(p, "/") // other matches every path under it
	var osegs []string
	if p = strings.TrimSuffix(p, "/"); p != "" {
		osegs = strings.Split(p, "/")
	}
	kind := func(s string) byte { // 'l'iteral, 'w'ildcard, 'm'ulti-segment, 'e'nd anchor
		switch {
		case s == "{$}":
			return 'e'
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}"):
			return 'm'
		case strings.HasPrefix(s, "{"):
			return 'w'
		}
		return 'l'
	}
	fill := func(i int) string { // rt's segment i as a witness
		if rt.segs[i] == "" {
			return "x"
		}
		return rt.segs[i]
	}
	var out []string
	// rt's own segments first: other must agree with each.
	for i := range rt.segs {
		if i >= len(osegs) {
			if !prefix {
				return "", "", false // other is shorter and exact
			}
			for j := i; j < len(rt.segs); j++ {
				out = append(out, fill(j))
			}
			if rt.prefix {
				out = append(out, "x")
			}
			return method, "/" + strings.Join(out, "/"), true
		}
		switch s := osegs[i]; kind(s) {
		case 'e':
			return "", "", false // other ends in "/" inside rt's segments
		case 'm':
			for j := i; j < len(rt.segs); j++ {
				out = append(out, fill(j))
			}
			if rt.prefix {
				out = append(out, "x")
			}
			return method, "/" + strings.Join(out, "/"), true
		case 'w':
			out = append(out, fill(i))
		default:
			if rt.segs[i] != "" && rt.segs[i] != s {
				return "", "", false
			}
			out = append(out, s)
		}
	}
	rest := osegs[len(rt.segs):]
	if !rt.prefix {
		// rt claims exactly its segments, without a trailing "/".
		if len(rest) > 0 || prefix {
			return "", "", false
		}
		return method, "/" + strings.Join(out, "/"), true
	}
	// rt claims every path under it: follow other's remaining segments.
	for _, s := range rest {
		switch kind(s) {
		case 'e':
			return method, "/" + strings.Join(out, "/") + "/", true
		case 'm', 'w':
			out = append(out, "x")
			if kind(s) == 'm' {
				return method, "/" + strings.Join(out, "/"), true
			}
		default:
			out = append(out, s)
		}
	}
	if len(rest) == 0 && !prefix {
		return "", "", false // other is exactly rt's prefix without its "/"
	}
	if prefix {
		out = append(out, "x")
	}
	return method, "/" + strings.Join(out, "/"), true
}

// plainSegment reports whether s is a segment a pre-routed path may have.
func plainSegment(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !unreserved[s[i]] {
			return false
		}
	}
	return true
}

func (fr *fastRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rt, v := fr.match(r); rt != nil {
		r.Pattern = rt.pattern
		rt.serve(w, r, v)
		return
	}
	fr.mux.ServeHTTP(w, r)
}

// match returns the route of r and its path values, or nil when the mux
// must route r.
func (fr *fastRouter) match(r *http.Request) (*fastRoute, pathValues) {
	var v pathValues
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawPath != "" || r.URL.Opaque != "" {
		return nil, v
	}
	p := r.URL.Path
	if len(p) < 2 || p[0] != '/' {
		return nil, v
	}
	var segs pathValues
	n := 0            // segments of p
	trailing := false // p ends in "/"
	for rest := p[1:]; ; {
		seg, next, more := strings.Cut(rest, "/")
		if seg == "" && !more && n > 0 {
			trailing = true
			break
		}
		if !plainSegment(seg) {
			return nil, v
		}
		if n < len(segs) {
			segs[n] = seg
		}
		n++
		if !more {
			break
		}
		rest = next
	}
	for i := range fr.routes {
		rt := &fr.routes[i]
		if rt.prefix {
			if n < len(rt.segs) || (n == len(rt.segs) && !trailing) {
				continue // "/v2" is not under "/v2/"
			}
		} else if trailing || n != len(rt.segs) {
			continue
		}
		k, ok := 0, true
		for j, lit := range rt.segs {
			switch {
			case lit == "":
				v[k] = segs[j]
				k++
			case lit != segs[j]:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			return rt, v
		}
		v = pathValues{}
	}
	return nil, v
}
