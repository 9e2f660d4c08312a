package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/modules"
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
		Root: section(info, "root"), Source: "registry.example.com/acme/network/aws"}
	for i := range 2 {
		sub := info
		sub.Path, sub.Name = fmt.Sprintf("modules/sub%d", i), fmt.Sprintf("sub%d", i)
		d.Submodules = append(d.Submodules, section(sub, "submodule-"+sub.Name))
	}
	for i := range 30 {
		v := fmt.Sprintf("1.0.%d", 29-i)
		d.Versions = append(d.Versions, versionLink{Version: v, URL: "/modules/acme/network/aws/" + v, Current: i == 0})
	}
	d.Snippet = moduleSnippet("network", d.Source, d.Version, d.Root.Required)
	return d
}

// BenchmarkModulePageRender renders a module page that is not cached:
// Markdown of the README and submodules, then the template.
func BenchmarkModulePageRender(b *testing.B) {
	d := benchModule(b)
	b.ReportAllocs()
	for b.Loop() {
		d.Root = section(d.Root.ModuleInfo, "root")
		if _, err := execute("module", d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLayout is the per-request work of a cached page: the layout
// around a cached part.
func BenchmarkLayout(b *testing.B) {
	html, err := execute("module", benchModule(b))
	if err != nil {
		b.Fatal(err)
	}
	d := layoutData{Title: "acme/network/aws", Content: html, User: "alice", CSRF: strings.Repeat("x", 43), Host: "registry.example.com", Next: "/"}
	b.ReportAllocs()
	b.SetBytes(int64(len(html)))
	for b.Loop() {
		if err := templates.ExecuteTemplate(discard{}, "layout", d); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
