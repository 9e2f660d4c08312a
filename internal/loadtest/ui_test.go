package loadtest

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/modules"
)

func TestUIPagePicks(t *testing.T) {
	spec := DefaultSpec()
	set, err := uiPagePicks(spec, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if set.name != "UI pages, mix of 1,000 pages" || len(set.docs) != 1000 || len(set.weights) != 1000 {
		t.Fatalf("%s: %d pages, %d weights", set.name, len(set.docs), len(set.weights))
	}
	share := map[string]float64{}
	distinct := map[string]bool{}
	for i, d := range set.docs {
		if !d.html || distinct[d.path] {
			t.Errorf("page %s: html %v, repeated %v", d.path, d.html, distinct[d.path])
		}
		distinct[d.path] = true
		class := "other"
		switch parts := strings.Split(d.path, "/"); {
		case d.path == "/":
			class = "home"
		case d.path == "/namespaces/acme":
			class = "namespace"
		case parts[1] == "modules" && len(parts) == 5:
			class = "module"
		case parts[1] == "modules" && len(parts) == 6:
			class = "module version"
		case parts[1] == "providers" && len(parts) == 4:
			class = "provider"
		case parts[1] == "providers" && len(parts) == 5:
			class = "provider version"
		}
		share[class] += set.weights[i]
	}
	for _, c := range uiPageShares {
		if math.Abs(share[c.class]-c.share) > 1e-9 {
			t.Errorf("%s pages get %.3f of the requests, want %.3f", c.class, share[c.class], c.share)
		}
	}
	if share["other"] != 0 {
		t.Errorf("pages of no class: %v", share["other"])
	}
	if !distinct["/modules/acme/network/aws"] || !distinct["/providers/acme/large"] {
		t.Error("the first module or acme/large is not among the pages")
	}
	again, _ := uiPagePicks(spec, 1000)
	if again.docs[900].path != set.docs[900].path {
		t.Error("the picks differ between runs")
	}
}

func TestUISearchPicks(t *testing.T) {
	spec := DefaultSpec()
	set, err := uiSearchPicks(spec, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if set.name != "UI search, mix of 1,000 queries" || set.weights != nil {
		t.Fatalf("%s, weights %v", set.name, set.weights != nil)
	}
	count := map[string]int{}
	distinct := map[string]bool{}
	for _, d := range set.docs {
		if !d.html || distinct[d.path] || !strings.HasPrefix(d.path, "/search?q=") {
			t.Errorf("query %s: html %v, repeated %v", d.path, d.html, distinct[d.path])
		}
		distinct[d.path] = true
		for _, k := range []string{"kind=module", "kind=provider", "namespace=acme", "page=2", "+", "q=&", "q=vpc", "q=m0", "q=gcp"} {
			if strings.Contains(d.path+"&", k) {
				count[k]++
			}
		}
	}
	for k, least := range map[string]int{"kind=module": 200, "kind=provider": 80, "namespace=acme": 100, "page=2": 20, "+": 150, "q=&": 5, "q=vpc": 3, "q=m0": 50, "q=gcp": 3} {
		if count[k] < least {
			t.Errorf("%d queries with %q, want at least %d", count[k], k, least)
		}
	}
}

func TestWeightedURLMix(t *testing.T) {
	for name, w := range map[string][]float64{"too few": {1}, "zero": {1, 0}, "negative": {1, -1}, "NaN": {1, math.NaN()}} {
		if _, err := NewWeightedURLMix([]string{"a", "b"}, w); err == nil {
			t.Errorf("%s weights accepted", name)
		}
	}
	m, err := NewWeightedURLMix([]string{"a", "b", "c"}, []float64{0.7, 0.2, 0.1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 10_000 {
		seen[m.Next()]++
	}
	// Expected 7,000, 2,000 and 1,000: these bounds fail with odds far
	// below 1e-20.
	if seen["a"] < 6500 || seen["a"] > 7500 || seen["b"] < 1600 || seen["b"] > 2400 || seen["c"] < 700 || seen["c"] > 1300 {
		t.Errorf("drew %v", seen)
	}
}

func TestLoadSendsHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != htmlHeader().Get("Accept") {
			w.WriteHeader(http.StatusNotAcceptable)
		}
	}))
	defer srv.Close()
	res, err := Load(context.Background(), srv.URL, LoadOptions{Conns: 2, Duration: 100 * time.Millisecond, Header: htmlHeader()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Errorf("%d requests, %d errors (first: %s)", res.Requests, res.Errors, res.FirstError)
	}
}

func TestBaselineHandlerPages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := os.WriteFile(file, []byte("<p>results</p>"), 0o600); err != nil {
		t.Fatal(err)
	}
	const uri = "/search?q=vpc+subnets&kind=module&namespace=&system="
	h, err := NewBaselineHandler(BaselineConfig{Pages: map[string]string{uri: file, "/modules/acme/network/aws": file}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{uri, "/modules/acme/network/aws"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != 200 || rec.Body.String() != "<p>results</p>" || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: %d %q %q", u, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search?q=other", nil))
	if rec.Code != 404 {
		t.Errorf("another query: %d, want 404", rec.Code)
	}
	for _, bad := range []string{"search?q=x", "/a/../b", "/x#frag"} {
		if _, err := NewBaselineHandler(BaselineConfig{Pages: map[string]string{bad: file}}); err == nil {
			t.Errorf("page %q accepted", bad)
		}
	}
}

func TestModuleMetadataIsRealistic(t *testing.T) {
	spec := DefaultSpec()
	sizes := map[bool]int{}
	for i, m := range spec.Modules[:50] {
		raw := moduleMetadata(spec.Namespace, m, i)
		var md modules.Metadata
		if err := json.Unmarshal(raw, &md); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		r := md.Root
		if n := len(r.Readme); n < 3<<10 || n > 8<<10 {
			t.Errorf("%s: README of %d bytes", m.Name, n)
		}
		for _, want := range []string{"\n## Usage\n", "```hcl\n", "| Name | Description | Type | Default | Required |", spec.Namespace + "/" + m.Name + "/aws"} {
			if !strings.Contains(r.Readme, want) {
				t.Errorf("%s: README lacks %q", m.Name, want)
			}
		}
		if len(r.Inputs) < 5 || len(r.Inputs) > 30 || len(r.Outputs) < 1 || len(r.ProviderDependencies) == 0 || len(r.Resources) == 0 || len(md.Submodules) > 3 || len(md.Examples) == 0 {
			t.Errorf("%s: %d inputs, %d outputs, %d providers, %d resources, %d submodules, %d examples", m.Name,
				len(r.Inputs), len(r.Outputs), len(r.ProviderDependencies), len(r.Resources), len(md.Submodules), len(md.Examples))
		}
		for _, in := range r.Inputs {
			if in.Name == "" || in.Type == "" || in.Description == "" || strings.Contains(in.Name+in.Description, "%s") || len(in.Default) == 0 {
				t.Errorf("%s: input %+v", m.Name, in)
			}
		}
		sizes[len(md.Submodules) > 0]++
		if d := moduleDescription(i); !strings.HasPrefix(d, "Terraform module which creates ") {
			t.Errorf("description %q", d)
		}
	}
	if sizes[true] == 0 || sizes[false] == 0 {
		t.Errorf("modules with and without submodules: %v", sizes)
	}
	if string(moduleMetadata("acme", spec.Modules[3], 3)) != string(moduleMetadata("acme", spec.Modules[3], 3)) {
		t.Error("metadata differs between runs")
	}
}
