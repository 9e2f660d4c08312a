package web

import (
	"context"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// storeIndex is a real SQLite index whose download reads can be made to
// fail one at a time and whose reads of mirrored provenance are counted.
type storeIndex struct {
	*sqlite.Index
	fail       string // the method that fails: "ProviderDownloads", "ModuleDownloads" or "ConsumerDownloads"
	err        error
	provenance int64        // calls of MirroredProvenance (the pages read them on the test's goroutine)
	figures    atomic.Int64 // calls of the three download reads
}

func (x *storeIndex) ProviderDownloads(ctx context.Context, namespace, typ string) ([]registry.DownloadCount, error) {
	x.figures.Add(1)
	if x.fail == "ProviderDownloads" {
		return nil, x.err
	}
	return x.Index.ProviderDownloads(ctx, namespace, typ)
}

func (x *storeIndex) ModuleDownloads(ctx context.Context, namespace, name, system string) ([]registry.DownloadCount, error) {
	x.figures.Add(1)
	if x.fail == "ModuleDownloads" {
		return nil, x.err
	}
	return x.Index.ModuleDownloads(ctx, namespace, name, system)
}

func (x *storeIndex) ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error) {
	x.figures.Add(1)
	if x.fail == "ConsumerDownloads" {
		return nil, x.err
	}
	return x.Index.ConsumerDownloads(ctx, q)
}

func (x *storeIndex) MirroredProvenance(ctx context.Context, host, namespace, typ, version string) ([]byte, []registry.SigningKey, error) {
	x.provenance++
	return x.Index.MirroredProvenance(ctx, host, namespace, typ, version)
}

// storeService returns a Service on x (opened on a new SQLite index,
// public namespace "acme") that logs into logged, with a download
// counter on x.
func storeService(t *testing.T, x *storeIndex, logged *strings.Builder) *Service {
	t.Helper()
	idx := sqlitetest.NewIndex(t)
	x.Index = idx
	if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	counter, err := downloads.New(downloads.Options{Store: x, Consumers: true})
	if err != nil {
		t.Fatal(err)
	}
	s := benchService(t)
	s.opt.Index, s.opt.Downloads = x, counter
	s.opt.Access = auth.NewAccess(auth.NewAuthenticator(idx), idx)
	s.opt.PublicURL = &url.URL{Scheme: "https", Host: "registry.example.com"}
	s.log = slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return s
}

// testKey is a signing key of namespace ns as the index keeps it.
func testKey(ns string) registry.SigningKey {
	return registry.SigningKey{Namespace: ns, KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
		ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\nA\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: time.Unix(1.7e9, 0)}
}

// testDigest is a SHA-256 hex digest made of c.
func testDigest(c string) string { return strings.Repeat(c, 64)[:64] }

// TestDownloadFiguresDegrade makes each read of download figures fail in
// turn (on a real SQLite index): the provider and module pages are still
// served (200), the part that failed says it is unavailable, the rest is
// shown, and the cause is logged once at warn. Such a page is kept in
// the page cache only for pageDegradedAge (on the cache's clock): within
// it the degraded page is served without asking the store, after it the
// next request gets the whole page (which is kept).
func TestDownloadFiguresDegrade(t *testing.T) {
	pv := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: testDigest("a"), SHASumsSignatureDigest: testDigest("b"), SigningKey: testKey("acme"), PublishedAt: time.Now(),
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip", SHA256: testDigest("c"), Size: 1234}}}
	mv := registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0", ArchiveDigest: testDigest("d"),
		ArchiveFormat: "tar.gz", ArchiveSize: 4096, Metadata: []byte(`{"readme":"# network"}`), PublishedAt: time.Now()}
	pages := []struct {
		path, pattern string
		handler       func(*Service) pageHandler
		counts        string
	}{
		{"/providers/acme/widget", "GET /providers/{namespace}/{type}", func(s *Service) pageHandler { return s.providerPage }, "ProviderDownloads"},
		{"/modules/acme/network/aws", "GET /modules/{namespace}/{name}/{system}", func(s *Service) pageHandler { return s.modulePage }, "ModuleDownloads"},
	}
	for _, p := range pages {
		for _, fail := range []string{p.counts, "ConsumerDownloads"} {
			for name, cause := range map[string]error{
				"unavailable":  registry.Errorf(registry.Unavailable, "the index is not reachable"),
				"unclassified": errors.New("disk I/O error"),
			} {
				t.Run(p.path+"/"+fail+"/"+name, func(t *testing.T) {
					x := &storeIndex{}
					var logged strings.Builder
					s := storeService(t, x, &logged)
					var clock atomic.Int64 // the page cache's, in Unix nanoseconds
					clock.Store(time.Now().UnixNano())
					s.pages = newPageCache("web pages", func() time.Time { return time.Unix(0, clock.Load()) }, pageCacheBytes, nil)
					if err := x.CreateProviderVersion(t.Context(), pv); err != nil {
						t.Fatal(err)
					}
					if err := x.CreateModuleVersion(t.Context(), mv); err != nil {
						t.Fatal(err)
					}
					x.fail, x.err = fail, cause

					mux := http.NewServeMux()
					mux.Handle(p.pattern, s.page(p.handler(s)))
					w := httptest.NewRecorder()
					mux.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
					body := w.Body.String()
					if w.Code != 200 {
						t.Fatalf("GET %s: %d; want the page served\n%s", p.path, w.Code, body)
					}
					chartFailed := fail == "ConsumerDownloads"
					unavailable := html.EscapeString(downloadsUnavailable)
					if n := strings.Count(body, unavailable); n != 1 {
						t.Errorf("the page says %d times that the download figures are unavailable; want once", n)
					}
					if got := strings.Contains(body, `id="chart-h"`) && strings.Contains(body, `role="alert">`+unavailable); got != chartFailed {
						t.Errorf("the chart section says it is unavailable: %v; want %v", got, chartFailed)
					}
					if got := strings.Contains(body, "of this version"); got == !chartFailed {
						t.Errorf("the download counts shown: %v; want %v", got, chartFailed)
					}
					if !strings.Contains(body, "1.0.0") {
						t.Errorf("the page lacks its version")
					}
					if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), cause.Error()) {
						t.Errorf("logged %q; want the cause once at warn", logged.String())
					}

					// The degraded page is kept for pageDegradedAge:
					// within it, requests are served that copy without
					// asking the store, even once it has recovered...
					x.fail = ""
					reads := x.figures.Load()
					clock.Add(int64(pageDegradedAge - time.Nanosecond))
					w = httptest.NewRecorder()
					mux.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
					if w.Code != 200 || w.Body.String() != body {
						t.Fatalf("GET %s within the degraded page's age: %d, not the degraded copy\n%s", p.path, w.Code, w.Body.String())
					}
					if n := x.figures.Load() - reads; n != 0 {
						t.Errorf("GET %s within the degraded page's age read the download figures %d times; want it served from the cache", p.path, n)
					}
					// ...after it, the next request gets the whole page...
					clock.Add(int64(time.Nanosecond))
					w = httptest.NewRecorder()
					mux.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
					if w.Code != 200 || strings.Contains(w.Body.String(), unavailable) || !strings.Contains(w.Body.String(), "of this version") {
						t.Fatalf("GET %s after the degraded page's age: %d, the degraded page served again (from the cache)\n%s", p.path, w.Code, w.Body.String())
					}
					// ...which is kept: served from the cache while the
					// store fails again.
					x.fail = fail
					w = httptest.NewRecorder()
					mux.ServeHTTP(w, httptest.NewRequest("GET", p.path, nil))
					if w.Code != 200 || strings.Contains(w.Body.String(), unavailable) {
						t.Errorf("GET %s: the whole page was not kept in the cache: %d\n%s", p.path, w.Code, w.Body.String())
					}
				})
			}
		}
	}
}

// TestMirroredPageReadsOneProvenance: the mirror's page of a provider
// marks the versions with provenance from the one list the index
// answers, and reads the envelope only of the version it shows (none
// when the one chosen has none).
func TestMirroredPageReadsOneProvenance(t *testing.T) {
	x := &storeIndex{}
	var logged strings.Builder
	s := storeService(t, x, &logged)
	const host = "upstream.example"
	for i, version := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"} {
		v := registry.MirroredVersion{Host: host, ProviderVersion: registry.ProviderVersion{Namespace: "hashicorp", Type: "widget", Version: version,
			Protocols: []string{"5.0"}, SHASumsDigest: testDigest(string(rune('a' + i))), SHASumsSignatureDigest: testDigest("f"),
			SigningKey: testKey("hashicorp"), PublishedAt: time.Now(),
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_" + version + "_linux_amd64.zip", SHA256: testDigest(string(rune('0' + i)))}}}}
		if version == "1.1.0" || version == "1.3.0" {
			v.Provenance = []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"x","sig":"c2ln"}]}`)
			v.ProvenanceKeys = []registry.SigningKey{testKey("hashicorp")}
		}
		if _, err := x.PutMirroredVersion(t.Context(), v); err != nil {
			t.Fatal(err)
		}
	}
	visitor := &visit{p: auth.Principal{Token: registry.Token{ID: "s", User: "bob"}, Session: true}, sessionID: "s"}
	for query, want := range map[string]struct {
		reads    int64
		has, not []string
	}{
		"":               {1, []string{"Provenance of 1.3.0", `href="?version=1.1.0#provenance-h"`, `href="?version=1.3.0#provenance-h"`}, []string{`href="?version=1.0.0`, `href="?version=1.2.0`, `href="?version=1.4.0`}},
		"?version=1.1.0": {1, []string{"Provenance of 1.1.0"}, []string{"Provenance of 1.3.0"}},
		"?version=1.4.0": {0, nil, []string{`id="provenance-h"`}},
	} {
		x.provenance = 0
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/mirror/"+host+"/hashicorp/widget"+query, nil)
		r.SetPathValue("host", host)
		r.SetPathValue("namespace", "hashicorp")
		r.SetPathValue("type", "widget")
		if err := s.mirroredPage(w, r, visitor); err != nil || w.Code != 200 {
			t.Fatalf("GET %q: %d, %v", query, w.Code, err)
		}
		if n := x.provenance; n != want.reads {
			t.Errorf("GET %q read the provenance of %d versions; want %d", query, n, want.reads)
		}
		for _, h := range want.has {
			if !strings.Contains(w.Body.String(), h) {
				t.Errorf("GET %q lacks %q", query, h)
			}
		}
		for _, h := range want.not {
			if strings.Contains(w.Body.String(), h) {
				t.Errorf("GET %q has %q", query, h)
			}
		}
	}
}

// TestReaderKey: the home and search pages' cache keys name the page, the
// facts of the visit and the namespaces the visitor may read, in the
// catalog's order, each after a NUL; the search page appends its query
// after two.
func TestReaderKey(t *testing.T) {
	cat := &catalog{names: []string{"acme", "hidden", "zeta"}}
	can := map[string]bool{"acme": true, "zeta": true}
	for _, c := range []struct {
		got  func() string
		want string
	}{
		{func() string { return readerKey("home", cat, can, 0, true, false).String() }, "home\x00true\x00false\x00acme\x00zeta"},
		{func() string { return readerKey("home", cat, nil, 0, false, true).String() }, "home\x00false\x00true"},
		{func() string {
			k := readerKey("search", cat, can, 8, true)
			k.WriteString("\x00\x00q=net")
			return k.String()
		}, "search\x00true\x00acme\x00zeta\x00\x00q=net"},
	} {
		if got := c.got(); got != c.want {
			t.Errorf("key %q, want %q", got, c.want)
		}
	}
}
