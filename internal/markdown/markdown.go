// Package markdown turns hostile, user-supplied Markdown (module READMEs, provider
// documentation in tfplugindocs' docs/ trees) into HTML that is safe to put into a page
// as is. It owns the Markdown dialect Trove renders, the sanitization policy, the limits
// that keep a pathological document cheap, and the splitting of tfplugindocs front matter.
//
// # Rendering
//
// Render parses GitHub-flavoured Markdown with goldmark (tables, strikethrough,
// autolinks, task lists). Raw HTML in the Markdown is passed through by goldmark only
// because everything goldmark writes is then filtered twice: first every link and image
// URL is classified (and rewritten by Options.Link), then bluemonday applies the policy
// below to the whole output. The policy is the last word: nothing Render returns has not
// passed it.
//
// # Sanitization policy
//
//   - Elements: text structure (p, br, hr, h1-h6, blockquote, pre, code, lists, dl,
//     details/summary, div, span), inline formatting (em, strong, del, s, ins, sub, sup,
//     kbd, abbr, mark, ...), tables, a and img. Nothing else survives: no script, style,
//     iframe, object, embed, svg, math, form, button, textarea, select, base, meta, link.
//     The content of script, style and other non-text elements is dropped; the text of
//     other dropped elements stays, escaped.
//   - Attributes: no event handlers, no style, no name; class only as "language-*" on
//     code (fenced code blocks); align on table cells; start on ol; alt, title, width and
//     height on img; title on a and abbr; checked and disabled on the one input that
//     survives, a disabled checkbox (task lists: every input is rewritten into one, any
//     other type is dropped).
//   - Links: href is kept when it is absolute http, https or mailto, or a relative URL
//     (rewritten by Options.Link when set); every other scheme (javascript:, vbscript:,
//     data:, file:, ...) in any case or entity encoding is dropped, as are protocol
//     relative URLs ("//host") and URLs with control characters. A link without href
//     loses its tag and keeps its text. Every link gets rel="nofollow noopener noreferrer".
//   - Images: src must be absolute http or https, or a path starting with a single "/"
//     (what Options.Link made of a relative URL). data: images, relative images without
//     a rewriter and anything else are dropped, and the image is replaced by its alt text.
//   - Ids: only headings have ids, and every id starts with "h-" (HeadingIDPrefix). A
//     hyphen cannot appear in a JavaScript identifier, so no id can clobber a DOM global
//     such as window.location or document.cookie. Fragment links ("#usage") are
//     prefixed the same way ("#h-usage") so that they still reach their heading.
//
// # Bounds
//
// Render's cost is linear in its input; these limits make it so for inputs goldmark
// would otherwise handle quadratically or worse:
//
//   - Input: at most Options.MaxBytes (DefaultMaxBytes, 1 MiB), cut at a line boundary
//     (Document.Truncated). NUL bytes and invalid UTF-8 become U+FFFD.
//   - Nesting: a line opens at most MaxNesting (32) block quotes and list items; a
//     marker beyond that, or after more than MaxIndent (64) columns of indentation, is
//     escaped and rendered as text. So 10,000 nested lists or quotes render as 32 levels.
//     (Lines are not parsed first: in a code block such a backslash shows.)
//   - Inline markup: a paragraph, heading or table cell starts at most MaxInlineMarkers
//     (128) inline constructs (characters that may open emphasis, links, images, code
//     spans, raw HTML); from the next one on, the rest of each of its lines is plain text.
//   - Tables: at most MaxTableColumns (128) columns (a wider "table" stays a paragraph)
//     and MaxTableCells (50,000) cells in a document, short rows padded included; the
//     rows of a table beyond that are dropped (Document.Truncated).
//   - Links: the link and image destinations and titles of a document may together be at
//     most as long as its input plus 64 KiB, so a long reference definition cannot be
//     multiplied by a million uses; links beyond that render as their text.
//   - Headings: Document.Headings holds at most MaxHeadings (200); an id is at most 100
//     bytes, a heading's Text at most 256.
//
// With these bounds the HTML is at most a small multiple of the input (the tests hold
// it to 32x) and a 1 MiB document of any shape renders in about a second or less of
// one core's time; see TestRenderBounds and BenchmarkRender.
package markdown

import (
	"bytes"
	"html/template"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The bounds Render applies; the package comment explains each.
const (
	DefaultMaxBytes  = 1 << 20
	MaxNesting       = 32
	MaxIndent        = 64
	MaxInlineMarkers = 128
	MaxTableColumns  = 128
	MaxTableCells    = 50_000
	MaxHeadings      = 200
	// HeadingIDPrefix starts every id Render writes.
	HeadingIDPrefix = "h-"

	maxIDBytes          = 100
	maxHeadingTextBytes = 256
	linkBudgetSlack     = 64 << 10
)

// Options tunes Render.
type Options struct {
	// Link, if set, rewrites every link and image destination that is not absolute
	// (relative paths like "../resources/foo.md"; fragment-only links like "#anchor" are
	// not passed to it but become "#h-anchor", the id of that heading). It receives the destination as written in the HTML (percent
	// encoded, entities decoded); returning "" drops the link (its text stays) or the
	// image (its alt text stays). What it returns is checked like any URL: an image must
	// end up absolute http(s) or a path starting with "/". Absolute http(s) and mailto
	// links are kept; every other scheme (javascript:, data:, vbscript:, file:, ...) is
	// dropped. Without Link, relative links are kept as written and relative images are
	// dropped.
	Link func(dest string) string
	// MaxBytes bounds the input; longer input is cut at a line boundary and
	// Document.Truncated is set (0 means DefaultMaxBytes = 1 MiB).
	MaxBytes int
}

// Heading is a heading of the rendered document, for a table of contents.
type Heading struct {
	// Level is 1 to 3.
	Level int
	// ID is the heading's id attribute in Document.HTML (with HeadingIDPrefix), so
	// "#"+ID links to it.
	ID string
	// Text is the heading's plain text.
	Text string
}

// Document is rendered, sanitized HTML and what the UI needs around it.
type Document struct {
	// HTML is safe to put into a page as is.
	HTML template.HTML
	// Title is the text of the first level-1 heading, "" if none.
	Title string
	// Headings are the headings of levels 1-3, in order, at most MaxHeadings.
	Headings []Heading
	// Truncated reports that part of the input was not rendered: it was longer than
	// MaxBytes, or a table went over MaxTableCells.
	Truncated bool
}

// Render renders GitHub-flavoured Markdown (tables, strikethrough, autolinks, task lists)
// as sanitized HTML. It never fails: bad input renders as best it can. It is safe for
// concurrent use.
func Render(src []byte, opt Options) Document {
	var doc Document
	max := opt.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if len(src) > max {
		src = cut(src, max)
		doc.Truncated = true
	}
	src = prepare(src)

	md := engine()
	pc := parser.NewContext()
	root := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	if truncated, _ := pc.Get(tableTruncatedKey).(bool); truncated {
		doc.Truncated = true
	}
	limitLinks(root, len(src)+linkBudgetSlack)
	doc.Title, doc.Headings = headings(root, src)

	var buf bytes.Buffer
	buf.Grow(len(src) + len(src)/2)
	if err := md.Renderer().Render(&buf, src, root); err != nil {
		// goldmark's HTML renderer fails only when its writer does; a bytes.Buffer does
		// not. Render what was written rather than nothing.
		_ = err
	}
	out := sanitize(rewriteURLs(buf.Bytes(), opt.Link))
	doc.HTML = template.HTML(out)
	return doc
}

// cut returns src cut to at most max bytes, at the end of its last whole line, or, when
// the first line is longer than max, at the last whole UTF-8 character.
func cut(src []byte, max int) []byte {
	if i := bytes.LastIndexByte(src[:max], '\n'); i >= 0 {
		return src[:i+1]
	}
	end := max
	for end > 0 && end > max-utf8.UTFMax && !utf8.RuneStart(src[end]) {
		end--
	}
	return src[:end]
}

// engine is the one goldmark configuration, built once: goldmark.Markdown is safe for
// concurrent use, and everything per document lives in the parser.Context.
var engine = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(
			extension.Linkify,
			extension.Strikethrough,
			extension.TaskList,
			boundedTables{},
		),
		goldmark.WithParserOptions(
			parser.WithInlineParsers(util.Prioritized(inlineBudget{}, -1)),
		),
		goldmark.WithRendererOptions(
			html.WithUnsafe(), // raw HTML goes through sanitize; see the package comment
		),
	)
})

// boundedTables is goldmark's GFM table extension with the table limits of the package
// comment: its paragraph transformer is wrapped by boundedTableTransformer and cell
// alignment is written as an align attribute (the policy allows no style).
type boundedTables struct{}

func (boundedTables) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(
		parser.WithParagraphTransformers(
			util.Prioritized(boundedTableTransformer{extension.NewTableParagraphTransformer()}, 200),
		),
		parser.WithASTTransformers(
			util.Prioritized(extension.NewTableASTTransformer(), 0),
		),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(
		util.Prioritized(extension.NewTableHTMLRenderer(
			extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)), 500),
	))
}

// headings gives every heading of the document a unique id (see the package comment)
// and returns the title and the headings of levels 1-3.
func headings(root ast.Node, src []byte) (string, []Heading) {
	var title string
	var hs []Heading
	ids := newHeadingIDs()
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		txt := collapseSpace(plainText(h, src))
		id := ids.generate(txt)
		h.SetAttributeString("id", []byte(id))
		txt = truncateUTF8(txt, maxHeadingTextBytes)
		if h.Level == 1 && title == "" {
			title = txt
		}
		if h.Level <= 3 && len(hs) < MaxHeadings {
			hs = append(hs, Heading{Level: h.Level, ID: id, Text: txt})
		}
		return ast.WalkSkipChildren, nil
	})
	return title, hs
}

// plainText is the text of n's inline content, without markup or raw HTML.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
