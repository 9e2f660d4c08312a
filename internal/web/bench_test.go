package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
)

// benchCatalog is a catalog of the size of a large registry: 50
// namespaces, 2,000 providers and 8,000 modules.
func benchCatalog() (*catalog, map[string]bool) {
	cat := &catalog{namespaces: nil, built: time.Now()}
	can := map[string]bool{}
	words := []string{"network", "vpc", "cluster", "database", "queue", "bucket", "dns", "cdn", "iam", "vault", "kafka", "redis"}
	systems := []string{"aws", "azurerm", "google", "kubernetes"}
	for i := range 50 {
		ns := fmt.Sprintf("team%02d", i)
		cat.names = append(cat.names, ns)
		can[ns] = i%5 != 0 // a fifth are private to the reader
	}
	for i := range 10000 {
		ns := cat.names[i%50]
		w := words[i%len(words)]
		e := entry{Kind: kindModule, Namespace: ns, Name: fmt.Sprintf("%s-%d", w, i), System: systems[i%4], Latest: "1.2.3",
			Versions: 10, Description: "Creates a " + w + " with sensible defaults for " + systems[i%4] + ".", Updated: time.Now()}
		if i%5 == 0 {
			e.Kind, e.System, e.Description = kindProvider, "", ""
		}
		e.haystack = strings.ToLower(e.Namespace + " " + e.Name + " " + e.System + " " + e.Address() + " " + e.Description)
		cat.entries = append(cat.entries, e)
	}
	return cat, can
}

// BenchmarkSearch runs a realistic mix of queries over a catalog of
// 10,000 providers and modules: names, prefixes, namespaces, words of
// descriptions, two-word queries, misses, and filters.
func BenchmarkSearch(b *testing.B) {
	cat, can := benchCatalog()
	queries := []query{
		{Text: "network"}, {Text: "net"}, {Text: "team07"}, {Text: "sensible defaults"}, {Text: "vault aws"},
		{Text: "zzz"}, {Text: "", Kind: kindModule}, {Text: "dns", System: "google"}, {Text: "kafka", Namespace: "team03"},
		{Text: "redis-1234"},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cat.find(queries[i%len(queries)], can, true, 0, searchPageSize)
		i++
	}
}

// benchModule is a module page of a typical module: a 6 KB README, 20
// inputs, 5 outputs, 2 submodules and 30 versions.
func benchModule(testing.TB) moduleData {
	var readme strings.Builder
	readme.WriteString("# Network\n\nCreates a VPC.\n\n")
	for i := range 30 {
		fmt.Fprintf(&readme, "## Section %d\n\nSome *text* with `code` and a [link](#section-%d).\n\n| a | b |\n|---|---|\n| %d | x |\n\n", i, i, i)
	}
	info := modules.ModuleInfo{Readme: readme.String()}
	for i := range 20 {
		info.Inputs = append(info.Inputs, modules.Input{Name: fmt.Sprintf("input_%d", i), Type: "map(string)",
			Description: "An input.", Default: json.RawMessage(`{"a":"b"}`), Required: i%4 == 0})
	}
	for i := range 5 {
		info.Outputs = append(info.Outputs, modules.Output{Name: fmt.Sprintf("out_%d", i), Description: "An output."})
	}
	d := moduleData{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.29", Latest: "1.0.29",
		Root: section(info, "root", ""), Source: "registry.example.com/acme/network/aws"}
	for i := range 2 {
		sub := info
		sub.Path, sub.Name = fmt.Sprintf("modules/sub%d", i), fmt.Sprintf("sub%d", i)
		d.Submodules = append(d.Submodules, section(sub, "submodule-"+sub.Name, "sub"+sub.Name))
	}
	for i := range 30 {
		v := fmt.Sprintf("1.0.%d", 29-i)
		d.Versions = append(d.Versions, versionLink{Version: v, URL: "/modules/acme/network/aws/" + v, Current: i == 0})
	}
	d.Snippet = moduleSnippet("network", d.Source, versionConstraint(d.Version, true), d.Root.Required)
	return d
}

// BenchmarkModulePageRender renders a module page that is not cached:
// Markdown of the README and submodules, then the template.
func BenchmarkModulePageRender(b *testing.B) {
	d := benchModule(b)
	b.ReportAllocs()
	for b.Loop() {
		d.Root = section(d.Root.ModuleInfo, "root", "")
		if _, err := execute("module", d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModulePageAgain is what a module page rendered again on age
// costs besides reading its data: the template and the page's hashes
// (a page whose data changed), or the data's digest alone (one whose
// data did not: partRenderer keeps the page).
func BenchmarkModulePageAgain(b *testing.B) {
	d := benchModule(b)
	s := benchService(b)
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := dataDigest("module", "acme/network/aws 1.0.29", d); !ok {
				b.Fatal("no digest")
			}
			html, err := execute("module", d)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.newPart("acme/network/aws 1.0.29", "/modules/acme/network/aws", "", html); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := dataDigest("module", "acme/network/aws 1.0.29", d); !ok {
				b.Fatal("no digest")
			}
		}
	})
}

// benchService is a Service with what serving cached pages needs.
func benchService(tb testing.TB) *Service {
	foot, err := layoutFoot("registry.example.com")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Service{opt: Options{Host: "registry.example.com", Now: time.Now}, log: slog.New(slog.DiscardHandler),
		csrfKey: []byte("0123456789abcdef0123456789abcdef"), foot: foot}
	s.pages = newPageCache("web pages", time.Now, pageCacheBytes, nil)
	s.searches = newPageCache("web searches", time.Now, searchCacheBytes, nil)
	s.lists = newListCache(time.Now, s.isSettled)
	s.catalog = newCatalogCache(nil, time.Now)
	s.sections = newSectionsCache(time.Now, nil)
	return s
}

// BenchmarkCachedPage is the per-request work of a cached module page:
// for an anonymous visitor (the whole page kept), the same asking for
// gzip (the variant made once), and for a signed-in one (the layout with
// the visitor's name around the cached part).
func BenchmarkCachedPage(b *testing.B) {
	s := benchService(b)
	d := benchModule(b)
	build := func(context.Context) (string, string, any, error) { return "acme/network/aws 1.0.29", "module", d, nil }
	r := httptest.NewRequest(http.MethodGet, "/modules/acme/network/aws", nil)
	gz := httptest.NewRequest(http.MethodGet, "/modules/acme/network/aws", nil)
	gz.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	if err := s.cached(httptest.NewRecorder(), gz, &visit{}, "module", build); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		v    visit
		r    *http.Request
	}{
		{"anonymous", visit{}, r},
		{"anonymous-gzip", visit{}, gz},
		{"signed-in", visit{p: auth.Principal{User: registry.User{Name: "alice"}}, sessionID: "tok-1"}, r},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				if err := s.cached(w, c.r, &c.v, "module", build); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(w.n / b.N))
		})
	}
}

// discardWriter is a ResponseWriter that counts what it is sent.
type discardWriter struct {
	h http.Header
	n int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// BenchmarkVersionList sums up the versions of a provider of 2,000
// versions, as the pages of its versions do once per list read.
func BenchmarkVersionList(b *testing.B) {
	vs := make([]versionSummary, 2000)
	for i := range vs {
		vs[i] = versionSummary{version: fmt.Sprintf("%d.%d.%d", i/400, i/20%20, i%20), published: time.Unix(int64(i), 0)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if l := newVersionList(vs); l.latest != "4.19.19" {
			b.Fatalf("latest %s", l.latest)
		}
	}
}
