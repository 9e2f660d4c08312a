package loadtest

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestURLMixDrawsEveryURL(t *testing.T) {
	if _, err := NewURLMix(nil); err == nil {
		t.Fatal("an empty mix was accepted")
	}
	urls := []string{"a", "b", "c"}
	m, err := NewURLMix(urls)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 3000 {
		seen[m.Next()]++
	}
	for _, u := range urls {
		if seen[u] < 500 { // expected 1,000 each; this bound fails with odds far below 1e-30
			t.Errorf("%s drawn %d times of 3,000", u, seen[u])
		}
	}
	if len(seen) != 3 || m.Len() != 3 {
		t.Errorf("drew %v", seen)
	}
}

func TestMixPicks(t *testing.T) {
	spec := DefaultSpec()
	sets, err := mixPicks(spec, 300, "127.0.0.1:8443")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"versions, mix of 300 providers (30 to 2,000 versions)",
		"download, mix of 300 documents (random provider, version and platform)",
		"module versions, mix of 300 modules",
		"module download, mix of 300 module versions",
		"mirror index.json, mix of 300 providers",
		"mirror version.json, mix of 300 versions (every platform)",
		"mirrored module versions, mix of 300 modules",
		"mirrored module download, mix of 300 module versions",
		"OCI tag list, mix of 300 provider repositories (30 to 2,000 tags; at most 1,000 a page)",
		"OCI provider index by tag, mix of 300 versions (4 platforms each)",
		"OCI module manifest by tag, mix of 300 module versions",
	}
	if len(sets) != len(want) {
		t.Fatalf("%d sets", len(sets))
	}
	for i, set := range sets {
		if set.name != want[i] {
			t.Errorf("set %d is %q, want %q", i, set.name, want[i])
		}
		distinct := map[string]bool{}
		for _, d := range set.docs {
			distinct[d.path] = true
		}
		if len(distinct) != 300 {
			t.Errorf("%s: %d distinct paths", set.name, len(distinct))
		}
	}
	if d := sets[1].docs[0].path; !strings.HasPrefix(d, "/v1/providers/acme/") || !strings.Contains(d, "/download/") {
		t.Errorf("download path %q", d)
	}
	if d := sets[3].docs[0]; !strings.HasSuffix(d.path, "/download") || d.location == "" {
		t.Errorf("module download %+v is not marked as one", d)
	}
	if d := sets[5].docs[0].path; !strings.HasPrefix(d, "/v1/mirror/127.0.0.1:8443/acme/") || !strings.HasSuffix(d, ".json") {
		t.Errorf("mirror version path %q", d)
	}
	if d := sets[6].docs[0].path; d != "/v1/modules/mirrored/network/aws/versions" || !sets[6].upstream {
		t.Errorf("mirrored module versions path %q (upstream %v)", d, sets[6].upstream)
	}
	if d := sets[7].docs[0]; !strings.HasPrefix(d.path, "/v1/modules/mirrored/") || !strings.HasSuffix(d.path, "/download") || d.location == "" {
		t.Errorf("mirrored module download %+v is not marked as one", d)
	}
	if d := sets[8].docs[1]; d.path != "/v2/acme/large/tags/list" || !d.oci {
		t.Errorf("OCI tag list %+v", d)
	}
	for _, i := range []int{9, 10} {
		d := sets[i].docs[0]
		if !d.oci || !strings.HasPrefix(d.path, "/v2/acme/") || !strings.Contains(d.path, "/manifests/") || sets[i].header.Get("Accept") == "" {
			t.Errorf("%s: %+v, header %v", sets[i].name, d, sets[i].header)
		}
	}
	if d := sets[10].docs[0].path; !strings.HasPrefix(d, "/v2/acme/modules/") {
		t.Errorf("OCI module manifest path %q", d)
	}
	again, _ := mixPicks(spec, 300, "127.0.0.1:8443")
	if again[1].docs[7].path != sets[1].docs[7].path {
		t.Errorf("the picks differ between runs")
	}
	// The rows added later draw after the older ones: those keep their
	// picks with or without the module mirror.
	noMirror := spec
	noMirror.ModuleMirror = ModuleMirrorSpec{}
	without, _ := mixPicks(noMirror, 300, "127.0.0.1:8443")
	if len(without) != len(want)-2 || without[3].docs[9].path != sets[3].docs[9].path {
		t.Errorf("without the module mirror: %d sets, module download %q, want %q", len(without), without[3].docs[9].path, sets[3].docs[9].path)
	}
	// A small index gives what it has.
	spec.Modules = spec.Modules[:2]
	small, err := mixPicks(spec, 1000, "127.0.0.1:8443")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(small[2].docs); n != 2 {
		t.Errorf("%d module versions documents from 2 modules", n)
	}
	if n := len(small[3].docs); n != 40 {
		t.Errorf("%d module downloads from 40 versions", n)
	}
}

func TestFillPaths(t *testing.T) {
	spec := DefaultSpec()
	paths, err := fillPaths(spec, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ // every platform of a version, then the next version, from the last provider
		"/v1/providers/acme/p00490/0.0.0/download/linux/amd64",
		"/v1/providers/acme/p00490/0.0.0/download/linux/arm64",
		"/v1/providers/acme/p00490/0.0.0/download/darwin/amd64",
		"/v1/providers/acme/p00490/0.0.0/download/darwin/arm64",
		"/v1/providers/acme/p00490/0.0.1/download/linux/amd64",
	}
	if len(paths) != 10 {
		t.Fatalf("%d paths", len(paths))
	}
	for i, w := range want {
		if paths[i] != w {
			t.Errorf("path %d is %s, want %s", i, paths[i], w)
		}
	}
}

func TestMixNote(t *testing.T) {
	set := mixSet{docs: make([]document, 300)}
	if n := mixNote(set, 65*time.Second); strings.Contains(n, "shorter") || !strings.Contains(n, "one of 300 documents") {
		t.Errorf("65 s: %s", n)
	}
	if n := mixNote(set, 5*time.Second); !strings.Contains(n, "shorter than twice the maximum age") {
		t.Errorf("5 s: %s", n)
	}
}

// TestSelectSets holds Options.Rows to keeping the rows it matches, in
// order, and every row without it.
func TestSelectSets(t *testing.T) {
	sets, err := mixPicks(DefaultSpec(), 10, "127.0.0.1:8443")
	if err != nil {
		t.Fatal(err)
	}
	n := len(sets)
	if got := (Options{}).selectSets(slices.Clone(sets)); len(got) != n {
		t.Errorf("without Rows: %d of %d rows", len(got), n)
	}
	o := Options{Rows: regexp.MustCompile(`^mirror |^mirrored module versions`)}
	var names []string
	for _, s := range o.selectSets(slices.Clone(sets)) {
		names = append(names, s.name)
	}
	want := []string{"mirror index.json, mix of 10 providers", "mirror version.json, mix of 10 versions (every platform)", "mirrored module versions, mix of 10 modules"}
	if !slices.Equal(names, want) {
		t.Errorf("selected %q, want %q", names, want)
	}
	if o.selected("archive 50.0 MiB, HTTPS") || !(Options{}).selected("archive 50.0 MiB, HTTPS") {
		t.Error("the archive rows are not selected by name")
	}
}
