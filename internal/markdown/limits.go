package markdown

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// prepare makes src valid UTF-8 without NUL bytes and escapes the container markers
// beyond MaxNesting and MaxIndent (see the package comment). It returns src itself when
// nothing needs changing.
func prepare(src []byte) []byte {
	if !utf8.Valid(src) {
		src = bytes.ToValidUTF8(src, []byte("\uFFFD"))
	}
	if bytes.IndexByte(src, 0) >= 0 {
		src = bytes.ReplaceAll(src, []byte{0}, []byte("\uFFFD"))
	}
	return limitNesting(src)
}

// limitNesting puts a backslash before the first container marker of each line that
// would nest deeper than MaxNesting or start after more than MaxIndent columns, so that
// it and the rest of the line are text. goldmark's cost grows with the square of the
// nesting depth; this keeps the depth, and so the cost per line, bounded.
func limitNesting(src []byte) []byte {
	var out []byte // nil until the first change
	copied := 0
	for start := 0; start < len(src); {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if at := excessMarker(src[start:end]); at >= 0 {
			if out == nil {
				out = make([]byte, 0, len(src)+len(src)/64+16)
			}
			out = append(out, src[copied:start+at]...)
			out = append(out, '\\')
			copied = start + at
		}
		start = end + 1
	}
	if out == nil {
		return src
	}
	return append(out, src[copied:]...)
}

// excessMarker returns the offset at which a backslash escapes the first marker of line
// (block quote '>', bullet, or the delimiter of an ordered-list number) that is beyond
// the bounds, or -1.
func excessMarker(line []byte) int {
	depth, col := 0, 0
	for i := 0; i < len(line); {
		switch line[i] {
		case ' ':
			col++
			i++
			continue
		case '\t':
			col += 4 - col%4
			i++
			continue
		}
		n, esc := markerLen(line[i:])
		if n == 0 {
			return -1
		}
		if depth >= MaxNesting || col > MaxIndent {
			return i + esc
		}
		depth++
		col += n
		i += n
	}
	return -1
}

// markerLen returns the length of the container marker b starts with (0 if none) and
// the offset of the character a backslash must precede to make it text.
func markerLen(b []byte) (n, esc int) {
	followed := func(j int) bool {
		return j == len(b) || b[j] == ' ' || b[j] == '\t' || b[j] == '\r'
	}
	switch b[0] {
	case '>':
		return 1, 0
	case '-', '*', '+':
		if followed(1) {
			return 1, 0
		}
		return 0, 0
	}
	j := 0
	for j < len(b) && j < 9 && '0' <= b[j] && b[j] <= '9' {
		j++
	}
	if j == 0 || j == len(b) || (b[j] != '.' && b[j] != ')') || !followed(j+1) {
		return 0, 0
	}
	return j + 1, j
}

// inlineBudget is an inline parser that runs before goldmark's own for every character
// that may open an inline construct. It lets the first MaxInlineMarkers of a block
// through; from the next one on, the rest of each line is literal text. goldmark's
// emphasis, link and code span parsing is quadratic or worse in the number of such
// characters in one block.
type inlineBudget struct{}

var inlineBudgetKey = parser.NewContextKey()

type inlineCount struct {
	block ast.Node
	n     int
}

func (inlineBudget) Trigger() []byte {
	return []byte{'*', '_', '~', '[', ']', '!', '<', '`'}
}

func (inlineBudget) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	c, _ := pc.Get(inlineBudgetKey).(*inlineCount)
	if c == nil {
		c = &inlineCount{}
		pc.Set(inlineBudgetKey, c)
	}
	if c.block != parent {
		c.block, c.n = parent, 0
	}
	c.n++
	if c.n <= MaxInlineMarkers {
		return nil
	}
	// The rest of the line is text: one node, not one per character.
	line, seg := block.PeekLine()
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n-- // goldmark handles the line break itself
	}
	block.Advance(n)
	return ast.NewTextSegment(text.NewSegment(seg.Start, seg.Start+n))
}

var (
	tableCellsKey     = parser.NewContextKey()
	tableTruncatedKey = parser.NewContextKey()
)

// boundedTableTransformer applies MaxTableColumns and MaxTableCells before goldmark's
// table transformer turns a paragraph into a table: goldmark pads every row to the
// header's width, so a wide header over many one-character rows would otherwise make
// millions of cells out of a few kilobytes.
type boundedTableTransformer struct {
	inner parser.ParagraphTransformer
}

func (t boundedTableTransformer) Transform(p *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := p.Lines()
	src := reader.Source()
	delim, cols := -1, 0
	for i := 1; i < lines.Len(); i++ {
		line, prev := lines.At(i), lines.At(i-1)
		n := delimiterColumns(line.Value(src))
		if n == 0 || n != headerColumns(prev.Value(src)) {
			continue
		}
		if delim < 0 {
			delim = i
		}
		cols = max(cols, n)
	}
	if delim < 0 {
		return // no table
	}
	if cols > MaxTableColumns {
		return // stays a paragraph
	}
	used, _ := pc.Get(tableCellsKey).(int)
	rows := lines.Len() // an upper bound: the lines before the header are not rows
	if cols*rows > MaxTableCells-used {
		rows = (MaxTableCells - used) / cols
		if rows <= delim {
			return // not even the header fits: stays a paragraph
		}
		lines.SetSliced(0, rows)
		pc.Set(tableTruncatedKey, true)
	}
	pc.Set(tableCellsKey, used+cols*rows)
	t.inner.Transform(p, reader, pc)
}

// delimiterColumns returns the number of columns of a GFM table delimiter row, or 0 if
// line is not one.
func delimiterColumns(line []byte) int {
	dash := false
	for _, b := range line {
		switch b {
		case '-':
			dash = true
		case '|', ':', ' ', '\t', '\r', '\n':
		default:
			return 0
		}
	}
	if !dash {
		return 0
	}
	return len(cells(bytes.TrimSpace(line), false))
}

// headerColumns returns the number of cells of a table header row.
func headerColumns(line []byte) int {
	return len(cells(bytes.TrimSpace(line), true))
}

// cells splits a table row at its pipes (not the escaped ones when escapes is set),
// without the empty cells outside a leading and a trailing pipe.
func cells(line []byte, escapes bool) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (!escapes || i == 0 || line[i-1] != '\\') {
			out = append(out, line[start:i])
			start = i + 1
		}
	}
	out = append(out, line[start:])
	if len(out) > 0 && len(bytes.TrimSpace(out[0])) == 0 && len(line) > 0 && line[0] == '|' {
		out = out[1:]
	}
	if len(out) > 0 && len(bytes.TrimSpace(out[len(out)-1])) == 0 && len(line) > 0 && line[len(line)-1] == '|' {
		out = out[:len(out)-1]
	}
	return out
}

// limitLinks renders the links and images beyond a budget of destination and title
// bytes as their text, so that one long reference definition used a million times does
// not make a gigabyte of HTML.
func limitLinks(root ast.Node, budget int) {
	var over []ast.Node
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			budget -= len(l.Destination) + len(l.Title)
		case *ast.Image:
			budget -= len(l.Destination) + len(l.Title)
		default:
			return ast.WalkContinue, nil
		}
		if budget < 0 {
			over = append(over, n)
		}
		return ast.WalkContinue, nil
	})
	for _, n := range over {
		parent := n.Parent()
		if parent == nil {
			continue
		}
		for c := n.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, n, c)
			c = next
		}
		parent.RemoveChild(parent, n)
	}
}

// headingIDs gives headings unique ids (without prefix). Unlike goldmark's own, it
// finds the next free suffix in constant time, so that 100,000 headings with the same
// text stay linear.
type headingIDs struct {
	used map[string]bool
	next map[string]int
}

func newHeadingIDs() *headingIDs {
	return &headingIDs{used: map[string]bool{}, next: map[string]int{}}
}

// generate returns a new id for a heading with the given text.
func (s *headingIDs) generate(text string) string {
	base := slug(text)
	id := base
	if s.used[id] {
		n := s.next[base]
		for {
			n++
			id = base + "-" + strconv.Itoa(n)
			if !s.used[id] {
				break
			}
		}
		s.next[base] = n
	}
	s.used[id] = true
	return id
}

// slug is the id GitHub would give a heading: lower-case letters and digits, spaces as
// hyphens, hyphens and underscores kept, the rest dropped; at most maxIDBytes.
func slug(value string) string {
	b := make([]byte, 0, min(len(value), maxIDBytes))
	for _, r := range strings.TrimSpace(value) {
		var add rune
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			add = unicode.ToLower(r)
		case r == ' ' || r == '-' || r == '_':
			if r == ' ' {
				r = '-'
			}
			add = r
		default:
			continue
		}
		if len(b)+utf8.RuneLen(add) > maxIDBytes {
			break
		}
		b = utf8.AppendRune(b, add)
	}
	if len(b) == 0 {
		return "heading"
	}
	return string(b)
}
