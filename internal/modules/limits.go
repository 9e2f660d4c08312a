package modules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"golang.org/x/sync/semaphore"

	"trove.dev/trove/internal/registry"
)

// Bounds of metadata extraction. terraform-config-inspect parses every
// configuration file with HCL's recursive-descent parsers, so Inspect
// checks the files against these limits before any of them is parsed.
const (
	// MaxConfigNesting bounds how deeply a configuration file may nest:
	// brackets, braces, parentheses, quoted strings, heredocs, template
	// interpolations and %{if}/%{for} directives each count one level, and
	// so does each operator chained within one expression (a + b + c counts
	// two), since HCL parses and evaluates operator chains recursively too.
	// Real configurations stay below 20; a file nested deeper than this is
	// refused, because parsing it could exhaust the stack and crash the
	// server (a fatal error recover cannot catch).
	MaxConfigNesting = 128

	// MaxConfigBytes bounds the Terraform configuration files (*.tf and
	// *.tf.json of the root, modules/* and examples/*) parsed for one
	// module version, together. Real modules hold tens of KiB to 1 MiB.
	MaxConfigBytes = 4 << 20

	// MaxDiagnostics is how many terraform-config-inspect diagnostics the
	// metadata and the publish answer keep; a last line counts the rest.
	MaxDiagnostics = 50

	// MaxMetadataBytes bounds the encoded metadata stored with a module
	// version (READMEs included); a larger one is refused.
	MaxMetadataBytes = 2 << 20

	// MaxInspectBytes bounds the configuration bytes that the metadata
	// extractions of a Publisher lex and parse at once. HCL takes up to a few
	// hundred bytes of memory per byte of a pathological file, so this
	// bounds the memory of all concurrent extractions together to that of
	// one worst-case module (about 1 GiB), while small modules are
	// extracted side by side; a larger one waits for its share.
	MaxInspectBytes = MaxConfigBytes
)

// inspector runs metadata extractions within a budget of configuration
// bytes lexed and parsed at once (MaxInspectBytes); a Publisher owns one,
// so that its concurrent publishes share the budget.
type inspector struct {
	budget *semaphore.Weighted
	// hook, when set (by tests), runs while an extraction holds its share
	// of the budget, with the size of that share.
	hook func(bytes int64)
}

func newInspector() *inspector {
	return &inspector{budget: semaphore.NewWeighted(MaxInspectBytes)}
}

// acquire waits until n configuration bytes (at least one) fit in the
// budget, preferring room to a done ctx, and returns the release.
func (in *inspector) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 1), MaxInspectBytes)
	if !in.budget.TryAcquire(n) {
		if err := in.budget.Acquire(ctx, n); err != nil {
			return nil, context.Cause(ctx)
		}
	}
	return func() { in.budget.Release(n) }, nil
}

// configDirs returns the module directories of fsys Inspect reads: the
// root, then modules/* and examples/* in name order.
func configDirs(fsys fs.FS) []string {
	dirs := []string{"."}
	for _, group := range []string{"modules", "examples"} {
		des, err := fs.ReadDir(fsys, group)
		if err != nil {
			continue // none staged
		}
		for _, de := range des {
			if de.IsDir() {
				dirs = append(dirs, group+"/"+de.Name())
			}
		}
	}
	return dirs
}

// configFiles returns the files of dir that terraform-config-inspect may
// parse (a superset: it skips some hidden and backup files), with sizes.
func configFiles(fsys fs.FS, dir string) ([]string, []int64, error) {
	des, err := fs.ReadDir(fsys, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, registry.Wrap(registry.Internal, err, "listing the staged module")
	}
	var names []string
	var sizes []int64
	for _, de := range des {
		n := de.Name()
		if de.IsDir() || !strings.HasSuffix(n, ".tf") && !strings.HasSuffix(n, ".tf.json") {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			return nil, nil, registry.Wrap(registry.Internal, err, "reading the staged module")
		}
		names, sizes = append(names, path.Join(dir, n)), append(sizes, fi.Size())
	}
	return names, sizes, nil
}

// sizeConfigFiles lists the configuration files of dirs and refuses them
// when they total more than MaxConfigBytes; it reads none of them.
func sizeConfigFiles(fsys fs.FS, dirs []string) (files []string, total int64, err error) {
	for _, dir := range dirs {
		names, sizes, err := configFiles(fsys, dir)
		if err != nil {
			return nil, 0, err
		}
		files = append(files, names...)
		for _, s := range sizes {
			total += s
		}
	}
	if total > MaxConfigBytes {
		return nil, 0, registry.Errorf(registry.TooLarge,
			"the module's Terraform configuration files (*.tf, *.tf.json of the root, modules/* and examples/*) total %d bytes, more than the %d MiB Trove parses to extract metadata",
			total, MaxConfigBytes>>20)
	}
	return files, total, nil
}

// checkConfigFiles refuses, before anything is parsed, configuration
// files that nest deeper than MaxConfigNesting.
func checkConfigFiles(fsys fs.FS, files []string) error {
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return registry.Wrap(registry.Internal, err, "reading the staged file "+name)
		}
		if strings.HasSuffix(name, ".tf.json") {
			err = checkJSONNesting(src, name)
		} else {
			err = checkHCLNesting(src, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nestingError is the refusal of a file nested deeper than MaxConfigNesting.
func nestingError(file string, line int) error {
	return registry.Errorf(registry.Invalid,
		"%s:%d: the configuration nests brackets, strings, templates or chained operators more than %d levels deep; Trove refuses it because parsing it could exhaust the server's stack",
		file, line, MaxConfigNesting)
}

// checkHCLNesting refuses native-syntax configuration nested deeper than
// MaxConfigNesting. It works on the tokens of HCL's lexer, which is
// iterative, so any input is safe to scan.
func checkHCLNesting(src []byte, file string) error {
	toks, _ := hclsyntax.LexConfig(src, file, hcl.InitialPos)
	var n nesting
	if line, ok := n.scan(toks, 0); !ok {
		return nestingError(file, line)
	}
	return nil
}

// checkJSONNesting refuses JSON-syntax configuration nested deeper than
// MaxConfigNesting: the JSON structure itself, read iteratively with a
// json.Decoder, plus each string, which HCL parses as a template.
func checkJSONNesting(src []byte, file string) error {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	depth := 0
	line := func() int { return 1 + bytes.Count(src[:min(int(dec.InputOffset()), len(src))], []byte("\n")) }
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// Not JSON the standard library accepts (HCL's parser may be
			// more lenient): scan what follows for brackets and strings.
			off := min(int(dec.InputOffset()), len(src))
			if l, ok := rawJSONNesting(src[off:], depth); !ok {
				return nestingError(file, 1+bytes.Count(src[:off], []byte("\n"))+l-1)
			}
			return nil
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' || t == '{' {
				depth++
			} else {
				depth--
			}
			if depth > MaxConfigNesting {
				return nestingError(file, line())
			}
		case string:
			if _, ok := templateNesting(t, depth); !ok {
				return nestingError(file, line())
			}
		}
	}
}

// templateNesting checks s, a JSON string HCL parses as a template, at
// JSON depth depth. It returns the line within s where the limit was
// exceeded.
func templateNesting(s string, depth int) (int, bool) {
	if !strings.Contains(s, "{") { // no interpolation or directive
		return 0, depth <= MaxConfigNesting
	}
	toks, _ := hclsyntax.LexTemplate([]byte(s), "", hcl.InitialPos)
	var n nesting
	return n.scan(toks, depth)
}

// rawJSONNesting bounds the nesting of text that is not valid JSON,
// starting at depth: brackets and braces outside strings, and strings
// lexed as templates. It returns the line where the limit was exceeded.
func rawJSONNesting(src []byte, depth int) (int, bool) {
	line := 1
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
		case '[', '{':
			if depth++; depth > MaxConfigNesting {
				return line, false
			}
		case ']', '}':
			depth = max(depth-1, 0)
		case '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(src))
			if l, ok := templateNesting(string(src[i+1:j]), depth); !ok {
				return line + max(l-1, 0), false
			}
			line += bytes.Count(src[i+1:j], []byte("\n"))
			i = j
		}
	}
	return line, true
}

// nesting measures, over a token stream, an upper bound of the recursion
// HCL's parser and expression evaluation go through: one level per open
// bracket, quote, heredoc, template sequence or %{if}/%{for} block, plus
// one per operator (and per index bracket) in each expression still open.
type nesting struct {
	stack []frame
	top   int // operators in the current expression outside any frame
	ops   int // operators in all open expressions, top included
}

// frame is one open bracket-like construct.
type frame struct {
	closer hclsyntax.TokenType // tokBlockEnd for a template %{if}/%{for} block
	ops    int                 // operators in its current expression
	// directive is, for a %{...} sequence, +1 when it opens an if or for
	// block and -1 when it ends one.
	directive int
}

// tokBlockEnd stands for the %{endif} or %{endfor} that closes a template
// directive block; the lexer has no such token.
const tokBlockEnd hclsyntax.TokenType = 0x10FFFF

var closers = map[hclsyntax.TokenType]hclsyntax.TokenType{
	hclsyntax.TokenOBrace:          hclsyntax.TokenCBrace,
	hclsyntax.TokenOBrack:          hclsyntax.TokenCBrack,
	hclsyntax.TokenOParen:          hclsyntax.TokenCParen,
	hclsyntax.TokenOQuote:          hclsyntax.TokenCQuote,
	hclsyntax.TokenOHeredoc:        hclsyntax.TokenCHeredoc,
	hclsyntax.TokenTemplateInterp:  hclsyntax.TokenTemplateSeqEnd,
	hclsyntax.TokenTemplateControl: hclsyntax.TokenTemplateSeqEnd,
}

var operators = map[hclsyntax.TokenType]bool{
	hclsyntax.TokenStar: true, hclsyntax.TokenSlash: true, hclsyntax.TokenPlus: true, hclsyntax.TokenMinus: true,
	hclsyntax.TokenPercent: true, hclsyntax.TokenEqualOp: true, hclsyntax.TokenNotEqual: true,
	hclsyntax.TokenLessThan: true, hclsyntax.TokenLessThanEq: true, hclsyntax.TokenGreaterThan: true,
	hclsyntax.TokenGreaterThanEq: true, hclsyntax.TokenAnd: true, hclsyntax.TokenOr: true,
	hclsyntax.TokenBang: true, hclsyntax.TokenQuestion: true,
}

// endsValue reports whether a '[' after a token of type t indexes a value.
func endsValue(t hclsyntax.TokenType) bool {
	switch t {
	case hclsyntax.TokenIdent, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCBrace,
		hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc, hclsyntax.TokenStar:
		return true
	}
	return false
}

// addOp counts an operator in the innermost open expression.
func (n *nesting) addOp() {
	if len(n.stack) > 0 {
		n.stack[len(n.stack)-1].ops++
	} else {
		n.top++
	}
	n.ops++
}

// endExpr resets the innermost open expression at a separator.
func (n *nesting) endExpr() {
	if len(n.stack) > 0 {
		f := &n.stack[len(n.stack)-1]
		n.ops -= f.ops
		f.ops = 0
	} else {
		n.ops -= n.top
		n.top = 0
	}
}

// push opens a frame.
func (n *nesting) push(closer hclsyntax.TokenType) { n.stack = append(n.stack, frame{closer: closer}) }

// pop closes the innermost frame closed by closer and any left open
// inside it, as the parser's recovery does, and returns the frame; a stray
// closer closes nothing.
func (n *nesting) pop(closer hclsyntax.TokenType) frame {
	for i := len(n.stack) - 1; i >= 0; i-- {
		if n.stack[i].closer == closer {
			f := n.stack[i]
			for _, g := range n.stack[i:] {
				n.ops -= g.ops
			}
			n.stack = n.stack[:i]
			return f
		}
	}
	return frame{}
}

// scan walks toks starting at depth base and reports whether the measure
// stayed within MaxConfigNesting, or else the line where it did not.
func (n *nesting) scan(toks hclsyntax.Tokens, base int) (int, bool) {
	prev := hclsyntax.TokenNil
	for i, tok := range toks {
		switch t := tok.Type; {
		case closers[t] != 0:
			if t == hclsyntax.TokenOBrack && endsValue(prev) {
				n.addOp() // an index: a[b][c] nests like an operator chain
			}
			n.push(closers[t])
			if t == hclsyntax.TokenTemplateControl && i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenIdent {
				switch string(toks[i+1].Bytes) {
				case "if", "for":
					n.stack[len(n.stack)-1].directive = 1
				case "endif", "endfor":
					n.stack[len(n.stack)-1].directive = -1
				}
			}
		case t == hclsyntax.TokenTemplateSeqEnd:
			switch n.pop(t).directive {
			case 1: // the body of %{if} or %{for} follows
				n.push(tokBlockEnd)
			case -1:
				n.pop(tokBlockEnd)
			}
		case t == hclsyntax.TokenCBrace || t == hclsyntax.TokenCBrack || t == hclsyntax.TokenCParen ||
			t == hclsyntax.TokenCQuote || t == hclsyntax.TokenCHeredoc:
			n.pop(t)
		case operators[t]:
			n.addOp()
		case t == hclsyntax.TokenComma:
			n.endExpr()
		case t == hclsyntax.TokenNewline || t == hclsyntax.TokenComment && bytes.HasSuffix(tok.Bytes, []byte("\n")):
			// Newlines end an expression in a body or an object, not
			// inside brackets, parentheses or templates.
			if len(n.stack) == 0 || n.stack[len(n.stack)-1].closer == hclsyntax.TokenCBrace {
				n.endExpr()
			}
		}
		if t := tok.Type; t != hclsyntax.TokenComment && t != hclsyntax.TokenNewline {
			prev = t
		}
		if base+len(n.stack)+n.ops > MaxConfigNesting {
			return tok.Range.Start.Line, false
		}
	}
	return 0, true
}
