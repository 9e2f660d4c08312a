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
//   - Ids: only headings and a have ids: a heading's GitHub-style slug, or the id or
//     name of an a (terraform-docs writes its anchors as <a name="input_x">), made of
//     letters, digits, "_", "-" and ".". Every id starts with "h-" (HeadingIDPrefix),
//     then Options.IDScope and a colon when set. A hyphen cannot appear in a JavaScript
//     identifier, so no id can clobber a DOM global such as window.location or
//     document.cookie, and no id can take one of the page's own (which never start
//     with "h-"). The first of equal ids wins; the others are dropped. Fragment links
//     ("#usage") are prefixed the same way ("#h-usage") so that they still reach their
//     target: a terraform-docs README's table of contents and input links all resolve.
//   - Headings move down Options.HeadingOffset levels (at most to h6), raw HTML's too.
//   - Scrolling: every table is wrapped in <div class="table-scroll" role="region"
//     tabindex="0" aria-label="Table N of LABEL">, and every pre gets tabindex="0", so
//     that keyboard users can scroll them.
//   - Notice boxes: GitHub alerts ("> [!NOTE]", TIP, IMPORTANT, WARNING, CAUTION) and
//     tfplugindocs notes (paragraphs starting "-> ", "~> ", "!> ") become <div
//     class="alert alert-KIND" role="note"> (see alerts.go). Only the renderer can make
//     such a div: every div of raw HTML loses its attributes.
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
	"crypto/rand"
	"encoding/hex"
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
	// HeadingOffset moves every heading down that many levels (at most to h6), raw
	// HTML headings included: 1 puts the document's "#" headings under the page's own
	// h1. Document.Headings keeps the levels as written.
	HeadingOffset int
	// IDScope, when set, keeps the ids of several documents on one page apart: every
	// id becomes HeadingIDPrefix + IDScope + ":" + id, and the document's fragment
	// links follow. It is reduced to lower-case letters, digits and hyphens (at most 64).
	IDScope string
	// Label names the document in the labels of its scrollable table regions ("Table 2
	// of <Label>"); "" means "the document".
	Label string
}

// Heading is a heading of the rendered document, for a table of contents.
type Heading struct {
	// Level is 1 to 3.
	Level int
	// ID is the heading's id attribute in Document.HTML (with HeadingIDPrefix and
	// Options.IDScope), so "#"+ID links to it (unless an earlier element of the
	// document took the same id, see the package comment).
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
	nonce := newNonce()
	pc.Set(nonceKey, nonce)
	root := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	if truncated, _ := pc.Get(tableTruncatedKey).(bool); truncated {
		doc.Truncated = true
	}
	limitLinks(root, len(src)+linkBudgetSlack)
	prefix := idPrefix(opt.IDScope)
	doc.Title, doc.Headings = headings(root, src, prefix)

	var buf bytes.Buffer
	buf.Grow(len(src) + len(src)/2)
	if err := md.Renderer().Render(&buf, src, root); err != nil {
		// goldmark's HTML renderer fails only when its writer does; a bytes.Buffer does
		// not. Render what was written rather than nothing.
		_ = err
	}
	offset := min(opt.HeadingOffset, 5)
	if offset < 0 {
		offset = 0
	}
	label := opt.Label
	if label == "" {
		label = "the document"
	}
	out := sanitize(postProcess(buf.Bytes(), post{link: opt.Link, prefix: prefix, offset: offset,
		label: label, nonce: nonce}))
	doc.HTML = template.HTML(out)
	return doc
}

// idPrefix is what every id of a document starts with: HeadingIDPrefix, and the
// scope (Options.IDScope) with a colon, which no id written in Markdown contains.
func idPrefix(scope string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(scope) {
		if b.Len() >= 64 {
			break
		}
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return HeadingIDPrefix
	}
	return HeadingIDPrefix + b.String() + ":"
}

// newNonce returns a random string that marks the elements the renderer writes for
// the post-processing pass, which raw HTML cannot guess.
func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(alerts{}, 500))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(alertRenderer{}, 500))),
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

// headings gives every heading of the document a unique id (see the package comment),
// written without prefix (postProcess adds it to every id), and returns the title and
// the headings of levels 1-3, whose IDs have prefix.
func headings(root ast.Node, src []byte, prefix string) (string, []Heading) {
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
			hs = append(hs, Heading{Level: h.Level, ID: prefix + id, Text: txt})
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
