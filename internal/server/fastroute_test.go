package server

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/web"
)

// muxValues routes r on a mux holding only pattern and returns the path
// values the mux gives its handler, by the pattern's wildcards in order
// (ok false if that mux did not route r to pattern). The real mux routes
// the same path to the same pattern (checked by the caller), and the
// values depend only on the pattern and the path.
func muxValues(t testing.TB, pattern string, r *http.Request) (vals []string, ok bool) {
	t.Helper()
	var names []string
	for seg := range strings.SplitSeq(pattern, "/") {
		if strings.HasPrefix(seg, "{") {
			names = append(names, strings.Trim(seg, "{}"))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		ok = r.Pattern == pattern
		for _, n := range names {
			vals = append(vals, r.PathValue(n))
		}
	})
	mux.ServeHTTP(httptest.NewRecorder(), r.Clone(r.Context()))
	return vals, ok
}

// readRequest parses a request as the server reads one off the wire.
func readRequest(method, target string) (*http.Request, error) {
	return http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: trove.test\r\n\r\n")))
}

// checkClaim fails t unless the mux routes every request the pre-router
// claims to the same pattern with the same path values. It returns
// whether the pre-router claimed r.
func checkClaim(t testing.TB, s *Server, r *http.Request) bool {
	t.Helper()
	fr := s.handler.(*middleware).next.(*fastRouter)
	rt, v := fr.match(r)
	if rt == nil {
		return false
	}
	if _, pattern := s.mux.Handler(r); pattern != rt.pattern {
		t.Fatalf("%s %q (raw %q): pre-routed to %q, the mux routes it to %q", r.Method, r.URL.Path, r.URL.RawPath, rt.pattern, pattern)
	}
	want, ok := muxValues(t, rt.pattern, r)
	if !ok {
		t.Fatalf("%s %q: a mux of %q alone does not route it there", r.Method, r.URL.Path, rt.pattern)
	}
	got := v[:len(want)]
	if !slices.Equal(got, want) || slices.ContainsFunc(v[len(want):], func(s string) bool { return s != "" }) {
		t.Fatalf("%s %q: pre-routed values %q, the mux's %q", r.Method, r.URL.Path, v, want)
	}
	return true
}

// fastTestServer is a server for the pre-router's tests (routing reads
// nothing of the index), with echoUI as its web UI.
func fastTestServer(t testing.TB) *Server {
	return newTestServerUI(t, http.NotFoundHandler(), "https://trove.test", echoUI{}).srv
}

// echoUI is a web UI with the patterns of the web UI's pre-routed pages
// (web.Service.DirectRoutes) and of its other pages that share their
// first segment, each of which answers its pattern and path values,
// read from the request through the mux, or given by the pre-router.
type echoUI struct{}

// echoUIPatterns are echoUI's patterns: the web UI's pre-routed ones
// first.
var echoUIPatterns = []string{
	web.RouteNamespace, web.RouteProvider, web.RouteProviderVersion, web.RouteModule, web.RouteModuleVersion,
	"GET /providers/{namespace}/{type}/{version}/docs/{category}/{slug}",
	"GET /namespaces/{namespace}/settings", "GET /namespaces/{namespace}/git-sources",
	"POST /namespaces/{namespace}/settings/members",
}

func (echoUI) Register(mux route.Registrar) {
	for _, p := range echoUIPatterns {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			var v route.Values
			i := 0
			for seg := range strings.SplitSeq(p, "/") {
				if strings.HasPrefix(seg, "{") {
					v[i] = r.PathValue(strings.Trim(seg, "{}"))
					i++
				}
			}
			echo(w, r, v)
		})
	}
}

func (echoUI) NotFound(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "ui: no page", http.StatusNotFound)
}
func (echoUI) Invalidate() {}

func (echoUI) DirectRoutes() []route.Direct {
	var ds []route.Direct
	for _, p := range echoUIPatterns[:5] {
		ds = append(ds, route.Direct{Pattern: p, Serve: echo})
	}
	return ds
}

// echo answers the pattern of r and the path values v.
func echo(w http.ResponseWriter, r *http.Request, v route.Values) {
	_, _ = fmt.Fprintf(w, "%s %q", r.Pattern, v)
}

// fastRouteCases are paths the pre-router must claim (true) or leave to
// the mux (false), for GET.
var fastRouteCases = []struct {
	target string
	claim  bool
}{
	{"/v1/providers/acme/widget/versions", true},
	{"/v1/providers/acme/widget/1.2.3/download/linux/amd64", true},
	{"/v1/providers/Acme/Wid-get_x~/1.2.3-rc.1/download/linux/amd64", true},
	{"/v1/mirror/trove.test/acme/widget/index.json", true},
	{"/v1/mirror/trove.test/acme/widget/1.2.3.json", true},
	{"/v1/mirror/trove.test/acme/widget/...", true}, // "..." is no dot segment: the handler refuses it
	{"/v1/modules/acme/net/aws/versions", true},
	{"/v1/modules/acme/net/aws/1.0.0/download", true},
	{"/v1/modules/acme/net/aws/download/download", true}, // version "download"
	{"/v2/providers/acme/widget/manifests/1.2.3", true},
	{"/v2/", true},
	{"/v2/x/", true},
	{"/v2/a/b/c/d/e/f/g/h/i/j/k", true},
	{"/v1/providers/acme/widget/versions/", false}, // trailing slash: the mux's 404
	{"/v1/providers/acme/versions", false},
	{"/v1/providers/acme/widget/extra/versions", false},
	{"/v1/providers/acme/widget/1.2.3/download/linux", false},
	{"/v1/providers/acme/widget/1.2.3/download/linux/amd64/", false},
	{"/v1/providers/acme/widget/1.2.3/downloads/linux/amd64", false},
	{"/v1/providers//widget/versions", false},
	{"/v1/providers/./widget/versions", false},
	{"/v1/providers/../providers/acme/widget/versions", false},
	{"/v1/providers/acme/widget/..", false},
	{"/v1/providers/acme/widget/.", false},
	{"/v1/providers/a%63me/widget/versions", false}, // encoded: the mux decodes
	{"/v1/providers/acme%2Fx/widget/versions", false},
	{"/v1/providers/acme/wid%20get/versions", false},
	{"/v1/providers/acme/wid+get/versions", false},
	{"/v1/providers/acme/wid:get/versions", false},
	{"/v1/providers/acme/wid@get/versions", false},
	{"/v1/providers/acme/%7Bx%7D/versions", false},
	{"/v1/modules/acme/net/aws", false},          // RouteLatest
	{"/v1/modules/acme/net/aws/1.0.0", false},    // RouteVersion
	{"/v1/modules/acme/net/aws/download", false}, // RouteDownloadLatest
	{"/v1/modules/search", false},                // RouteSearch
	{"/v1/modules/acme/net/aws/1.0.0/download/", false},
	{"/v1/mirror/trove.test/acme/widget", false},
	{"/v1/mirror/trove.test/acme/widget/index.json/", false},
	{"/v2", false},
	{"/v2//x", false},
	{"/v2/x/../y", false},
	{"/v2/a%2fb", false},
	{"/V2/x", false},
	{"/v1/Providers/acme/widget/versions", false},
	{"/", false},
	{"/.well-known/terraform.json", false},
	{"/api/v1/namespaces", false},
	{"*", false},
	{"http://trove.test/v1/providers/acme/widget/versions", true}, // absolute form: same path
	// The web UI's pages (echoUI).
	{"/namespaces/acme", true},
	{"/providers/acme/widget", true},
	{"/providers/acme/widget/1.2.3", true},
	{"/modules/acme/net/aws", true},
	{"/modules/acme/net/aws/1.0.0-rc.1", true},
	{"/namespaces/acme/", false}, // trailing slash: the mux's answer
	{"/namespaces/acme/settings", false},
	{"/namespaces/acme/git-sources", false},
	{"/providers/acme/widget/1.2.3/docs/resources/thing", false},
	{"/providers/acme/widget/1.2.3/docs", false},
	{"/providers/acme", false},
	{"/providers/acme/wid%67et", false},
	{"/providers/acme/widget/..", false},
	{"/modules/acme/net", false},
	{"/modules/acme/net/aws/1.0.0/extra", false},
	{"/modules/acme//aws", false},
	{"/Modules/acme/net/aws", false},
	{"/namespaces", false},
}

func TestFastRouterClaimsOnlyWhatTheMuxRoutesTheSame(t *testing.T) {
	s := fastTestServer(t)
	for _, c := range fastRouteCases {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			r, err := readRequest(method, c.target)
			if err != nil {
				t.Fatalf("%s: %v", c.target, err)
			}
			if got := checkClaim(t, s, r); got != c.claim {
				t.Errorf("%s %s: claimed %v, want %v", method, c.target, got, c.claim)
			}
		}
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, "PROPFIND"} {
			r, err := readRequest(method, c.target)
			if err != nil {
				t.Fatalf("%s: %v", c.target, err)
			}
			if checkClaim(t, s, r) {
				t.Errorf("%s %s: claimed", method, c.target)
			}
		}
	}
}

// The requests the pre-router leaves still get the mux's redirects, 404s
// and 405s: through the router as from the mux alone.
func TestFastRouterLeavesTheMuxItsAnswers(t *testing.T) {
	s := fastTestServer(t)
	fr := s.handler.(*middleware).next.(*fastRouter)
	for _, c := range []struct {
		method, target string
		status         int
		header, value  string
	}{
		// Other methods reach the "/" fallback (every method), which
		// answers 405 with the methods the path takes.
		{http.MethodPost, "/v1/providers/acme/widget/versions", http.StatusMethodNotAllowed, "Allow", "GET, HEAD"},
		{http.MethodDelete, "/v1/modules/acme/net/aws/1.0.0/download", http.StatusMethodNotAllowed, "Allow", "GET, HEAD"},
		{http.MethodPut, "/v2/x", http.StatusMethodNotAllowed, "Docker-Distribution-Api-Version", "registry/2.0"}, // the OCI API's own
		{http.MethodGet, "/v2", http.StatusOK, "Docker-Distribution-Api-Version", "registry/2.0"},
		// The mux redirects to the cleaned path (the middleware answers
		// 400 before: paths.go).
		{http.MethodGet, "/v1/providers/acme/./widget/versions", http.StatusTemporaryRedirect, "Location", "/v1/providers/acme/widget/versions"},
		{http.MethodGet, "/v1/providers//acme/widget/versions", http.StatusTemporaryRedirect, "Location", "/v1/providers/acme/widget/versions"},
		{http.MethodGet, "/v1/providers/acme/widget/versions/", http.StatusNotFound, "", ""},
		{http.MethodGet, "/v1/providers/acme/widget/1.0.0/download/linux/amd64/", http.StatusNotFound, "", ""},
	} {
		r, err := readRequest(c.method, c.target)
		if err != nil {
			t.Fatal(err)
		}
		if checkClaim(t, s, r) {
			t.Fatalf("%s %s: claimed", c.method, c.target)
		}
		viaRouter, viaMux := httptest.NewRecorder(), httptest.NewRecorder()
		fr.ServeHTTP(viaRouter, r.Clone(r.Context()))
		s.mux.ServeHTTP(viaMux, r.Clone(r.Context()))
		for _, w := range []*httptest.ResponseRecorder{viaRouter, viaMux} {
			if w.Code != c.status || (c.header != "" && w.Header().Get(c.header) != c.value) {
				t.Errorf("%s %s: %d %s=%q, want %d %q", c.method, c.target, w.Code, c.header, w.Header().Get(c.header), c.status, c.value)
			}
		}
	}
}

// A pre-routed request is answered as the mux's route answers it, and
// r.Pattern is the mux's.
func TestFastRouterAnswersAsTheMux(t *testing.T) {
	s := fastTestServer(t)
	fr := s.handler.(*middleware).next.(*fastRouter)
	for _, target := range []string{
		"/v1/providers/acme/nothing/versions",
		"/v1/providers/acme/nothing/1.0.0/download/linux/amd64",
		"/v1/providers/acme/nothing/x/download/linux/amd64",
		"/v1/mirror/trove.test/acme/nothing/index.json",
		"/v1/mirror/trove.test/acme/nothing/1.0.0.json",
		"/v1/mirror/trove.test/acme/nothing/1.0.0.txt",
		"/v1/mirror/upstream.test/acme/nothing/index.json",
		"/v1/modules/acme/nothing/aws/versions",
		"/v1/modules/acme/nothing/aws/1.0.0/download",
		"/v1/modules/-bad-/nothing/aws/versions",
		"/v2/providers/acme/nothing/manifests/1.0.0",
		"/v2/",
		"/namespaces/acme",
		"/providers/acme/widget",
		"/providers/acme/widget/1.2.3",
		"/modules/acme/net/aws",
		"/modules/acme/net/aws/1.0.0",
	} {
		r, err := readRequest(http.MethodGet, target)
		if err != nil {
			t.Fatal(err)
		}
		if !checkClaim(t, s, r) {
			t.Fatalf("%s: not claimed", target)
		}
		viaRouter, viaMux := httptest.NewRecorder(), httptest.NewRecorder()
		rr, rm := r.Clone(r.Context()), r.Clone(r.Context())
		fr.ServeHTTP(viaRouter, rr)
		s.mux.ServeHTTP(viaMux, rm)
		if rr.Pattern != rm.Pattern || rr.Pattern == "" {
			t.Errorf("%s: pattern %q, the mux's %q", target, rr.Pattern, rm.Pattern)
		}
		if viaRouter.Code != viaMux.Code || viaRouter.Body.String() != viaMux.Body.String() {
			t.Errorf("%s: %d %s\nthe mux's: %d %s", target, viaRouter.Code, viaRouter.Body, viaMux.Code, viaMux.Body)
		}
	}
}

// Matching allocates nothing.
func TestFastRouterMatchAllocatesNothing(t *testing.T) {
	s := fastTestServer(t)
	fr := s.handler.(*middleware).next.(*fastRouter)
	r := httptest.NewRequest(http.MethodGet, "/v1/providers/acme/widget/1.2.3/download/linux/amd64", nil)
	if n := testing.AllocsPerRun(100, func() {
		if rt, _ := fr.match(r); rt == nil {
			t.Fatal("not matched")
		}
	}); n != 0 {
		t.Errorf("%v allocations per match", n)
	}
}

// A pattern the pre-router cannot serve, or one another registered
// pattern shadows for some of the paths it would claim, is refused at
// start-up; one only less specific patterns overlap is accepted.
func TestFastRouterRefusesShadowedPatterns(t *testing.T) {
	serve := func(http.ResponseWriter, *http.Request, pathValues) {}
	newMux := func(patterns ...string) (*http.ServeMux, []string) {
		rec := &route.Recorder{Mux: http.NewServeMux()}
		for _, p := range patterns {
			rec.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
		return rec.Mux, rec.Patterns()
	}
	for _, c := range []struct {
		route      string
		registered []string
		accepted   bool
	}{
		{"GET /v1/c/{x}", []string{"GET /v1/a/{x}"}, false}, // not registered
		{"POST /v1/a/{x}", []string{"POST /v1/a/{x}"}, false},
		{"GET /v1/a/{x...}", []string{"GET /v1/a/{x...}"}, false},
		{"GET /v1/a/{$}", []string{"GET /v1/a/{$}"}, false},
		{"GET trove.test/v1/a/{x}", []string{"GET trove.test/v1/a/{x}"}, false},
		{"GET /v1/a/{x}/", []string{"GET /v1/a/{x}/"}, false},
		// A literal where the route has a wildcard takes some of its paths.
		{"GET /v1/a/{x}", []string{"GET /v1/a/{x}", "GET /v1/a/b"}, false},
		{"GET /v1/p/{ns}/{type}/versions", []string{"GET /v1/p/{ns}/{type}/versions", "GET /v1/p/acme/aws/versions"}, false},
		{"GET /v1/p/{ns}/{type}/versions", []string{"GET /v1/p/{ns}/{type}/versions", "HEAD /v1/p/{ns}/{type}/versions"}, false},
		{"GET /v2/", []string{"GET /v2/", "GET /v2/{$}"}, false},
		{"GET /v2/", []string{"GET /v2/", "GET /v2/_catalog"}, false},
		{"GET /v2/", []string{"GET /v2/", "GET /v2/{name}/blobs/{digest}"}, false},
		{"GET /v1/a/{x}", []string{"GET /v1/a/{x}", "GET trove.test/"}, false}, // host patterns are not covered
		// Less specific, other methods, or no overlap at all.
		{"GET /v1/a/{x}", []string{"GET /v1/a/{x}", "/", "GET /v1/", "/v1/{rest...}", "POST /v1/a/b", "GET /v1/a/b/c", "GET /v1/a/{x}/c", "GET /v1/b/{x}", "GET /v1/a"}, true},
		{"GET /v2/", []string{"GET /v2/", "/", "GET /v2", "GET /v1/"}, true},
	} {
		mux, registered := newMux(c.registered...)
		_, err := newFastRouter(mux, registered, []fastRoute{{pattern: c.route, serve: serve}})
		if c.accepted && err != nil {
			t.Errorf("%q beside %q refused: %v", c.route, c.registered, err)
		}
		if !c.accepted && err == nil {
			t.Errorf("%q beside %q accepted", c.route, c.registered)
		}
	}
}

// FuzzFastRouter checks every path the pre-router claims against the mux
// (its seeds run as a test).
func FuzzFastRouter(f *testing.F) {
	for _, c := range fastRouteCases {
		f.Add(uint8(0), c.target)
	}
	f.Add(uint8(1), "/v1/providers/acme/widget/versions")
	f.Add(uint8(2), "/v2/x")
	s := fastTestServer(f)
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, "CONNECT"}
	f.Fuzz(func(t *testing.T, m uint8, target string) {
		method := methods[int(m)%len(methods)]
		r, err := readRequest(method, target)
		if err != nil {
			return
		}
		if checkClaim(t, s, r) && method != http.MethodGet && method != http.MethodHead {
			t.Fatalf("%s %q claimed", method, target)
		}
	})
}
