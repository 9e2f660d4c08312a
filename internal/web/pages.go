package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-version"

	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
)

// errNotFound is the answer for anything the visitor may not see or that
// does not exist: the two are never told apart.
var errNotFound = registry.Errorf(registry.NotFound, "There is nothing at this address, or you may not see it. Signed-in users see their private namespaces.")

// mustVersion parses a stored (valid) version; nil for one that is not.
func mustVersion(v string) *version.Version {
	pv, err := version.NewSemver(v)
	if err != nil {
		return version.Must(version.NewSemver("0.0.0-invalid"))
	}
	return pv
}

// canRead reports whether the visitor may read the namespace; a name
// that is not valid is not readable.
func (s *Service) canRead(ctx context.Context, v *visit, namespace string) (string, error) {
	ns, err := namespaceNames.get(namespace)
	if err != nil {
		return "", errNotFound
	}
	ok, err := s.opt.Access.CanRead(ctx, v.p, ns)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errNotFound
	}
	return ns, nil
}

// mirrorVisible reports whether the visitor may see mirrored providers:
// any signed-in user, everyone when the mirror is public.
func (s *Service) mirrorVisible(v *visit) bool {
	return v.signedIn() || s.opt.Access.MirrorPublic()
}

type homeData struct {
	Host       string
	Namespaces []registry.Namespace
	Recent     []entry
	Providers  int
	Modules    int
	Mirrored   int
	SignedIn   bool
}

// readerKey starts the page cache key of a page (named page) that
// depends on who asks only through facts of the visit (whether signed
// in, whether the mirror is visible: as many as the page needs) and the
// namespaces of cat the visitor may read (can): page, each fact and each
// such namespace, separated by NUL, which no name holds. extra is the
// room to reserve for what the caller appends.
func readerKey(page string, cat *catalog, can map[string]bool, extra int, facts ...bool) *strings.Builder {
	key := &strings.Builder{}
	key.Grow(64 + extra)
	key.WriteString(page)
	for _, f := range facts {
		key.WriteByte(0)
		key.WriteString(strconv.FormatBool(f))
	}
	for _, name := range cat.names {
		if can[name] {
			key.WriteByte(0)
			key.WriteString(name)
		}
	}
	return key
}

func (s *Service) home(w http.ResponseWriter, r *http.Request, v *visit) error {
	cat, err := s.catalog.get(r.Context())
	if err != nil {
		return err
	}
	can, err := readable(r.Context(), s.opt.Access, v.p, cat)
	if err != nil {
		return err
	}
	// The page depends on who asks only through what they may read and
	// whether they are signed in: all of it is in the key.
	mirror := s.mirrorVisible(v)
	signedIn := v.signedIn()
	key := readerKey("home", cat, can, 0, signedIn, mirror).String()
	if s.servedFresh(s.pages, w, r, v, key) {
		return nil
	}
	return s.cached(w, r, v, key, func(ctx context.Context) (string, string, any, error) {
		cat, err := s.catalog.get(ctx)
		if err != nil {
			return "", "", nil, err
		}
		d := homeData{Host: s.opt.Host, SignedIn: signedIn}
		for _, name := range cat.names {
			if can[name] {
				d.Namespaces = append(d.Namespaces, cat.namespaces[name])
			}
		}
		all, _ := cat.find(query{}, can, mirror, 0, len(cat.entries))
		for _, e := range all {
			switch e.Kind {
			case kindProvider:
				d.Providers++
			case kindModule:
				d.Modules++
			case kindMirror:
				d.Mirrored++
			}
		}
		slices.SortStableFunc(all, func(a, b entry) int { return b.Updated.Compare(a.Updated) })
		d.Recent = all[:min(len(all), 10)]
		return "Trove", "home", d, nil
	})
}

type searchData struct {
	Query      query
	Results    []entry
	Total      int
	Namespaces []string
	Systems    []string
	Prev, Next string
	From, To   int
	Mirror     bool
}

func (s *Service) search(w http.ResponseWriter, r *http.Request, v *visit) error {
	cat, err := s.catalog.get(r.Context())
	if err != nil {
		return err
	}
	can, err := readable(r.Context(), s.opt.Access, v.p, cat)
	if err != nil {
		return err
	}
	mirror := s.mirrorVisible(v)
	// The results depend on who asks only through what they may read:
	// that is in the key, with the whole query the page's links repeat,
	// as it was sent (the same bytes always make the same page; writing
	// them the same way, as the page's own links do, shares an entry).
	key := readerKey("search", cat, can, 2+len(r.URL.RawQuery), mirror)
	key.WriteString("\x00\x00")
	key.WriteString(r.URL.RawQuery)
	if e := s.searches.Lookup(allPages, key.String()); s.searches.StateAt(e, reqtime.Of(w)) == respcache.Fresh {
		// Kept for this very query string, so its search text is the
		// one this request asks for: nothing to parse. (An address
		// that fails, or asks for the results fragment, is never kept.)
		v.query = e.Value.query
		s.writePart(w, r, v, e)
		return nil
	}
	qv := r.URL.Query()
	q := query{Text: qv.Get("q"), Kind: qv.Get("kind"), Namespace: strings.ToLower(qv.Get("namespace")), System: qv.Get("system")}
	if len(q.Text) > 256 {
		q.Text = q.Text[:256]
	}
	switch q.Kind {
	case "", kindProvider, kindModule, kindMirror:
	default:
		return registry.Errorf(registry.Invalid, "Unknown kind %q: choose provider, module or mirror.", registry.Elide(q.Kind))
	}
	page, _ := strconv.Atoi(qv.Get("page"))
	page = min(max(page, 1), 10000)
	v.query = q.Text
	fragment := qv.Get("fragment") == "1"
	qv.Del("fragment")
	results := func(ctx context.Context) (searchData, error) {
		cat, err := s.catalog.get(ctx)
		if err != nil {
			return searchData{}, err
		}
		d := searchData{Query: q, Systems: cat.systems, Mirror: mirror}
		for _, ns := range cat.names {
			if can[ns] {
				d.Namespaces = append(d.Namespaces, ns)
			}
		}
		d.Results, d.Total = cat.find(q, can, d.Mirror, (page-1)*searchPageSize, searchPageSize)
		d.From, d.To = (page-1)*searchPageSize+1, (page-1)*searchPageSize+len(d.Results)
		link := func(p int) string {
			vals := maps.Clone(qv)
			vals.Set("page", strconv.Itoa(p))
			return SearchPath + "?" + vals.Encode()
		}
		if page > 1 {
			d.Prev = link(page - 1)
		}
		if d.To < d.Total {
			d.Next = link(page + 1)
		}
		return d, nil
	}
	if fragment {
		d, err := results(r.Context())
		if err != nil {
			return err
		}
		html, err := execute("results", d)
		if err != nil {
			return registry.Wrap(registry.Internal, err, "rendering search results")
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("Cache-Control", "private, no-store")
		_, _ = w.Write([]byte(html))
		return nil
	}
	title := "Search"
	if q.Text != "" {
		title = "Search: " + q.Text
	}
	return s.cachedIn(s.searches, w, r, v, key.String(), func(ctx context.Context) (string, string, any, error) {
		d, err := results(ctx)
		return title, "search", d, err
	})
}

type namespaceData struct {
	Namespace  registry.Namespace
	Entries    []entry
	Total      int
	Admin      bool
	Prev, Next string
}

func (s *Service) namespacePage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return s.namespacePageOf(w, r, v, r.PathValue("namespace"))
}

// namespacePageOf serves the page of namespace (the path's value).
func (s *Service) namespacePageOf(w http.ResponseWriter, r *http.Request, v *visit, namespace string) error {
	ns, err := s.canRead(r.Context(), v, namespace)
	if err != nil {
		return err
	}
	admin := v.p.Allows(registry.ScopeAdmin, ns, v.now)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = min(max(page, 1), 10000)
	key := "namespace\x00" + ns + "\x00" + strconv.FormatBool(admin) + "\x00" + strconv.Itoa(page)
	if s.servedFresh(s.pages, w, r, v, key) {
		return nil
	}
	return s.cached(w, r, v, key, func(ctx context.Context) (string, string, any, error) {
		cat, err := s.catalog.get(ctx)
		if err != nil {
			return "", "", nil, err
		}
		n, ok := cat.namespaces[ns]
		if !ok {
			if n, err = s.opt.Index.GetNamespace(ctx, ns); err != nil {
				return "", "", nil, errNotFound
			}
		}
		d := namespaceData{Namespace: n, Admin: admin}
		d.Entries, d.Total = cat.find(query{Namespace: ns}, map[string]bool{ns: true}, false, (page-1)*searchPageSize, searchPageSize)
		if page > 1 {
			d.Prev = "/namespaces/" + ns + "?page=" + strconv.Itoa(page-1)
		}
		if page*searchPageSize < d.Total {
			d.Next = "/namespaces/" + ns + "?page=" + strconv.Itoa(page+1)
		}
		return "Namespace " + ns, "namespace", d, nil
	})
}

// maxSelectorVersions bounds the versions a version selector offers: the
// newest ones, and the one shown. Older versions stay reachable by
// address.
const maxSelectorVersions = 100

// versionLink is one entry of a version selector.
type versionLink struct {
	Version    string
	URL        string
	Current    bool
	Prerelease bool
	Published  time.Time
	Deprecated bool // marked in the selector (lifecycle.html)
	Revoked    bool // listed only on its own page
}

// pickVersion sorts versions newest first and returns the one asked for
// ("" for the latest: the newest release, else the newest pre-release).
func pickVersion(versions []string, want string) (string, bool) {
	registry.SortNewestFirst(versions, func(s string) string { return s })
	if want != "" {
		return want, slices.Contains(versions, want)
	}
	for _, v := range versions {
		if mustVersion(v).Prerelease() == "" {
			return v, true
		}
	}
	if len(versions) == 0 {
		return "", false
	}
	return versions[0], true
}

// moduleData is what a module page shows.
type moduleData struct {
	Namespace, Name, System, Version, Latest string
	Private                                  bool
	Versions                                 []versionLink
	Source                                   string
	Snippet                                  string
	Description                              string
	Root                                     moduleSection
	Submodules                               []moduleSection
	Examples                                 []moduleSection
	Published                                time.Time
	Origin                                   string
	ArchiveSize                              int64
	ArchiveFormat                            string
	Diagnostics                              []string
	Downloads                                int64  // of this version
	AllDownloads                             int64  // of every version
	DownloadsError                           string // set when the counts could not be read
	Chart                                    *downloadChart
	// Consumers is set only on a page rendered for one visitor who may
	// read them (consumers.go), never on a cached one.
	Consumers    *consumersData
	VersionCount int
	HasMetadata  bool
	Lifecycle    lifecycle
	Provenance   *provenanceData
}

// moduleSection is the root module, a submodule or an example.
type moduleSection struct {
	modules.ModuleInfo
	ID              string
	Readme          template.HTML
	ReadmeTruncated bool
	Required        []modules.Input
	Optional        []modules.Input
}

func (s *Service) modulePage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return s.modulePageOf(w, r, v, r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system"), r.PathValue("version"))
}

// modulePageOf serves the page of a module's version (want, "" for the
// latest), from the path's values.
func (s *Service) modulePageOf(w http.ResponseWriter, r *http.Request, v *visit, namespace, moduleName, moduleSystem, want string) error {
	ns, err := s.canRead(r.Context(), v, namespace)
	if err != nil {
		return err
	}
	name, err1 := moduleNames.get(moduleName)
	system, err2 := moduleSystems.get(moduleSystem)
	if err1 != nil || err2 != nil {
		return errNotFound
	}
	if want == "" && r.URL.RawQuery != "" && r.URL.Query().Get("version") != "" { // the version form without script
		http.Redirect(w, r, "/modules/"+ns+"/"+name+"/"+system+"/"+url.PathEscape(r.URL.Query().Get("version")), http.StatusSeeOther)
		return nil
	}
	key := "module\x00" + ns + "\x00" + name + "\x00" + system + "\x00" + want
	q := registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: ns, Name: name, System: system}
	consumers, err := s.consumers(r, v, q)
	if err != nil {
		return err
	}
	if consumers != nil {
		// Consumer data is the visitor's own: rendered for this request
		// alone, never through the page cache.
		d, err := s.moduleData(r.Context(), ns, name, system, want)
		if err != nil {
			return err
		}
		d.Consumers = consumers
		s.render(w, r, v, http.StatusOK, ns+"/"+name+"/"+system+" "+d.Version, "module", d)
		return nil
	}
	if s.servedFresh(s.pages, w, r, v, key) {
		return nil
	}
	return s.cached(w, r, v, key, func(ctx context.Context) (string, string, any, error) {
		d, err := s.moduleData(ctx, ns, name, system, want)
		if err != nil {
			return "", "", nil, err
		}
		return ns + "/" + name + "/" + system + " " + d.Version, "module", d, nil
	})
}

// moduleData reads what a module page shows of one version ("" for the
// latest), consumers aside.
func (s *Service) moduleData(ctx context.Context, ns, name, system, want string) (*moduleData, error) {
	l, err := s.moduleVersions(ctx, ns, name, system)
	if registry.IsKind(err, registry.NotFound) {
		return nil, errNotFound
	} else if err != nil {
		return nil, err
	}
	latest, cur := l.latest, want
	if want == "" {
		cur = latest
	}
	if _, ok := l.meta[cur]; !ok {
		return nil, errNotFound
	}
	mv, err := s.opt.Index.GetModuleVersion(ctx, ns, name, system, cur)
	if err != nil {
		return nil, err
	}
	nsInfo, err := s.opt.Index.GetNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	keys, err := s.opt.Index.ListSigningKeys(ctx, ns)
	if err != nil {
		return nil, err
	}
	prov, err := s.moduleProvenanceOf(ctx, ns, name, system, cur, keys)
	if err != nil {
		return nil, err
	}
	d := &moduleData{Provenance: prov, Namespace: ns, Name: name, System: system, Version: cur, Latest: latest, Private: !nsInfo.Public(),
		Source: s.opt.Host + "/" + ns + "/" + name + "/" + system, Description: mv.Description,
		Published: mv.PublishedAt, Origin: mv.Origin, ArchiveSize: mv.ArchiveSize, ArchiveFormat: mv.ArchiveFormat,
		Lifecycle: lifecycle{Deprecation: mv.Deprecation, Revocation: mv.Revocation}}
	base := "/modules/" + ns + "/" + name + "/" + system + "/"
	for _, n := range listedVersions(l.names, l.revoked, cur) {
		m := l.meta[n]
		d.Versions = append(d.Versions, versionLink{Version: n, URL: base + n, Current: n == cur,
			Prerelease: m.prerelease, Published: m.published, Deprecated: m.deprecated, Revoked: l.revoked[n]})
	}
	secs, err := s.moduleSectionsOf(ctx, mv.Metadata)
	if err != nil {
		return nil, err
	}
	d.HasMetadata, d.Root, d.Submodules, d.Examples, d.Diagnostics = secs.hasMetadata, secs.root, secs.submodules, secs.examples, secs.diagnostics
	d.VersionCount = len(l.names)
	f := s.downloadFigures(ctx, registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: ns, Name: name, System: system},
		func(ctx context.Context) ([]registry.DownloadCount, error) {
			return s.opt.Downloads.ModuleDownloads(ctx, ns, name, system)
		})
	d.Chart, d.DownloadsError = f.Chart, f.CountsError
	for _, c := range f.Counts {
		d.AllDownloads += c.Count
		if c.Version == cur {
			d.Downloads += c.Count
		}
	}
	d.Snippet = moduleSnippet(name, d.Source, versionConstraint(cur, cur == latest), d.Root.Required)
	return d, nil
}

// section renders one module directory's README and splits its inputs.
// id, unique on the page, starts the ids of the section's elements; scope,
// unique too, those of its README ("" for the root module's).
func section(m modules.ModuleInfo, id, scope string) moduleSection {
	label := "the README of " + m.Path
	if m.Path == "" {
		label = "the README"
	}
	doc := renderMarkdown([]byte(m.Readme), keepAnchors, scope, label)
	sec := moduleSection{ModuleInfo: m, ID: id, Readme: doc.HTML, ReadmeTruncated: m.ReadmeTruncated || doc.Truncated}
	for _, in := range m.Inputs {
		if in.Required {
			sec.Required = append(sec.Required, in)
		} else {
			sec.Optional = append(sec.Optional, in)
		}
	}
	return sec
}

// keepAnchors is the link rewriter of READMEs: relative links into the
// module's repository, which Trove does not serve, are dropped, keeping
// their text (links within the page never reach it).
func keepAnchors(string) string { return "" }

// hclIdentifier turns a module or provider name into a block label.
func hclIdentifier(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "m_" + string(b)
	}
	return string(b)
}

// moduleSnippet is the module block that uses a module: its source, a
// version constraint (versionConstraint) and its required inputs with a
// placeholder of their type to fill in, their type and description in a
// comment.
func moduleSnippet(name, source, constraint string, required []modules.Input) string {
	var b strings.Builder
	b.WriteString("module \"" + hclIdentifier(name) + "\" {\n")
	b.WriteString("  source  = \"" + source + "\"\n")
	b.WriteString("  version = \"" + constraint + "\"\n")
	if len(required) > 0 {
		b.WriteString("\n  # Required inputs\n")
		width := 0
		for _, in := range required {
			width = max(width, len(in.Name))
		}
		for _, in := range required {
			typ := oneLine(in.Type)
			if typ == "" {
				typ = "any"
			}
			if len(typ) > 40 {
				typ = typ[:37] + "..."
			}
			comment := typ
			if d := firstLine(in.Description); d != "" {
				comment += ": " + d
			}
			b.WriteString("  " + in.Name + strings.Repeat(" ", width-len(in.Name)) + " = " + placeholder(in.Type) + " # " + comment + "\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// placeholder is the empty value of a Terraform type expression, for the
// required inputs of a snippet: "" for a string, [] for a list, set or
// tuple, {} for a map or an object, 0, false, and null for anything else.
func placeholder(typ string) string {
	t := strings.TrimSpace(typ)
	if i := strings.IndexAny(t, "({"); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch t {
	case "string":
		return `""`
	case "number":
		return "0"
	case "bool":
		return "false"
	case "list", "set", "tuple":
		return "[]"
	case "map", "object":
		return "{}"
	}
	return "null"
}

// firstLine is the first line of a description, at most 80 bytes, for a
// comment.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > 80 {
		cut := 77
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// versionConstraint is the version constraint a snippet suggests for
// version v: "~> MAJOR.MINOR" for the latest release from 1.0 on (new
// minor and patch releases, no new major one), "~> MAJOR.MINOR.PATCH"
// for an older release or a 0.x one (its patch releases), and the
// version itself for a pre-release (which a constraint never selects
// otherwise).
func versionConstraint(v string, latest bool) string {
	pv, err := version.NewSemver(v)
	if err != nil || pv.Prerelease() != "" || pv.Metadata() != "" {
		return v
	}
	seg := pv.Segments()
	if latest && seg[0] >= 1 {
		return fmt.Sprintf("~> %d.%d", seg[0], seg[1])
	}
	return fmt.Sprintf("~> %d.%d.%d", seg[0], seg[1], seg[2])
}

// wrapType escapes a type expression or a value for HTML and lets it wrap
// after the punctuation that separates its parts (a <wbr> after ",", "(",
// "{", "[", "=" and "/", and before "|"), so that a long object type
// breaks between attributes, and an address or a path between its parts,
// rather than inside a name.
func wrapType(s string) template.HTML {
	var b strings.Builder
	for _, r := range s {
		if r == '|' {
			b.WriteString("<wbr>")
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
		switch r {
		case ',', '(', '{', '[', '=', '/':
			b.WriteString("<wbr>")
		}
	}
	return template.HTML(b.String())
}

// oneLine folds a multi-line type expression into one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// providerData is what a provider page shows.
type providerData struct {
	Namespace, Type, Version, Latest string
	Private                          bool
	Versions                         []versionLink
	VersionCount                     int
	Source                           string
	Snippet                          string
	Host                             string
	TokenVariable                    string
	Protocols                        []string
	Platforms                        []registry.Platform
	SigningKey                       registry.SigningKey
	Keys                             []registry.SigningKey
	Published                        time.Time
	Docs                             *docsNav
	Doc                              *docPage
	Downloads                        int64 // of this version
	AllDownloads                     int64 // of every version
	PlatformDownloads                map[string]int64
	DownloadsError                   string // set when the counts could not be read
	Chart                            *downloadChart
	Provenance                       *provenanceData
	// Consumers is set only on a page rendered for one visitor who may
	// read them (consumers.go), never on a cached one.
	Consumers *consumersData
	Lifecycle lifecycle
}

func (s *Service) providerPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return s.providerPageOf(w, r, v, r.PathValue("namespace"), r.PathValue("type"), r.PathValue("version"))
}

// providerPageOf serves the page of a provider's version (want, "" for
// the latest), from the path's values.
func (s *Service) providerPageOf(w http.ResponseWriter, r *http.Request, v *visit, namespace, providerType, want string) error {
	ns, err := s.canRead(r.Context(), v, namespace)
	if err != nil {
		return err
	}
	typ, err := providerTypes.get(providerType)
	if err != nil {
		return errNotFound
	}
	if want == "" && r.URL.RawQuery != "" && r.URL.Query().Get("version") != "" { // the version form without script
		http.Redirect(w, r, "/providers/"+ns+"/"+typ+"/"+url.PathEscape(r.URL.Query().Get("version")), http.StatusSeeOther)
		return nil
	}
	key := "provider\x00" + ns + "\x00" + typ + "\x00" + want
	consumers, err := s.consumers(r, v, registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: ns, Name: typ})
	if err != nil {
		return err
	}
	if consumers != nil {
		// Consumer data is the visitor's own: rendered for this request
		// alone, never through the page cache.
		d, err := s.providerData(r.Context(), ns, typ, want)
		if err != nil {
			return err
		}
		d.Consumers = consumers
		s.render(w, r, v, http.StatusOK, ns+"/"+typ+" "+d.Version, "provider", d)
		return nil
	}
	if s.servedFresh(s.pages, w, r, v, key) {
		return nil
	}
	return s.cached(w, r, v, key, func(ctx context.Context) (string, string, any, error) {
		d, err := s.providerData(ctx, ns, typ, want)
		if err != nil {
			return "", "", nil, err
		}
		return ns + "/" + typ + " " + d.Version, "provider", d, nil
	})
}

// providerData reads what a provider page shows of one version ("" for
// the latest).
func (s *Service) providerData(ctx context.Context, ns, typ, want string) (*providerData, error) {
	l, err := s.providerVersions(ctx, ns, typ)
	if registry.IsKind(err, registry.NotFound) {
		return nil, errNotFound
	} else if err != nil {
		return nil, err
	}
	latest, cur := l.latest, want
	if want == "" {
		cur = latest
	}
	if _, ok := l.meta[cur]; !ok {
		return nil, errNotFound
	}
	pv, err := s.opt.Index.GetProviderVersion(ctx, ns, typ, cur)
	if registry.IsKind(err, registry.NotFound) {
		return nil, errNotFound
	} else if err != nil {
		return nil, err
	}
	nsInfo, err := s.opt.Index.GetNamespace(ctx, ns)
	if err != nil {
		return nil, err
	}
	keys, err := s.opt.Index.ListSigningKeys(ctx, ns)
	if err != nil {
		return nil, err
	}
	prov, err := s.provenanceOf(ctx, ns, typ, cur, keys)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		keys[i].ASCIIArmor = ""
	}
	d := &providerData{Namespace: ns, Type: typ, Version: cur, Latest: latest, Private: !nsInfo.Public(),
		Source: s.opt.Host + "/" + ns + "/" + typ, Host: s.opt.Host, TokenVariable: tokenVariable(s.opt.Host),
		Protocols: pv.Protocols, Platforms: slices.Clone(pv.Platforms), SigningKey: pv.SigningKey, Keys: keys,
		Published: pv.PublishedAt, Lifecycle: lifecycle{Deprecation: pv.Deprecation, Revocation: pv.Revocation}, Provenance: prov}
	d.SigningKey.ASCIIArmor = ""
	slices.SortFunc(d.Platforms, func(a, b registry.Platform) int { return cmp.Or(cmp.Compare(a.OS, b.OS), cmp.Compare(a.Arch, b.Arch)) })
	base := "/providers/" + ns + "/" + typ + "/"
	for _, n := range listedVersions(l.names, l.revoked, cur) {
		m := l.meta[n]
		d.Versions = append(d.Versions, versionLink{Version: n, URL: base + n, Current: n == cur,
			Prerelease: m.prerelease, Published: m.published, Deprecated: m.deprecated, Revoked: l.revoked[n]})
	}
	d.Snippet = providerSnippet(typ, d.Source, versionConstraint(cur, cur == latest))
	d.VersionCount = len(l.names)
	f := s.downloadFigures(ctx, registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: ns, Name: typ},
		func(ctx context.Context) ([]registry.DownloadCount, error) {
			return s.opt.Downloads.ProviderDownloads(ctx, ns, typ)
		})
	d.Chart, d.DownloadsError = f.Chart, f.CountsError
	d.PlatformDownloads = map[string]int64{}
	for _, c := range f.Counts {
		d.AllDownloads += c.Count
		if c.Version == cur {
			d.Downloads += c.Count
			d.PlatformDownloads[c.OS+"_"+c.Arch] += c.Count
		}
	}
	if d.Docs, err = s.docsNav(ctx, pv); err != nil {
		return nil, err
	}
	return d, nil
}

// providerSnippet is the required_providers entry of a provider, with a
// version constraint (versionConstraint).
func providerSnippet(typ, source, version string) string {
	return "terraform {\n  required_providers {\n    " + hclIdentifier(typ) + " = {\n      source  = \"" + source +
		"\"\n      version = \"" + version + "\"\n    }\n  }\n}\n"
}

// tokenVariable is the environment variable that gives Terraform and
// OpenTofu a token for host: TF_TOKEN_ with dots as "_" and dashes as
// "__"; "" for a host with a port, which such a variable cannot name.
func tokenVariable(host string) string {
	if strings.Contains(host, ":") {
		return ""
	}
	return "TF_TOKEN_" + strings.ReplaceAll(strings.ReplaceAll(host, "-", "__"), ".", "_")
}

type mirroredData struct {
	Host, Namespace, Type string
	Versions              []mirroredVersion
	Source                string
	MirrorURL             string
	// Withheld are the versions the mirror holds back or denies, with why.
	Withheld []withheldVersion
	MinAge   string // of the rule that allows the provider; "" for none
	// Provenance is that of the version chosen with ?version= (by
	// default the newest with provenance), which an air-gap bundle
	// carried; nil for none.
	Provenance *provenanceData
}

type withheldVersion struct {
	Version, Status, Reason string
	Until                   time.Time
}

type mirroredVersion struct {
	Version   string
	Platforms int
	Held      int
	Fetched   time.Time
	KeyID     string
	// Provenance reports provenance an air-gap bundle carried with it.
	Provenance bool
}

func (s *Service) mirroredPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if !s.mirrorVisible(v) {
		return errNotFound
	}
	host := strings.ToLower(r.PathValue("host"))
	ns := strings.ToLower(r.PathValue("namespace"))
	typ := strings.ToLower(r.PathValue("type"))
	if len(host) > 255 || len(ns) > 64 || len(typ) > 64 {
		return errNotFound
	}
	vs, err := s.opt.Index.ListMirroredVersions(r.Context(), host, ns, typ)
	if registry.IsKind(err, registry.NotFound) {
		return errNotFound
	} else if err != nil {
		return err
	}
	d := mirroredData{Host: host, Namespace: ns, Type: typ, Source: host + "/" + ns + "/" + typ,
		MirrorURL: strings.TrimSuffix(s.opt.PublicURL.String(), "/") + "/v1/mirror/"}
	registry.SortNewestFirst(vs, func(mv registry.MirroredVersion) string { return mv.Version })
	selected := r.URL.Query().Get("version")
	found, withProvenance := selected == "", false
	for _, mv := range vs {
		// Only versions an air-gap bundle brought have provenance; the
		// list says which (HasProvenance), and the one envelope the page
		// shows is read below.
		m := mirroredVersion{Version: mv.Version, Platforms: len(mv.Platforms), Fetched: mv.PublishedAt, KeyID: mv.SigningKey.KeyID,
			Provenance: mv.HasProvenance}
		for _, p := range mv.Platforms {
			if p.Held() {
				m.Held++
			}
		}
		if m.Provenance && selected == "" {
			selected = mv.Version
		}
		if mv.Version == selected {
			found, withProvenance = true, m.Provenance
		}
		d.Versions = append(d.Versions, m)
	}
	if !found {
		return errNotFound
	}
	if withProvenance {
		if d.Provenance, err = s.mirroredProvenanceOf(r.Context(), host, ns, typ, selected); err != nil {
			return err
		}
	}
	if s.opt.Holds != nil {
		// What the mirror holds back is shown when the mirror can say;
		// the page stands without it (an upstream down, say).
		if h, err := s.opt.Holds(r.Context(), host, ns, typ); err != nil {
			s.log.DebugContext(r.Context(), "mirrored page: no hold report", "provider", d.Source, "error", registry.Message(err))
		} else {
			if h.Rule != nil && h.Rule.MinAge > 0 {
				d.MinAge = registry.FormatAge(h.Rule.MinAge)
			}
			for _, hv := range h.Versions {
				if hv.Status != mirror.Available {
					d.Withheld = append(d.Withheld, withheldVersion{Version: hv.Version, Status: string(hv.Status), Reason: hv.Reason, Until: hv.Until})
				}
			}
		}
	}
	s.render(w, r, v, http.StatusOK, d.Source+" (mirrored)", "mirrored", d)
	return nil
}

// prettyJSON indents a JSON value (an input's default) for people; ""
// for none.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	s := buf.String()
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return s
}

// versionList is what the pages of a provider's versions need of all of
// them: their names newest first, the latest one (pickVersion of the
// unrevoked ones), and what the version selector shows of each. It is
// read once for every page of the provider (providerVersions) and is
// small: a version's platforms, the bulk of the list in the index, are
// read for the one version a page shows.
type versionList struct {
	names   []string // newest first
	latest  string
	revoked map[string]bool
	meta    map[string]versionMeta
}

// versionMeta is what the version selector shows of a version.
type versionMeta struct {
	published              time.Time
	prerelease, deprecated bool
}

// versionSummary is what a version list keeps of one version.
type versionSummary struct {
	version             string
	published           time.Time
	deprecated, revoked bool
}

// newVersionList sums up the versions of a provider or module.
func newVersionList(vs []versionSummary) *versionList {
	l := &versionList{names: make([]string, len(vs)), revoked: map[string]bool{}, meta: make(map[string]versionMeta, len(vs))}
	for i, v := range vs {
		l.names[i] = v.version
		if v.revoked {
			l.revoked[v.version] = true
		}
		l.meta[v.version] = versionMeta{published: v.published, prerelease: mustVersion(v.version).Prerelease() != "",
			deprecated: v.deprecated}
	}
	registry.SortNewestFirst(l.names, func(s string) string { return s })
	l.latest, _ = pickVersion(unrevoked(l.names, l.revoked), "")
	return l
}

// providerVersions returns the versions of a provider, read once per
// invalidation of the pages and maximum age (settled age while the index
// is settled: listCache): a page of any version reuses the list (whose
// reading, with every version's platforms, is the most expensive read of
// a provider page).
func (s *Service) providerVersions(ctx context.Context, ns, typ string) (*versionList, error) {
	return s.cachedVersionList(ctx, "provider\x00"+ns+"\x00"+typ, func(ctx context.Context) ([]versionSummary, error) {
		vs, err := s.opt.Index.ListProviderVersions(ctx, ns, typ)
		sums := make([]versionSummary, len(vs))
		for i, v := range vs {
			sums[i] = versionSummary{version: v.Version, published: v.PublishedAt, deprecated: v.Deprecation != nil, revoked: v.Revocation != nil}
		}
		return sums, err
	})
}

// moduleVersions returns the versions of a module, kept as a provider's
// are (providerVersions).
func (s *Service) moduleVersions(ctx context.Context, ns, name, system string) (*versionList, error) {
	return s.cachedVersionList(ctx, "module\x00"+ns+"\x00"+name+"\x00"+system, func(ctx context.Context) ([]versionSummary, error) {
		vs, err := s.opt.Index.ListModuleVersions(ctx, ns, name, system)
		sums := make([]versionSummary, len(vs))
		for i, v := range vs {
			sums[i] = versionSummary{version: v.Version, published: v.PublishedAt, deprecated: v.Deprecation != nil, revoked: v.Revocation != nil}
		}
		return sums, err
	})
}

// cachedVersionList returns the list kept under key in s.lists, made of
// read's versions when it is not fresh. The list is shared: never modify
// it.
func (s *Service) cachedVersionList(ctx context.Context, key string, read func(context.Context) ([]versionSummary, error)) (*versionList, error) {
	e := s.lists.Lookup(allPages, key)
	if s.lists.State(e) == respcache.Fresh {
		return e.Value, nil
	}
	e, err := s.lists.Load(ctx, allPages, key, e, func(ctx context.Context) (respcache.Rendered[*versionList], error) {
		vs, err := read(ctx)
		if err != nil {
			return respcache.Rendered[*versionList]{}, err
		}
		// About what the list holds: a name and a flag or two per version.
		return respcache.Rendered[*versionList]{Value: newVersionList(vs), Size: int64(len(vs)) * 64, Lasting: true}, nil
	})
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}
