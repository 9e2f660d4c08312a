package web

import (
	"bytes"
	"context"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/store"
)

// categoryTitles name the documentation categories in the navigation.
var categoryTitles = map[string]string{
	providerdocs.CategoryResources:          "Resources",
	providerdocs.CategoryDataSources:        "Data sources",
	providerdocs.CategoryEphemeralResources: "Ephemeral resources",
	providerdocs.CategoryFunctions:          "Functions",
	providerdocs.CategoryGuides:             "Guides",
}

// docsNav is the navigation of a provider version's documentation, and
// its overview page (index.md) rendered.
type docsNav struct {
	Overview template.HTML
	Groups   []navGroup
}

type navGroup struct {
	Title string
	Pages []navLink
}

// navLink is a page in the navigation: Title is its short name
// (shortTitle), Full its page_title.
type navLink struct {
	Title, Full, URL string
	Current          bool
}

// shortTitle is the name the navigation shows for a page: the resource,
// data source or ephemeral resource name ("example_thing", as in a
// configuration), a function's name, or a guide's title without
// tfplugindocs' " - terraform-provider-NAME" tail.
func shortTitle(typ string, p providerdocs.Page) string {
	switch p.Category {
	case providerdocs.CategoryResources, providerdocs.CategoryDataSources, providerdocs.CategoryEphemeralResources:
		if strings.HasPrefix(p.Slug, typ+"_") {
			return p.Slug
		}
		return typ + "_" + p.Slug
	case providerdocs.CategoryFunctions:
		return p.Slug
	}
	if head, tail, ok := strings.Cut(p.Title, " - terraform-provider-"); ok && head != "" && !strings.Contains(tail, " ") {
		return head
	}
	return p.Title
}

// withCurrent returns a copy of n with the link to url marked current.
func (n *docsNav) withCurrent(url string) *docsNav {
	c := &docsNav{Overview: n.Overview, Groups: make([]navGroup, len(n.Groups))}
	for i, g := range n.Groups {
		c.Groups[i] = navGroup{Title: g.Title, Pages: slices.Clone(g.Pages)}
		for j := range c.Groups[i].Pages {
			c.Groups[i].Pages[j].Current = c.Groups[i].Pages[j].URL == url
		}
	}
	return c
}

// docPage is one rendered documentation page.
type docPage struct {
	Title, Category, Subcategory, Description string
	HTML                                      template.HTML
	Truncated                                 bool
	HasTitle                                  bool // the Markdown has its own level-1 heading
}

// docsCacheBytes bounds the memory of the parsed documentation
// archives kept (their Markdown, accounted by docsBytes); they count in
// the web UI's shared budget (webCacheBytes) too. One archive larger
// than the bound is kept alone.
const docsCacheBytes = 32 << 20

// docsCacheMaxAge is how long a parsed archive is served; an archive
// never changes under its digest, so past its fresh part it is parsed
// again in the background while the old one is served.
const docsCacheMaxAge = time.Hour

// docsCache keeps parsed documentation archives by digest. It is an
// instance of Trove's one response cache (respcache): single-flight
// parses, a byte budget counted in the web UI's shared one, and dropped
// with the pages on every change (Service.Invalidate, fed by the
// server's change channel), so that what a page shows is read after the
// change that made it stale.
type docsCache struct {
	blobs store.Blobs
	cache *respcache.Cache[string, struct{}, *providerdocs.Docs]
}

func newDocsCache(b store.Blobs, now func() time.Time, budget *respcache.Budget) *docsCache {
	return &docsCache{blobs: b, cache: respcache.New[string, struct{}, *providerdocs.Docs](respcache.Options{
		Name: "web documentation", MaxAge: docsCacheMaxAge, Now: now, MaxBytes: docsCacheBytes, Budget: budget,
		// An archive gone from the blob store is parsed again (and
		// fails) on the next request.
		Drop: func(err error) bool { return registry.IsKind(err, registry.NotFound) },
	})}
}

// invalidate drops every parsed archive; nil drops nothing.
func (c *docsCache) invalidate() {
	if c != nil {
		c.cache.InvalidateAll()
	}
}

// get returns the parsed archive of digest.
func (c *docsCache) get(ctx context.Context, digest string) (*providerdocs.Docs, error) {
	e := c.cache.Lookup(digest, struct{}{})
	switch c.cache.State(e) {
	case respcache.Fresh:
		return e.Value, nil
	case respcache.Stale:
		if c.cache.ShouldRevalidate(e) {
			c.cache.Revalidate(digest, struct{}{}, e, c.parser(digest))
		}
		return e.Value, nil
	}
	e, err := c.cache.Load(ctx, digest, struct{}{}, e, c.parser(digest))
	if err != nil {
		return nil, err
	}
	return e.Value, nil
}

// parser reads and parses the archive of digest; the cache runs it once
// however many requests ask, detached from them.
func (c *docsCache) parser(digest string) respcache.RenderFunc[*providerdocs.Docs] {
	return func(ctx context.Context) (respcache.Rendered[*providerdocs.Docs], error) {
		var none respcache.Rendered[*providerdocs.Docs]
		if c.blobs == nil {
			return none, registry.Errorf(registry.Unavailable, "no blob store")
		}
		b, err := c.blobs.Open(ctx, digest)
		if err != nil {
			return none, err
		}
		defer b.Close()
		if b.Size > providerdocs.DefaultLimits.MaxArchiveBytes {
			return none, registry.Errorf(registry.TooLarge, "the documentation archive is too large")
		}
		body, err := io.ReadAll(io.LimitReader(b.Content, b.Size))
		if err != nil {
			return none, registry.Wrap(registry.Unavailable, err, "reading the documentation archive")
		}
		d, err := providerdocs.Parse(bytes.NewReader(body), int64(len(body)))
		if err != nil {
			return none, err
		}
		return respcache.Rendered[*providerdocs.Docs]{Value: d, Size: int64(docsBytes(d))}, nil
	}
}

// docsBytes is what a parsed archive is accounted in the cache.
func docsBytes(d *providerdocs.Docs) int {
	n := 0
	for _, p := range d.Pages {
		n += len(p.Markdown) + len(p.Title) + len(p.Description) + 256
	}
	return n
}

// docsBase is the address of a provider version's documentation pages.
func docsBase(ns, typ, version string) string {
	return "/providers/" + ns + "/" + typ + "/" + version + "/docs/"
}

// docsNav returns the navigation of pv's documentation, nil when it has
// none.
func (s *Service) docsNav(ctx context.Context, pv registry.ProviderVersion) (*docsNav, error) {
	if pv.DocsDigest == "" {
		return nil, nil
	}
	d, err := s.docs.get(ctx, pv.DocsDigest)
	if err != nil {
		return nil, err
	}
	base := docsBase(pv.Namespace, pv.Type, pv.Version)
	nav := &docsNav{}
	for _, cat := range providerdocs.Categories {
		if cat == providerdocs.CategoryOverview {
			continue
		}
		g := navGroup{Title: categoryTitles[cat]}
		for _, p := range d.Pages {
			if p.Category == cat {
				g.Pages = append(g.Pages, navLink{Title: shortTitle(pv.Type, p), Full: p.Title, URL: base + cat + "/" + p.Slug})
			}
		}
		if len(g.Pages) > 0 {
			nav.Groups = append(nav.Groups, g)
		}
	}
	if p, ok := d.Page(providerdocs.CategoryOverview, "index"); ok {
		nav.Overview = renderMarkdown(p.Markdown, docsLinks(pv, p), "", "the overview").HTML
	}
	return nav, nil
}

// docsLinks rewrites the relative links of page p of pv's documentation:
// a link to another page of the tree (../resources/widget.md,
// widget.html.markdown, the legacy /docs/providers/<type>/r/widget.html)
// leads to that page here; any other relative link, and every relative
// image (Trove keeps only the Markdown of a docs tree), is dropped.
func docsLinks(pv registry.ProviderVersion, p providerdocs.Page) func(string) string {
	dir := "docs/" + p.Category
	if p.Category == providerdocs.CategoryOverview {
		dir = "docs"
	}
	base := docsBase(pv.Namespace, pv.Type, pv.Version)
	return func(dest string) string {
		u, err := url.Parse(dest)
		if err != nil || u.Scheme != "" || u.Host != "" {
			return ""
		}
		target := u.Path
		if strings.HasPrefix(target, "/docs/providers/") { // the legacy website's absolute links
			parts := strings.Split(strings.TrimPrefix(target, "/docs/providers/"), "/")
			target = "docs/" + strings.Join(parts[1:], "/")
		} else if !strings.HasPrefix(target, "/") {
			target = path.Join(dir, target)
		} else {
			return ""
		}
		rest, ok := strings.CutPrefix(target, "docs/")
		if !ok {
			if target == "docs" {
				rest = "index"
			} else {
				return ""
			}
		}
		fragment := ""
		if u.Fragment != "" {
			fragment = "#h-" + u.Fragment
		}
		cat, name, found := strings.Cut(rest, "/")
		if !found {
			cat, name = providerdocs.CategoryOverview, rest
		}
		switch cat {
		case "r":
			cat = providerdocs.CategoryResources
		case "d":
			cat = providerdocs.CategoryDataSources
		}
		for _, ext := range []string{".html.markdown", ".html.md", ".markdown", ".md", ".html"} {
			if n, ok := strings.CutSuffix(name, ext); ok {
				name = n
				break
			}
		}
		if cat == providerdocs.CategoryOverview {
			if name != "index" && name != "" {
				return ""
			}
			return "/providers/" + pv.Namespace + "/" + pv.Type + "/" + pv.Version + fragment
		}
		if _, known := categoryTitles[cat]; !known || name == "" || strings.Contains(name, "/") {
			return ""
		}
		return base + cat + "/" + url.PathEscape(name) + fragment
	}
}

// providerDocPage serves one page of a provider version's documentation.
func (s *Service) providerDocPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	ns, err := s.canRead(r.Context(), v, r.PathValue("namespace"))
	if err != nil {
		return err
	}
	typ, err := registry.ParseProviderType(r.PathValue("type"))
	if err != nil {
		return errNotFound
	}
	version, category, slug := r.PathValue("version"), r.PathValue("category"), r.PathValue("slug")
	if _, ok := categoryTitles[category]; !ok || len(slug) > providerdocs.MaxSlugLength || version == "" {
		return errNotFound
	}
	key := "doc\x00" + ns + "\x00" + typ + "\x00" + version + "\x00" + category + "\x00" + slug
	path := r.URL.Path
	return s.cached(w, r, v, key, func(ctx context.Context) (string, string, any, error) {
		d, err := s.providerData(ctx, ns, typ, version)
		if err != nil {
			return "", "", nil, err
		}
		if d.Docs == nil {
			return "", "", nil, errNotFound
		}
		pv, err := s.opt.Index.GetProviderVersion(ctx, ns, typ, d.Version)
		if err != nil {
			return "", "", nil, err
		}
		docs, err := s.docs.get(ctx, pv.DocsDigest)
		if err != nil {
			return "", "", nil, err
		}
		p, ok := docs.Page(category, slug)
		if !ok {
			return "", "", nil, errNotFound
		}
		md := renderMarkdown(p.Markdown, docsLinks(pv, p), "", "the page")
		d.Doc = &docPage{Title: p.Title, Category: categoryTitles[category], Subcategory: p.Subcategory,
			Description: p.Description, HTML: md.HTML, Truncated: md.Truncated, HasTitle: md.Title != ""}
		d.Docs = d.Docs.withCurrent(path)
		return p.Title + " · " + ns + "/" + typ + " " + d.Version, "provider", d, nil
	})
}
