package loadtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
)

// CacheMaxAge is the maximum age of Trove's document caches, which trove
// serve does not let a flag change (providers.DefaultMaxAge; modules.v1
// has the same). A realistic-mix window longer than twice it sees every
// cached document re-rendered at least once.
const CacheMaxAge = providers.DefaultMaxAge

// mixSet is the documents of one realistic-mix row.
type mixSet struct {
	name string
	docs []document
	// weights, when set, hold the relative probability of each document
	// (nil: all equal).
	weights []float64
	// notes say what the row's documents are, for the report.
	notes []string
	// header is sent with every request of the row (nil: none).
	header http.Header
	// upstream marks a module mirror row: the report notes what the
	// upstream was asked during it.
	upstream bool
	// p99Goal is the p99 a web UI row is checked against instead of the
	// baseline's (0: the baseline's).
	p99Goal time.Duration
}

// mixPicks chooses the documents of the realistic-mix rows (providers.v1
// versions and downloads, modules.v1 versions and downloads, the network
// mirror's index and version documents of Trove's own providers, under
// host, the module mirror's versions and downloads, and the OCI API's tag
// lists and manifests): up to n distinct ones per endpoint, from the
// seeded index (paths only).
func mixPicks(spec Spec, n int, host string) ([]mixSet, error) {
	provs, err := spec.plan()
	if err != nil {
		return nil, err
	}
	ns := spec.Namespace
	rng := rand.New(rand.NewPCG(1, 2)) // the same picks in every run
	var sets []mixSet

	versions := mixSet{}
	fewest, most := -1, 0
	for _, p := range provs[:min(n, len(provs))] {
		versions.docs = append(versions.docs, document{path: "/v1/providers/" + ns + "/" + p.Type + "/versions"})
		if fewest < 0 || p.Versions < fewest {
			fewest = p.Versions
		}
		most = max(most, p.Versions)
	}
	versions.name = fmt.Sprintf("versions, mix of %s providers (%s to %s versions)", thousands(len(versions.docs)), thousands(fewest), thousands(most))
	sets = append(sets, versions)

	total := 0
	for _, p := range provs {
		total += p.Versions * len(spec.Platforms)
	}
	downloads := mixSet{}
	seen := map[string]bool{}
	for len(downloads.docs) < min(n, total) {
		p := provs[rng.IntN(len(provs))]
		pl := spec.Platforms[rng.IntN(len(spec.Platforms))]
		path := downloadPath(ns, Archive{Type: p.Type, Version: VersionAt(rng.IntN(p.Versions)), OSArch: pl})
		if !seen[path] {
			seen[path] = true
			downloads.docs = append(downloads.docs, document{path: path})
		}
	}
	downloads.name = fmt.Sprintf("download, mix of %s documents (random provider, version and platform)", thousands(len(downloads.docs)))
	sets = append(sets, downloads)

	// The rows added later draw after the older ones, so that those keep
	// their picks.
	mirror := mirrorPicks(spec, provs, n, host, rng)
	if len(spec.Modules) == 0 {
		return append(append(sets, mirror...), ociPicks(spec, provs, n, rng)...), nil
	}
	mods := mixSet{}
	for _, m := range spec.Modules[:min(n, len(spec.Modules))] {
		mods.docs = append(mods.docs, document{path: "/v1/modules/" + ns + "/" + m.Name + "/" + m.System + "/versions"})
	}
	mods.name = fmt.Sprintf("module versions, mix of %s modules", thousands(len(mods.docs)))
	total = 0
	for _, m := range spec.Modules {
		total += m.Versions
	}
	modDownloads := mixSet{}
	clear(seen)
	for len(modDownloads.docs) < min(n, total) {
		m := spec.Modules[rng.IntN(len(spec.Modules))]
		path := "/v1/modules/" + ns + "/" + m.Name + "/" + m.System + "/" + VersionAt(rng.IntN(m.Versions)) + "/download"
		if !seen[path] {
			seen[path] = true
			// A location marks a module download; fetchMix replaces it.
			modDownloads.docs = append(modDownloads.docs, document{path: path, location: "pending"})
		}
	}
	modDownloads.name = fmt.Sprintf("module download, mix of %s module versions", thousands(len(modDownloads.docs)))
	sets = append(append(sets, mods, modDownloads), mirror...)
	sets = append(sets, moduleMirrorPicks(spec, n, rng)...)
	return append(sets, ociPicks(spec, provs, n, rng)...), nil
}

// moduleMirrorPicks chooses the module mirror rows (none without
// spec.ModuleMirror): the versions documents of up to n mirrored modules
// and up to n download locations of random mirrored versions, every one
// held already (the warm path).
func moduleMirrorPicks(spec Spec, n int, rng *rand.Rand) []mixSet {
	ns := spec.ModuleMirror.Namespace
	if ns == "" || len(spec.Modules) == 0 {
		return nil
	}
	versions := mixSet{notes: []string{moduleMirrorNote(spec)}, upstream: true}
	for _, m := range spec.Modules[:min(n, len(spec.Modules))] {
		versions.docs = append(versions.docs, document{path: "/v1/modules/" + ns + "/" + m.Name + "/" + m.System + "/versions"})
	}
	versions.name = fmt.Sprintf("mirrored module versions, mix of %s modules", thousands(len(versions.docs)))
	total := 0
	for _, m := range spec.Modules {
		total += m.Versions
	}
	downloads := mixSet{notes: versions.notes, upstream: true}
	seen := map[string]bool{}
	for len(downloads.docs) < min(n, total) {
		m := spec.Modules[rng.IntN(len(spec.Modules))]
		path := "/v1/modules/" + ns + "/" + m.Name + "/" + m.System + "/" + VersionAt(rng.IntN(m.Versions)) + "/download"
		if !seen[path] {
			seen[path] = true
			downloads.docs = append(downloads.docs, document{path: path, location: "pending"})
		}
	}
	downloads.name = fmt.Sprintf("mirrored module download, mix of %s module versions", thousands(len(downloads.docs)))
	return []mixSet{versions, downloads}
}

// moduleMirrorNote says what the module mirror rows measure.
func moduleMirrorNote(spec Spec) string {
	return fmt.Sprintf("namespace %s mirrors %s/%s (trove serve --module-mirror %s=%s/%s); every version is held already, seeded as the mirror stores a fetched one, so this is the warm path of a mirror in use: Trove still reads each module's versions from the upstream (a registry server of the harness on loopback) at most once a minute while it renders the versions document",
		spec.ModuleMirror.Namespace, orHost(spec.ModuleMirror.Host), spec.Namespace, spec.ModuleMirror.Namespace, orHost(spec.ModuleMirror.Host), spec.Namespace)
}

func orHost(h string) string {
	if h == "" {
		return "UPSTREAM"
	}
	return h
}

// ociAccept is the Accept header of the OCI manifest requests, the media
// types OpenTofu asks for.
func ociAccept() http.Header {
	return http.Header{"Accept": {oci.MediaTypeIndex + ", " + oci.MediaTypeManifest}}
}

// ociPicks chooses the OCI rows (docs/oci.md): the tag lists of up to n
// provider repositories, up to n provider image indexes by tag (random
// provider and version) and up to n module manifests by tag (random
// module and version).
func ociPicks(spec Spec, provs []ProviderSpec, n int, rng *rand.Rand) []mixSet {
	ns := spec.Namespace
	tags := mixSet{}
	fewest, most := -1, 0
	for _, p := range provs[:min(n, len(provs))] {
		tags.docs = append(tags.docs, document{path: "/v2/" + ns + "/" + p.Type + "/tags/list", oci: true})
		if fewest < 0 || p.Versions < fewest {
			fewest = p.Versions
		}
		most = max(most, p.Versions)
	}
	tags.name = fmt.Sprintf("OCI tag list, mix of %s provider repositories (%s to %s tags; at most %s a page)",
		thousands(len(tags.docs)), thousands(fewest), thousands(most), thousands(oci.MaxTags))
	total := 0
	for _, p := range provs {
		total += p.Versions
	}
	indexes := mixSet{header: ociAccept()}
	seen := map[string]bool{}
	for len(indexes.docs) < min(n, total) {
		p := provs[rng.IntN(len(provs))]
		path := "/v2/" + ns + "/" + p.Type + "/manifests/" + oci.TagOf(VersionAt(rng.IntN(p.Versions)))
		if !seen[path] {
			seen[path] = true
			indexes.docs = append(indexes.docs, document{path: path, oci: true})
		}
	}
	indexes.name = fmt.Sprintf("OCI provider index by tag, mix of %s versions (%d platforms each)", thousands(len(indexes.docs)), len(spec.Platforms))
	sets := []mixSet{tags, indexes}
	if len(spec.Modules) == 0 {
		return sets
	}
	total = 0
	for _, m := range spec.Modules {
		total += m.Versions
	}
	mods := mixSet{header: ociAccept()}
	clear(seen)
	for len(mods.docs) < min(n, total) {
		m := spec.Modules[rng.IntN(len(spec.Modules))]
		path := "/v2/" + ns + "/modules/" + m.Name + "/" + m.System + "/manifests/" + oci.TagOf(VersionAt(rng.IntN(m.Versions)))
		if !seen[path] {
			seen[path] = true
			mods.docs = append(mods.docs, document{path: path, oci: true})
		}
	}
	mods.name = fmt.Sprintf("OCI module manifest by tag, mix of %s module versions", thousands(len(mods.docs)))
	return append(sets, mods)
}

// mirrorPicks chooses the network mirror rows: the index.json of up to n
// providers and up to n <version>.json documents of random providers and
// versions.
func mirrorPicks(spec Spec, provs []ProviderSpec, n int, host string, rng *rand.Rand) []mixSet {
	base := "/v1/mirror/" + host + "/" + spec.Namespace + "/"
	index := mixSet{}
	for _, p := range provs[:min(n, len(provs))] {
		index.docs = append(index.docs, document{path: base + p.Type + "/index.json"})
	}
	index.name = fmt.Sprintf("mirror index.json, mix of %s providers", thousands(len(index.docs)))
	total := 0
	for _, p := range provs {
		total += p.Versions
	}
	versions := mixSet{}
	seen := map[string]bool{}
	for len(versions.docs) < min(n, total) {
		p := provs[rng.IntN(len(provs))]
		path := base + p.Type + "/" + VersionAt(rng.IntN(p.Versions)) + ".json"
		if !seen[path] {
			seen[path] = true
			versions.docs = append(versions.docs, document{path: path})
		}
	}
	versions.name = fmt.Sprintf("mirror version.json, mix of %s versions (every platform)", thousands(len(versions.docs)))
	return []mixSet{index, versions}
}

// fetchMix fetches from Trove, with a few concurrent requests, the bodies
// (and module download locations) the baseline replays for every
// document of sets. Fetching also fills Trove's caches, so the rows start
// in the steady state of a registry in use.
func fetchMix(ctx context.Context, client *http.Client, origin string, sets []mixSet) error {
	type job struct{ set, doc int }
	jobs := make(chan job)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range 8 {
		wg.Go(func() {
			for j := range jobs {
				d := &sets[j.set].docs[j.doc]
				var err error
				switch {
				case d.oci:
					d.body, d.header, err = fetchOCI(ctx, client, origin+d.path, sets[j.set].header)
				case d.location != "":
					d.location, err = fetchLocation(ctx, client, origin+d.path)
				case d.html:
					d.body, err = fetchPage(ctx, client, origin+d.path)
				default:
					d.body, err = fetch(ctx, client, origin+d.path)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
feed:
	for i := range sets {
		for j := range sets[i].docs {
			select {
			case jobs <- job{i, j}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return registry.Wrap(registry.Unavailable, err, "fetching the documents of the mix")
	}
	return nil
}

// ociHeaders are the response headers of an OCI answer that the baseline
// replays with its body.
var ociHeaders = []string{"Content-Type", "Docker-Content-Digest", "Docker-Distribution-Api-Version", "Etag", "Link", "Cache-Control"}

// fetchOCI fetches an OCI answer (a tag list or a manifest), which must
// be 200, with header, and returns its body and the headers the baseline
// replays.
func fetchOCI(ctx context.Context, client *http.Client, url string, header http.Header) ([]byte, map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, registry.Wrap(registry.Unavailable, err, "fetching "+url)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, nil, registry.Wrap(registry.Unavailable, err, "reading "+url)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, registry.Errorf(registry.Unavailable, "GET %s answered %s: %.500s", url, resp.Status, body)
	}
	if len(body) > maxDocumentBytes {
		return nil, nil, registry.Errorf(registry.TooLarge, "GET %s answered more than %d bytes", url, maxDocumentBytes)
	}
	kept := map[string]string{}
	for _, k := range ociHeaders {
		if v := resp.Header.Get(k); v != "" {
			kept[k] = v
		}
	}
	if kept["Content-Type"] == "" {
		return nil, nil, registry.Errorf(registry.Invalid, "GET %s answered no Content-Type", url)
	}
	return body, kept, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// mixURLs returns the URLs of set's documents under origin.
func mixURLs(origin string, set mixSet) []string {
	urls := make([]string, len(set.docs))
	for i, d := range set.docs {
		urls[i] = origin + d.path
	}
	return urls
}

// mixNote says how a realistic-mix row was measured.
func mixNote(set mixSet, duration time.Duration) string {
	drawn := "drawn at random"
	if set.weights != nil {
		drawn = "drawn at random in the shares above"
	}
	note := fmt.Sprintf("each request asked for one of %s documents %s; the baseline answers each URL with the bytes Trove gave for it; a window of %s per server, %.1f times Trove's cache maximum age of %s",
		thousands(len(set.docs)), drawn, duration, duration.Seconds()/CacheMaxAge.Seconds(), CacheMaxAge)
	if duration <= 2*CacheMaxAge {
		note += ": shorter than twice the maximum age, so the periodic re-render of cached documents may not show"
	}
	return note
}

// fillPaths returns up to n download document paths of the seeded index
// that a `terraform providers mirror` of every platform asks for: every
// platform of every version, provider after provider, from the last
// provider of the plan backwards (away from the documents of the mix).
func fillPaths(spec Spec, n int) ([]string, error) {
	provs, err := spec.plan()
	if err != nil {
		return nil, err
	}
	var paths []string
	for i := len(provs) - 1; i >= 0 && len(paths) < n; i-- {
		p := provs[i]
		for v := 0; v < p.Versions && len(paths) < n; v++ {
			for _, pl := range spec.Platforms {
				if len(paths) < n {
					paths = append(paths, downloadPath(spec.Namespace, Archive{Type: p.Type, Version: VersionAt(v), OSArch: pl}))
				}
			}
		}
	}
	return paths, nil
}

// sweep asks for every path once, from conns concurrent requests, as a
// mirror does, and returns how many answers were not 200.
func sweep(ctx context.Context, client *http.Client, origin string, paths []string, conns int) (failed int, err error) {
	jobs := make(chan string)
	var (
		wg  sync.WaitGroup
		bad int
		mu  sync.Mutex
	)
	for range conns {
		wg.Go(func() {
			for p := range jobs {
				if !get200(ctx, client, origin+p) {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}
		})
	}
feed:
	for _, p := range paths {
		select {
		case jobs <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return bad, registry.Wrap(registry.Unavailable, err, "filling the cache")
	}
	return bad, nil
}

func get200(ctx context.Context, client *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK
}

// cacheFigures reads from Trove's /metrics what its document cache and
// Go heap hold: the number of cached providers.v1 documents, their
// accounted bytes, the heap in use and the next GC target.
func cacheFigures(ctx context.Context, client *http.Client, origin string) (entries, bytes, heap, nextGC int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/metrics", nil)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, 0, fmt.Errorf("GET /metrics answered %s", resp.Status)
	}
	const e, b, h, g = "trove_providers_cache_entries", "trove_providers_cache_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_next_gc_bytes"
	v, err := ParseMetricValues(io.LimitReader(resp.Body, 16<<20), e, b, h, g)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if len(v) != 4 {
		return 0, 0, 0, 0, fmt.Errorf("/metrics lacks some of %s, %s, %s, %s", e, b, h, g)
	}
	return int64(v[e]), int64(v[b]), int64(v[h]), int64(v[g]), nil
}
