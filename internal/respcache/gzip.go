package respcache

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
)

// DefaultGzipMinBytes is the size from which a document is worth
// compressing: below it the gzip header and trailer (18 bytes) and the
// client's work win little or nothing.
const DefaultGzipMinBytes = 1024

// Variant is a compressed form of an entry's document. Like the entry, it
// never changes once made; its header values may be assigned to responses
// as they are.
type Variant struct {
	Body   []byte   // the document, Body and Tail, gzip-compressed
	ETag   []string // {strong quoted ETag}: the entry's tag with "-gz" inside the quotes
	Length []string // {Content-Length of Body}
}

// Shared header values of compressed answers (never modified).
var (
	headerGzip         = []string{"gzip"}
	headerVaryEncoding = []string{"Accept-Encoding"}
)

// Compressible reports whether the entry has a gzip variant: its cache
// compresses (Options.GzipMinBytes) and the document is at least that
// large. The answers of a compressible entry vary by Accept-Encoding.
func (e *Entry[V]) Compressible() bool { return e.gz != nil }

// Gzip returns the entry's gzip variant, compressing the document the
// first time it is asked for (requests that ask meanwhile wait for that
// one compression), or nil when the entry is not Compressible. The
// variant is accounted to the cache's byte budget with its entry. It does
// not allocate once the variant exists.
func (e *Entry[V]) Gzip() *Variant {
	g := e.gz
	if g == nil {
		return nil
	}
	if v := g.v.Load(); v != nil {
		return v
	}
	g.once.Do(func() { e.compress() })
	return g.v.Load()
}

// compress makes the gzip variant and accounts it.
func (e *Entry[V]) compress() {
	var buf bytes.Buffer
	buf.Grow((len(e.Body) + len(e.Tail)) / 3)
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a valid level: no error
	_, _ = zw.Write(e.Body)
	_, _ = zw.Write(e.Tail)
	_ = zw.Close() // writes to memory: no error
	body := bytes.Clone(buf.Bytes())
	tag := e.ETag[0]
	v := &Variant{
		Body:   body,
		ETag:   []string{tag[:len(tag)-1] + `-gz"`},
		Length: []string{strconv.Itoa(len(body))},
	}
	e.gz.account(int64(len(body)))
	e.gz.v.Store(v)
}

// AcceptsGzip reports whether a request whose Accept-Encoding header has
// the values given accepts a gzip-encoded answer (RFC 9110, 12.5.3):
// "gzip" or "x-gzip" with a non-zero weight, or, when neither is named,
// "*" with a non-zero weight. Identity is always acceptable to Trove, so
// "identity;q=0" changes nothing. Any malformed element is ignored;
// the work is linear in the header's length and allocates nothing.
func AcceptsGzip(values []string) bool {
	if len(values) == 1 && values[0] == "gzip" { // Go's and so Terraform's and OpenTofu's
		return true
	}
	gzipQ, starQ := -1, -1 // -1: not named, 0: refused, 1: accepted
	for _, v := range values {
		for v != "" {
			var elem string
			if i := strings.IndexByte(v, ','); i >= 0 {
				elem, v = v[:i], v[i+1:]
			} else {
				elem, v = v, ""
			}
			coding, params, _ := strings.Cut(elem, ";")
			coding = strings.Trim(coding, " \t")
			var q *int
			switch {
			case coding == "gzip", strings.EqualFold(coding, "gzip"), strings.EqualFold(coding, "x-gzip"):
				q = &gzipQ
			case coding == "*":
				q = &starQ
			default:
				continue
			}
			w := weight(params)
			if *q != 0 { // an explicit refusal wins over any acceptance
				*q = w
			}
		}
	}
	if gzipQ >= 0 {
		return gzipQ == 1
	}
	return starQ == 1
}

// weight returns 0 when the parameters of an Accept-Encoding element
// carry a zero weight ("q=0", "q=0.000"), 1 otherwise.
func weight(params string) int {
	for params != "" {
		var p string
		if i := strings.IndexByte(params, ';'); i >= 0 {
			p, params = params[:i], params[i+1:]
		} else {
			p, params = params, ""
		}
		name, value, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.Trim(name, " \t"), "q") {
			continue
		}
		if zeroWeight(strings.Trim(value, " \t")) {
			return 0
		}
		return 1
	}
	return 1
}

// zeroWeight reports whether a qvalue is zero: "0", "0.", "0.0" up to
// three decimals.
func zeroWeight(q string) bool {
	if q == "" || q[0] != '0' {
		return false
	}
	q = q[1:]
	if q == "" {
		return true
	}
	if q[0] != '.' || len(q) > 4 {
		return false
	}
	return strings.Trim(q[1:], "0") == ""
}
