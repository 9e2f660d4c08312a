// Package providerdocs owns the documentation of provider versions: the
// tfplugindocs tree (docs/index.md, docs/resources/*.md, ...) or the
// legacy website/docs tree, packed into a docs archive (Pack), and read
// back from an untrusted archive into pages (Parse) within Limits. It is
// pure logic: no HTTP, no storage.
package providerdocs

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"trove.dev/trove/internal/registry"
)

// The categories of pages, in the order Docs lists them.
const (
	CategoryOverview           = "overview"
	CategoryResources          = "resources"
	CategoryDataSources        = "data-sources"
	CategoryEphemeralResources = "ephemeral-resources"
	CategoryFunctions          = "functions"
	CategoryGuides             = "guides"
)

// Categories are the page categories in the order Docs lists them.
var Categories = []string{
	CategoryOverview, CategoryResources, CategoryDataSources, CategoryEphemeralResources,
	CategoryFunctions, CategoryGuides,
}

// dirCategories maps the directories of a docs tree to their category:
// tfplugindocs names, then the legacy website/docs ones (r, d).
var dirCategories = map[string]string{
	"resources":           CategoryResources,
	"r":                   CategoryResources,
	"data-sources":        CategoryDataSources,
	"d":                   CategoryDataSources,
	"ephemeral-resources": CategoryEphemeralResources,
	"functions":           CategoryFunctions,
	"guides":              CategoryGuides,
}

// markdownExts are the file name endings of Markdown pages, longest
// first: the slug is the name without the first that matches.
var markdownExts = []string{".html.markdown", ".html.md", ".markdown", ".md"}

// overviewSlug is the slug of the overview page (index.md).
const overviewSlug = "index"

// Page is one page of a provider's documentation.
type Page struct {
	Category    string // "overview" (index), "resources", "data-sources", "ephemeral-resources", "functions", "guides"
	Slug        string // file name without extension(s), e.g. "widget"; "index" for the overview
	Title       string // front matter page_title, else a name derived from the slug
	Subcategory string // front matter subcategory
	Description string // front matter description
	Markdown    []byte // the page body without its front matter
}

// Docs is a provider version's documentation.
type Docs struct {
	// Pages are ordered: the overview first, then by category in the
	// order of Categories, then by slug.
	Pages []Page
}

// Page returns the page of category and slug, and whether there is one.
func (d *Docs) Page(category, slug string) (Page, bool) {
	for _, p := range d.Pages {
		if p.Category == category && p.Slug == slug {
			return p, true
		}
	}
	return Page{}, false
}

// sortPages orders pages as Docs documents it.
func sortPages(pages []Page) {
	slices.SortFunc(pages, func(a, b Page) int {
		return cmp.Or(cmp.Compare(slices.Index(Categories, a.Category), slices.Index(Categories, b.Category)),
			strings.Compare(a.Slug, b.Slug))
	})
}

// docsRoots are the directories of an archive that may hold the docs
// tree, in order of preference; "" is an archive of the docs directory
// itself.
var docsRoots = []string{"docs/", "website/docs/", ""}

// chooseRoot returns the docs root of an archive from the names of its
// Markdown files: the first of docsRoots under which one of them lies.
func chooseRoot(names []string) string {
	for _, root := range docsRoots[:len(docsRoots)-1] {
		for _, n := range names {
			if strings.HasPrefix(n, root) && isMarkdown(n) {
				return root
			}
		}
	}
	return ""
}

// isMarkdown reports whether name ends in one of markdownExts.
func isMarkdown(name string) bool {
	return slices.ContainsFunc(markdownExts, func(ext string) bool { return strings.HasSuffix(name, ext) })
}

// classify returns the category and slug of the Markdown file rel (its
// path below the docs root), and ok false for a file that is no page (a
// Markdown file elsewhere in the tree, which is ignored). A page whose
// slug breaks the grammar is an Invalid error naming the file.
func classify(name, rel string) (category, slug string, ok bool, err error) {
	dir, file := path.Split(rel)
	base := file
	for _, ext := range markdownExts {
		if s, found := strings.CutSuffix(file, ext); found {
			base = s
			break
		}
	}
	switch dir {
	case "":
		if base != overviewSlug {
			return "", "", false, nil
		}
		return CategoryOverview, overviewSlug, true, nil
	default:
		category, ok = dirCategories[strings.TrimSuffix(dir, "/")]
		if !ok {
			return "", "", false, nil
		}
	}
	if err := checkSlug(name, base); err != nil {
		return "", "", false, err
	}
	return category, base, true, nil
}

// MaxSlugLength bounds a page's slug.
const MaxSlugLength = 128

// checkSlug checks the slug of a page: 1 to MaxSlugLength characters of
// [a-z0-9_-].
func checkSlug(name, slug string) error {
	if slug == "" || len(slug) > MaxSlugLength {
		return registry.Errorf(registry.Invalid, "documentation page %q: its name must be 1 to %d characters before the extension", name, MaxSlugLength)
	}
	for _, c := range []byte(slug) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return registry.Errorf(registry.Invalid, "documentation page %q: its name %q may hold only lower-case letters, digits, \"_\" and \"-\"; rename the file", name, slug)
		}
	}
	return nil
}

// Bounds of the front matter fields of a page.
const (
	MaxTitleLength       = 512
	MaxDescriptionLength = 16 << 10
)

// frontMatter is what a page's front matter may set.
type frontMatter struct {
	title, subcategory, description string
}

var utf8BOM = []byte("\xef\xbb\xbf")

// parsePage turns the content of the page file name into a Page of
// category and slug: valid UTF-8, with optional YAML front matter
// between two "---" lines at its start.
func parsePage(name, category, slug string, content []byte) (Page, error) {
	if !utf8.Valid(content) {
		return Page{}, registry.Errorf(registry.Invalid, "documentation page %q is not valid UTF-8: save it as UTF-8 text", name)
	}
	content = bytes.TrimPrefix(content, utf8BOM)
	p := Page{Category: category, Slug: slug, Markdown: content}
	fm, body, has, err := splitFrontMatter(name, content)
	if err != nil {
		return Page{}, err
	}
	if has {
		m, err := parseFrontMatter(name, fm)
		if err != nil {
			return Page{}, err
		}
		p.Title, p.Subcategory, p.Description, p.Markdown = m.title, m.subcategory, m.description, body
	}
	if p.Title == "" {
		p.Title = derivedTitle(category, slug)
	}
	if p.Markdown == nil {
		p.Markdown = []byte{}
	}
	return p, nil
}

// splitFrontMatter separates the front matter of content, if its first
// line is "---", from the body after the next "---" line.
func splitFrontMatter(name string, content []byte) (fm, body []byte, has bool, err error) {
	first, rest, found := bytes.Cut(content, []byte("\n"))
	if string(bytes.TrimRight(first, " \t\r")) != "---" || !found {
		return nil, content, false, nil
	}
	for off := 0; off <= len(rest); {
		line, _, more := bytes.Cut(rest[off:], []byte("\n"))
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			end := off + len(line)
			if more {
				end++
			}
			return rest[:off], rest[end:], true, nil
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return nil, nil, false, registry.Errorf(registry.Invalid, "documentation page %q starts front matter with \"---\" but never closes it with a \"---\" line", name)
}

// parseFrontMatter reads the page_title, subcategory and description of
// YAML front matter. Other keys are ignored; those three must be strings
// (scalars). The YAML is read as a node tree: aliases are never expanded.
func parseFrontMatter(name string, fm []byte) (frontMatter, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(fm, &doc); err != nil {
		return frontMatter{}, registry.Errorf(registry.Invalid, "documentation page %q: its front matter is not valid YAML (%s)", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var m frontMatter
	if len(doc.Content) == 0 {
		return m, nil // empty front matter
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return m, registry.Errorf(registry.Invalid, "documentation page %q: its front matter must be a YAML mapping of keys such as page_title, subcategory and description", name)
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		var dst *string
		limit, oneLine := MaxTitleLength, true
		switch k.Value {
		case "page_title":
			dst = &m.title
		case "subcategory":
			dst = &m.subcategory
		case "description":
			dst, limit, oneLine = &m.description, MaxDescriptionLength, false
		default:
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return m, registry.Errorf(registry.Invalid, "documentation page %q: front matter field %s must be a string", name, k.Value)
		}
		val := strings.TrimSpace(v.Value)
		if err := checkField(name, k.Value, val, limit, oneLine); err != nil {
			return m, err
		}
		*dst = val
	}
	return m, nil
}

// checkField bounds a front matter value and refuses control characters
// (but line breaks and tabs in a multi-line description).
func checkField(name, field, val string, limit int, oneLine bool) error {
	if len(val) > limit {
		return registry.Errorf(registry.Invalid, "documentation page %q: front matter field %s is longer than %d bytes", name, field, limit)
	}
	bad := func(r rune) bool {
		if !oneLine && (r == '\n' || r == '\r' || r == '\t') {
			return false
		}
		return registry.IsControl(r)
	}
	if i := strings.IndexFunc(val, bad); i >= 0 {
		r, _ := utf8.DecodeRuneInString(val[i:])
		return registry.Errorf(registry.Invalid, "documentation page %q: front matter field %s contains the control character %U", name, field, r)
	}
	return nil
}

// derivedTitle names a page without a page_title: "Overview", a guide's
// slug as words, the slug of every other page (a resource's or a
// function's name).
func derivedTitle(category, slug string) string {
	switch category {
	case CategoryOverview:
		return "Overview"
	case CategoryGuides:
		words := strings.Join(strings.FieldsFunc(slug, func(r rune) bool { return r == '-' || r == '_' }), " ")
		if words == "" {
			return slug
		}
		return strings.ToUpper(words[:1]) + words[1:]
	}
	return slug
}

// pageKey identifies a page within Docs.
func pageKey(category, slug string) string { return category + "/" + slug }

// collector gathers the pages of an archive in a first pass that notes
// names only, then takes the content of those that are pages.
type collector struct {
	root  string
	pages []Page
	seen  map[string]string // pageKey -> archive name
}

// want returns the category and slug of the archive file name, and
// whether it is a page.
func (c *collector) want(name string) (category, slug string, ok bool, err error) {
	rel, under := strings.CutPrefix(name, c.root)
	if !under || !isMarkdown(name) {
		return "", "", false, nil
	}
	category, slug, ok, err = classify(name, rel)
	if err != nil || !ok {
		return "", "", false, err
	}
	key := pageKey(category, slug)
	if other, dup := c.seen[key]; dup {
		return "", "", false, registry.Errorf(registry.Invalid, "the archive holds two %s pages named %q: %q and %q; keep one of them", category, slug, other, name)
	}
	c.seen[key] = name
	return category, slug, true, nil
}

// add parses and keeps one page.
func (c *collector) add(name, category, slug string, content []byte) error {
	p, err := parsePage(name, category, slug, content)
	if err != nil {
		return err
	}
	c.pages = append(c.pages, p)
	return nil
}

// noPages is the refusal of an archive without a page.
func noPages() error {
	return registry.Errorf(registry.Invalid, "the archive holds no documentation pages: expected docs/index.md, docs/resources/*.md, docs/data-sources/*.md, "+
		"docs/ephemeral-resources/*.md, docs/functions/*.md or docs/guides/*.md (tfplugindocs), or website/docs/index.html.markdown, "+
		"website/docs/r/*.html.markdown, website/docs/d/*.html.markdown (legacy); pack them with: trove provider docs upload NAMESPACE/TYPE VERSION DIR")
}

// Parse reads a docs archive (zip or tar.gz, detected by content) and
// returns its pages, within DefaultLimits. See Limits.Parse.
func Parse(r io.ReaderAt, size int64) (*Docs, error) {
	return DefaultLimits.Parse(r, size)
}

// String describes a page for logs and messages.
func (p Page) String() string { return fmt.Sprintf("%s/%s", p.Category, p.Slug) }
