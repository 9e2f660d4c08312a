package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/route"
)

// Each page DirectRoutes offers answers as the handler Register mounts at
// its pattern, given the values the mux gives that pattern: the same
// status, headers and bytes, for pages that exist, that do not, that are
// refused, with a query and with a session cookie that is not one, with
// the page cached by either of them first.
func TestDirectRoutesAnswerAsTheMux(t *testing.T) {
	x := &storeIndex{}
	var logged strings.Builder
	s := storeService(t, x, &logged)
	publishWidgetAndNetwork(t, s, x, `{"readme":"# network"}`)
	mux := http.NewServeMux()
	s.Register(mux)
	direct := map[string]route.Direct{}
	for _, d := range s.DirectRoutes() {
		direct[d.Pattern] = d
	}
	paths := []string{
		"/namespaces/acme", "/namespaces/acme?page=2", "/namespaces/nope", "/namespaces/ACME", "/namespaces/-x-",
		"/providers/acme/widget", "/providers/acme/widget/1.0.0", "/providers/acme/widget/9.9.9", "/providers/acme/Widget",
		"/providers/acme/widget?version=1.0.0", "/providers/nope/widget", "/providers/acme/wid_get",
		"/modules/acme/network/aws", "/modules/acme/network/aws/1.0.0", "/modules/acme/network/aws/2.0.0",
		"/modules/acme/network/aws?version=1.0.0", "/modules/acme/network/gcp", "/modules/acme/-bad-/aws", "/modules/ACME/Network/AWS",
	}
	codes := map[int]int{}
	for round := range 2 {
		s.Invalidate()
		for _, p := range paths {
			for _, cookie := range []string{"", sessionCookie + "=not-a-session"} {
				r := httptest.NewRequest(http.MethodGet, p, nil)
				r.Header.Set("Accept", "text/html")
				if cookie != "" {
					r.Header.Set("Cookie", cookie)
				}
				_, pattern := mux.Handler(r)
				d, ok := direct[pattern]
				if !ok {
					t.Fatalf("%s: the mux routes it to %q, which is not a direct route", p, pattern)
				}
				var values route.Values
				probe := http.NewServeMux()
				probe.HandleFunc(pattern, func(_ http.ResponseWriter, r *http.Request) {
					i := 0
					for seg := range strings.SplitSeq(pattern, "/") {
						if strings.HasPrefix(seg, "{") {
							values[i] = r.PathValue(strings.Trim(seg, "{}"))
							i++
						}
					}
				})
				probe.ServeHTTP(httptest.NewRecorder(), r.Clone(r.Context()))
				viaMux, viaDirect := httptest.NewRecorder(), httptest.NewRecorder()
				serveMux := func() { mux.ServeHTTP(viaMux, r.Clone(r.Context())) }
				serveDirect := func() { d.Serve(viaDirect, r.Clone(r.Context()), values) }
				if round == 0 {
					serveMux()
					serveDirect()
				} else {
					serveDirect()
					serveMux()
				}
				codes[viaMux.Code]++
				if viaMux.Code != viaDirect.Code || viaMux.Body.String() != viaDirect.Body.String() {
					t.Errorf("%s (cookie %q): direct %d, %d bytes; the mux's %d, %d bytes", p, cookie, viaDirect.Code, viaDirect.Body.Len(), viaMux.Code, viaMux.Body.Len())
				}
				for k, v := range viaMux.Header() {
					if got := viaDirect.Header()[k]; strings.Join(got, "\n") != strings.Join(v, "\n") {
						t.Errorf("%s (cookie %q): direct %s %q, the mux's %q", p, cookie, k, got, v)
					}
				}
				if len(viaMux.Header()) != len(viaDirect.Header()) {
					t.Errorf("%s (cookie %q): direct headers %v, the mux's %v", p, cookie, viaDirect.Header(), viaMux.Header())
				}
			}
		}
	}
	if codes[http.StatusOK] == 0 || codes[http.StatusNotFound] == 0 || codes[http.StatusSeeOther] == 0 {
		t.Errorf("answers %v: want pages, refusals and redirects", codes)
	}
}

// publishWidgetAndNetwork publishes the provider acme/widget 1.0.0 and
// the module acme/network/aws 1.0.0 (with metadata) into x, the index of
// s.
func publishWidgetAndNetwork(t *testing.T, s *Service, x *storeIndex, metadata string) {
	t.Helper()
	pv := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: testDigest("a"), SHASumsSignatureDigest: testDigest("b"), SigningKey: testKey("acme"), PublishedAt: s.opt.Now(),
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip", SHA256: testDigest("c"), Size: 1234}}}
	mv := registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0", ArchiveDigest: testDigest("d"),
		ArchiveFormat: "tar.gz", ArchiveSize: 4096, Metadata: []byte(metadata), PublishedAt: s.opt.Now()}
	if err := x.CreateProviderVersion(t.Context(), pv); err != nil {
		t.Fatal(err)
	}
	if err := x.CreateModuleVersion(t.Context(), mv); err != nil {
		t.Fatal(err)
	}
}
