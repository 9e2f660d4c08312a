package web

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
)

// Kinds of catalog entries, as the search filter names them.
const (
	kindProvider = "provider"
	kindModule   = "module"
	kindMirror   = "mirror"
)

// catalogMaxAge bounds how old the catalog search reads may be; changes
// through any replica mark it stale sooner (Invalidate).
const catalogMaxAge = 30 * time.Second

// entry is one provider, module or mirrored provider in the catalog.
type entry struct {
	Kind        string
	Host        string // mirrored providers: the upstream registry
	Namespace   string
	Name        string // provider type or module name
	System      string // modules: the target system
	Latest      string
	Versions    int
	Description string
	Updated     time.Time
	URL         string
	haystack    string // lowercase text that search terms are matched in
}

// Address is how Terraform addresses the entry, without the host.
func (e entry) Address() string {
	switch e.Kind {
	case kindModule:
		return e.Namespace + "/" + e.Name + "/" + e.System
	case kindMirror:
		return e.Host + "/" + e.Namespace + "/" + e.Name
	}
	return e.Namespace + "/" + e.Name
}

// catalog is a snapshot of everything the UI lists.
type catalog struct {
	namespaces map[string]registry.Namespace
	names      []string // namespace names, sorted
	entries    []entry  // sorted by kind, namespace, name, system
	systems    []string // module systems, sorted
	built      time.Time
	// Read-only sets of namespaces that readable hands out, instead of
	// a map per request, when a visitor's readable namespaces are
	// exactly one of them: every namespace (an administrator), those
	// that were public when the catalog was built (an anonymous
	// visitor, most of the UI's requests), or none.
	all, public map[string]bool
	isPublic    []bool // per names entry: in public
}

// noNamespaces is the readable set of a visitor who may read none.
var noNamespaces = map[string]bool{}

// catalogCache holds the current catalog in a respcache entry of its
// own: rebuilt once however many requests ask, in the background while
// the old one is read once it is catalogMaxAge old, and at once after an
// invalidation (a request after it never gets a catalog whose building
// began before it).
type catalogCache struct {
	idx   Index
	now   func() time.Time
	cache *respcache.Cache[struct{}, struct{}, *catalog]
	// last is the newest catalog built, read when building one fails.
	last atomic.Pointer[catalog]
}

func newCatalogCache(idx Index, now func() time.Time) *catalogCache {
	return &catalogCache{idx: idx, now: now, cache: respcache.New[struct{}, struct{}, *catalog](respcache.Options{
		Name: "web catalog", MaxAge: pageCacheMaxStale, FreshFor: catalogMaxAge, Now: now,
	})}
}

func (c *catalogCache) invalidate() { c.cache.InvalidateAll() }

// get returns a catalog built after the last invalidation, rebuilt in the
// background once it is catalogMaxAge old; the last one built when
// building one fails.
func (c *catalogCache) get(ctx context.Context) (*catalog, error) {
	e := c.cache.Lookup(struct{}{}, struct{}{})
	switch c.cache.State(e) {
	case respcache.Fresh:
		return e.Value, nil
	case respcache.Stale:
		if c.cache.ShouldRevalidate(e) {
			c.cache.Revalidate(struct{}{}, struct{}{}, e, c.build)
		}
		return e.Value, nil
	}
	e, err := c.cache.Load(ctx, struct{}{}, struct{}{}, e, c.build)
	if err != nil {
		if last := c.last.Load(); last != nil { // serve the last catalog while the index fails
			return last, nil
		}
		return nil, err
	}
	return e.Value, nil
}

// build loads a new catalog.
func (c *catalogCache) build(ctx context.Context) (respcache.Rendered[*catalog], error) {
	cat, err := loadCatalog(ctx, c.idx, c.now())
	if err != nil {
		return respcache.Rendered[*catalog]{}, err
	}
	c.last.Store(cat)
	return respcache.Rendered[*catalog]{Value: cat, Size: int64(len(cat.entries)) * 256}, nil
}

// loadCatalog reads every namespace, provider, module and mirrored
// provider from the index.
func loadCatalog(ctx context.Context, idx Index, now time.Time) (*catalog, error) {
	nss, err := idx.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	cat := &catalog{namespaces: make(map[string]registry.Namespace, len(nss)), built: now}
	for _, ns := range nss {
		cat.namespaces[ns.Name] = ns
		cat.names = append(cat.names, ns.Name)
		ps, err := idx.ListProviders(ctx, ns.Name)
		if err != nil && !registry.IsKind(err, registry.NotFound) {
			return nil, err
		}
		for _, p := range ps {
			cat.entries = append(cat.entries, entry{Kind: kindProvider, Namespace: p.Namespace, Name: p.Type,
				Latest: p.LatestVersion, Versions: p.VersionCount, Updated: p.UpdatedAt,
				URL: "/providers/" + p.Namespace + "/" + p.Type})
		}
	}
	systems := map[string]bool{}
	for offset := 0; ; {
		ms, total, err := idx.ListModules(ctx, registry.ModuleFilter{Offset: offset, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			systems[m.System] = true
			cat.entries = append(cat.entries, entry{Kind: kindModule, Namespace: m.Namespace, Name: m.Name, System: m.System,
				Latest: m.LatestVersion, Versions: m.VersionCount, Description: m.Description, Updated: m.UpdatedAt,
				URL: "/modules/" + m.Namespace + "/" + m.Name + "/" + m.System})
		}
		offset += len(ms)
		if len(ms) == 0 || offset >= total {
			break
		}
	}
	mirrored, err := idx.ListAllMirroredVersions(ctx)
	if err != nil {
		return nil, err
	}
	byProvider := map[[3]string]*entry{}
	for _, mv := range mirrored {
		k := [3]string{mv.Host, mv.Namespace, mv.Type}
		e := byProvider[k]
		if e == nil {
			e = &entry{Kind: kindMirror, Host: mv.Host, Namespace: mv.Namespace, Name: mv.Type,
				URL: "/mirror/" + mv.Host + "/" + mv.Namespace + "/" + mv.Type}
			byProvider[k] = e
		}
		e.Versions++
		if registry.NewerLatestProvider(mustVersion(mv.Version), e.Latest) {
			e.Latest = mv.Version
		}
		if mv.PublishedAt.After(e.Updated) {
			e.Updated = mv.PublishedAt
		}
	}
	for _, e := range byProvider {
		cat.entries = append(cat.entries, *e)
	}
	for i := range cat.entries {
		e := &cat.entries[i]
		e.haystack = strings.ToLower(e.Host + " " + e.Namespace + " " + e.Name + " " + e.System + " " + e.Address() + " " + e.Description)
	}
	slices.SortFunc(cat.entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.System, b.System))
	})
	for s := range systems {
		cat.systems = append(cat.systems, s)
	}
	slices.Sort(cat.systems)
	cat.readSets()
	return cat, nil
}

// readSets fills the catalog's shared readable sets from its namespaces.
func (cat *catalog) readSets() {
	cat.all = make(map[string]bool, len(cat.names))
	cat.public = map[string]bool{}
	cat.isPublic = make([]bool, len(cat.names))
	for i, ns := range cat.names {
		cat.all[ns] = true
		if n, ok := cat.namespaces[ns]; ok && n.Public() {
			cat.public[ns] = true
			cat.isPublic[i] = true
		}
	}
}

// readable returns the namespaces of cat that p may read, asking a for
// each namespace now. The map is read-only: when the answer is every
// namespace, none, or those public when cat was built (what an
// anonymous visitor may read unless a visibility changed since), it is
// one the catalog or the package shares, so a cached page or search
// costs no map per request.
func readable(ctx context.Context, a *auth.Access, p auth.Principal, cat *catalog) (map[string]bool, error) {
	var small [64]bool
	can := small[:0]
	if len(cat.names) > len(small) {
		can = make([]bool, 0, len(cat.names))
	}
	n, public := 0, len(cat.isPublic) == len(cat.names)
	for i, ns := range cat.names {
		ok, err := a.CanRead(ctx, p, ns)
		if err != nil {
			return nil, err
		}
		can = append(can, ok)
		if ok {
			n++
		}
		public = public && ok == cat.isPublic[i]
	}
	switch {
	case n == 0:
		return noNamespaces, nil
	case n == len(cat.names) && cat.all != nil:
		return cat.all, nil
	case public && cat.public != nil:
		return cat.public, nil
	}
	out := make(map[string]bool, n)
	for i, ns := range cat.names {
		if can[i] {
			out[ns] = true
		}
	}
	return out, nil
}

// query is a search of the catalog.
type query struct {
	Text      string
	Kind      string // "" for every kind
	Namespace string
	System    string
}

// searchPageSize is how many results a search page shows.
const searchPageSize = 50

// find returns the entries of cat matching q that the reader may see
// (canRead says which namespaces; mirrored providers are visible to
// mirrorOK), best matches first, and how many matched in all.
func (cat *catalog) find(q query, canRead map[string]bool, mirrorOK bool, offset, limit int) ([]entry, int) {
	terms := strings.Fields(strings.ToLower(q.Text))
	if len(terms) > 8 {
		terms = terms[:8]
	}
	type hit struct {
		e     *entry
		score int
	}
	var hits []hit
	for i := range cat.entries {
		e := &cat.entries[i]
		if q.Kind != "" && e.Kind != q.Kind || q.System != "" && e.System != q.System {
			continue
		}
		if e.Kind == kindMirror {
			if !mirrorOK || q.Namespace != "" && e.Namespace != q.Namespace {
				continue
			}
		} else if !canRead[e.Namespace] || q.Namespace != "" && e.Namespace != q.Namespace {
			continue
		}
		score, ok := 0, true
		for _, t := range terms {
			switch {
			case e.Name == t:
				score += 8
			case strings.HasPrefix(e.Name, t):
				score += 4
			case strings.Contains(e.Name, t) || e.Namespace == t:
				score += 2
			case strings.Contains(e.haystack, t):
				score++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			hits = append(hits, hit{e, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	total := len(hits)
	offset = min(max(offset, 0), total)
	hits = hits[offset:min(offset+limit, total)]
	out := make([]entry, len(hits))
	for i, h := range hits {
		out[i] = *h.e
	}
	return out, total
}
