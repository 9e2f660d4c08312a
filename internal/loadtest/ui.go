package loadtest

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Goals of the web UI rows (absolute: no static server renders a page).
const (
	// UIPageP99Goal bounds the p99 latency of the UI pages row.
	UIPageP99Goal = 20 * time.Millisecond
	// UISearchP99Goal bounds the p99 latency of the UI search row.
	UISearchP99Goal = 50 * time.Millisecond
)

// uiPageShares is the share of the requests of the UI pages row that
// each kind of page gets. Module pages come first: people read a
// module's README, inputs and outputs before they use it, and links from
// search and the home page lead to a module's latest version, so that
// page takes most; a pinned version is read when upgrading. Provider
// pages are read less (a provider's page has no README to read, and its
// snippet is copied once). The home page is where visits start; the
// namespace page is a listing few open.
var uiPageShares = []struct {
	class string
	share float64
}{
	{"module", 0.40}, {"module version", 0.15},
	{"provider", 0.20}, {"provider version", 0.10},
	{"home", 0.10}, {"namespace", 0.05},
}

// uiPagePicks chooses the pages of the UI pages row: about n distinct
// pages of the seeded index (the home page, the namespace page, the
// latest and pinned versions of modules and providers), each weighted
// so that its kind gets its share of uiPageShares.
func uiPagePicks(spec Spec, n int) (mixSet, error) {
	provs, err := spec.plan()
	if err != nil {
		return mixSet{}, err
	}
	ns := spec.Namespace
	rng := rand.New(rand.NewPCG(3, 4)) // the same picks in every run
	rest := max(n-2, 4)
	byClass := map[string][]string{"home": {"/"}, "namespace": {"/namespaces/" + ns}}
	seen := map[string]bool{}
	add := func(class, path string) {
		if !seen[path] {
			seen[path] = true
			byClass[class] = append(byClass[class], path)
		}
	}
	for _, m := range spec.Modules[:min(len(spec.Modules), max(1, rest*3/10))] {
		add("module", "/modules/"+ns+"/"+m.Name+"/"+m.System)
	}
	moduleVersions := 0
	for _, m := range spec.Modules {
		moduleVersions += m.Versions
	}
	for want := min(max(1, rest*3/10), moduleVersions); len(byClass["module version"]) < want; {
		m := spec.Modules[rng.IntN(len(spec.Modules))]
		add("module version", "/modules/"+ns+"/"+m.Name+"/"+m.System+"/"+VersionAt(rng.IntN(m.Versions)))
	}
	for _, p := range provs[:min(len(provs), max(1, rest*2/10))] {
		add("provider", "/providers/"+ns+"/"+p.Type)
	}
	providerVersions := 0
	for _, p := range provs {
		providerVersions += p.Versions
	}
	taken := len(byClass["module"]) + len(byClass["module version"]) + len(byClass["provider"])
	for want := min(max(1, rest-taken), providerVersions); len(byClass["provider version"]) < want; {
		p := provs[rng.IntN(len(provs))]
		add("provider version", "/providers/"+ns+"/"+p.Type+"/"+VersionAt(rng.IntN(p.Versions)))
	}
	if len(spec.Modules) == 0 {
		return mixSet{}, fmt.Errorf("the UI pages row needs modules in the seeded index")
	}
	set := mixSet{}
	for _, c := range uiPageShares {
		paths := byClass[c.class]
		for _, p := range paths {
			set.docs = append(set.docs, document{path: p, html: true})
			set.weights = append(set.weights, c.share/float64(len(paths)))
		}
	}
	set.name = fmt.Sprintf("UI pages, mix of %s pages", thousands(len(set.docs)))
	var parts []string
	for _, c := range uiPageShares {
		parts = append(parts, fmt.Sprintf("%.0f%% %s pages (%s distinct)", 100*c.share, c.class, thousands(len(byClass[c.class]))))
	}
	set.notes = []string{"requests: " + strings.Join(parts, ", ") + "; Accept: text/html, anonymous, public namespace " + ns}
	return set, nil
}

// uiSearchPicks chooses up to n distinct searches of the UI search row,
// drawn from what people type: module names, words of module
// descriptions, prefixes of names, provider names, several words,
// misspellings and words with no hit, the empty search that lists
// everything, with and without the kind and namespace filters and now
// and then the second page of results. Each query is asked for with the
// same probability, so the classes weigh as often as they were drawn.
func uiSearchPicks(spec Spec, n int) (mixSet, error) {
	provs, err := spec.plan()
	if err != nil {
		return mixSet{}, err
	}
	if len(spec.Modules) == 0 {
		return mixSet{}, fmt.Errorf("the UI search row needs modules in the seeded index")
	}
	rng := rand.New(rand.NewPCG(5, 6)) // the same picks in every run
	var words []string
	for _, t := range moduleTopics {
		words = append(words, t.key)
		for _, w := range strings.FieldsFunc(strings.ToLower(t.summary), func(r rune) bool { return r == ' ' || r == ',' }) {
			if len(w) > 3 && w != "with" && w != "their" && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	noHits := []string{"gcp", "azure", "bigquery", "kubernets", "postgress", "nomad", "consul", "helm-chart", "cosmosdb", "zzyzx"}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	moduleName := func() string { return spec.Modules[rng.IntN(len(spec.Modules))].Name }
	providerName := func() string { return provs[rng.IntN(min(len(provs), 50))].Type }
	prefix := func(s string) string { return s[:min(len(s), 2+rng.IntN(3))] }
	type class struct {
		share float64
		text  func() string
	}
	classes := []class{
		{0.15, moduleName},
		{0.20, func() string { return pick(words) }},
		{0.15, func() string {
			if rng.IntN(2) == 0 {
				return prefix(moduleName())
			}
			return prefix(pick(words))
		}},
		{0.10, providerName},
		{0.20, func() string {
			if rng.IntN(3) == 0 {
				return moduleName() + " " + pick(words)
			}
			return pick(words) + " " + pick(words)
		}},
		{0.10, func() string {
			if rng.IntN(2) == 0 {
				return pick(noHits)
			}
			return pick(words) + " " + pick(noHits)
		}},
		{0.05, func() string { return "" }},
		{0.05, func() string { return spec.Namespace }},
	}
	set := mixSet{}
	seen := map[string]bool{}
	for tries := 0; len(set.docs) < n && tries < 50*n; tries++ {
		x, c := rng.Float64(), classes[len(classes)-1]
		for _, k := range classes {
			if x < k.share {
				c = k
				break
			}
			x -= k.share
		}
		uri := searchURI(c.text(), rng, spec.Namespace)
		if !seen[uri] {
			seen[uri] = true
			set.docs = append(set.docs, document{path: uri, html: true})
		}
	}
	set.name = fmt.Sprintf("UI search, mix of %s queries", thousands(len(set.docs)))
	set.notes = []string{"queries: 15% module names, 20% words of module descriptions, 15% prefixes, 10% provider names, 20% two words, 10% with no hit, 5% empty, 5% the namespace; " +
		"30% with kind=module, 15% kind=provider, 20% namespace=" + spec.Namespace + ", 5% the second page; Accept: text/html, anonymous"}
	return set, nil
}

// searchURI is the request URI of a search: as the search box in the
// header sends it (q only) when there is no filter, as the search page's
// form sends it (every field) when there is one.
func searchURI(text string, rng *rand.Rand, namespace string) string {
	kind, ns := "", ""
	switch x := rng.Float64(); {
	case x < 0.30:
		kind = "module"
	case x < 0.45:
		kind = "provider"
	}
	if rng.Float64() < 0.20 {
		ns = namespace
	}
	uri := "/search?q=" + url.QueryEscape(text)
	if kind != "" || ns != "" {
		uri += "&kind=" + kind + "&namespace=" + ns + "&system="
	}
	if rng.Float64() < 0.05 {
		uri += "&page=2"
	}
	return uri
}
