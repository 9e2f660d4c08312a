package markdown

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Notice boxes: GitHub's alerts (a block quote whose first line is "[!NOTE]", "[!TIP]",
// "[!IMPORTANT]", "[!WARNING]" or "[!CAUTION]") and tfplugindocs' notes (a paragraph
// that starts with "-> ", "~> " or "!> ") are rendered as
//
//	<div class="alert alert-KIND" role="note">...</div>
//
// with KIND one of note, tip, important, warning, caution (tfplugindocs: "->" is a
// note, "~>" a warning, "!>" a caution). An alert starts with its title in bold
// ("Note", "Warning", ...). The div is written by the renderer with a per-document
// nonce and rebuilt by the post-processing pass: raw HTML cannot make one, since every
// other div loses its attributes there.

// alertKinds are the kinds of notice box and their titles.
var alertKinds = map[string]string{
	"note": "Note", "tip": "Tip", "important": "Important", "warning": "Warning", "caution": "Caution",
}

// alertMarker matches the first line of a GitHub alert.
var alertMarker = regexp.MustCompile(`^(?i)\[!(note|tip|important|warning|caution)\]$`)

// kindAlert is the node kind of a notice box.
var kindAlert = ast.NewNodeKind("TroveAlert")

// alertNode is a notice box: its children are the blocks of the alert or note.
type alertNode struct {
	ast.BaseBlock
	kind  string // a key of alertKinds
	title bool   // write the kind's title first (GitHub alerts)
	nonce string
}

func (n *alertNode) Kind() ast.NodeKind { return kindAlert }

func (n *alertNode) Dump(src []byte, level int) { ast.DumpHelper(n, src, level, nil, nil) }

// nonceKey holds the document's nonce in the parser context.
var nonceKey = parser.NewContextKey()

// alerts finds the notice boxes of a document.
type alerts struct{}

func (alerts) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	src := reader.Source()
	nonce, _ := pc.Get(nonceKey).(string)
	var quotes []*ast.Blockquote
	var notes []*ast.Paragraph
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Blockquote:
			quotes = append(quotes, n)
		case *ast.Paragraph:
			notes = append(notes, n)
		}
		return ast.WalkContinue, nil
	})
	for _, q := range quotes {
		p, ok := q.FirstChild().(*ast.Paragraph)
		if !ok || p.Lines().Len() == 0 {
			continue
		}
		first := p.Lines().At(0)
		m := alertMarker.FindSubmatch(bytes.TrimSpace(first.Value(src)))
		if m == nil {
			continue
		}
		// Drop the inline nodes of the marker's line.
		for c := p.FirstChild(); c != nil; {
			next := c.NextSibling()
			if start, ok := inlineStart(c); !ok || start >= first.Stop {
				break
			}
			p.RemoveChild(p, c)
			c = next
		}
		if p.FirstChild() == nil {
			q.RemoveChild(q, p)
		}
		a := &alertNode{kind: strings.ToLower(string(m[1])), title: true, nonce: nonce}
		for c := q.FirstChild(); c != nil; {
			next := c.NextSibling()
			a.AppendChild(a, c)
			c = next
		}
		q.Parent().ReplaceChild(q.Parent(), q, a)
	}
	for _, p := range notes {
		if p.Parent() == nil || p.Lines().Len() == 0 {
			continue
		}
		first := p.Lines().At(0)
		line := first.Value(src)
		trimmed := bytes.TrimLeft(line, " \t")
		if len(trimmed) < 2 || trimmed[1] != '>' || len(trimmed) > 2 && trimmed[2] != ' ' && trimmed[2] != '\t' {
			continue
		}
		var kind string
		switch trimmed[0] {
		case '-':
			kind = "note"
		case '~':
			kind = "warning"
		case '!':
			kind = "caution"
		default:
			continue
		}
		markerStart := first.Start + len(line) - len(trimmed)
		if !dropPrefix(p, src, markerStart, markerStart+2) {
			continue
		}
		a := &alertNode{kind: kind, nonce: nonce}
		parent := p.Parent()
		parent.ReplaceChild(parent, p, a)
		a.AppendChild(a, p)
	}
}

// inlineStart is the source offset where inline node n starts.
func inlineStart(n ast.Node) (int, bool) {
	for ; n != nil; n = n.FirstChild() {
		if t, ok := n.(*ast.Text); ok {
			return t.Segment.Start, true
		}
	}
	return 0, false
}

// dropPrefix removes the source bytes [from, to) and the blanks after them from the
// leading text nodes of paragraph p; false if they are not plain text.
func dropPrefix(p *ast.Paragraph, src []byte, from, to int) bool {
	for c := p.FirstChild(); c != nil; {
		t, ok := c.(*ast.Text)
		switch {
		case !ok || t.Segment.Start < from:
			return false
		case t.Segment.Start >= to:
			return true
		}
		next := c.NextSibling()
		if t.Segment.Stop <= to {
			p.RemoveChild(p, c)
			if t.SoftLineBreak() || t.HardLineBreak() {
				return true
			}
			c = next
			continue
		}
		seg := t.Segment.WithStart(to)
		t.Segment = seg.TrimLeftSpace(src)
		return true
	}
	return true
}

// alertRenderer writes notice boxes (see the comment at the top of this file).
type alertRenderer struct{}

func (alertRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindAlert, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		a := n.(*alertNode)
		if entering {
			_, _ = w.WriteString(`<div data-trove-alert="` + a.nonce + ` ` + a.kind + `">` + "\n")
			if a.title {
				_, _ = w.WriteString("<p><strong>" + alertKinds[a.kind] + "</strong></p>\n")
			}
		} else {
			_, _ = w.WriteString("</div>\n")
		}
		return ast.WalkContinue, nil
	})
}
