package markdown

import (
	"bytes"
	"html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	xhtml "golang.org/x/net/html"
)

// linkRel is the rel of every link Render writes.
const linkRel = "nofollow noopener noreferrer"

// post is what postProcess needs of a document.
type post struct {
	link   func(string) string
	prefix string // of every id (idPrefix)
	offset int    // levels headings move down
	label  string // Options.Label
	nonce  string // marks the divs of notice boxes (alerts.go)
}

// postProcess passes goldmark's output (raw HTML included) through the rules of the
// package comment that bluemonday cannot apply, and copies everything else as it is:
//
//   - a, img and input tags get the link and image rules, calling p.link for relative
//     URLs; fragment links get the id prefix;
//   - ids (of headings, and the id or name of an a, as terraform-docs writes anchors)
//     get the id prefix, and the first of equal ids wins: the others are dropped;
//   - headings move down p.offset levels;
//   - every pre becomes focusable (tabindex="0") and every table is wrapped in a
//     focusable, labelled region that scrolls sideways (div.table-scroll);
//   - the divs of notice boxes get their class and role; every other div loses its
//     attributes.
//
// It tokenizes with the same tokenizer bluemonday uses, so both see the same tags.
func postProcess(h []byte, p post) []byte {
	z := xhtml.NewTokenizer(bytes.NewReader(h))
	var out bytes.Buffer
	out.Grow(len(h) + len(h)/8)
	seen := map[string]bool{}
	tables, open := 0, 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			for ; open > 0; open-- {
				out.WriteString("</div>")
			}
			return out.Bytes() // io.EOF: a bytes.Reader fails in no other way
		}
		if tt == xhtml.EndTagToken {
			name, _ := z.TagName()
			switch tag := string(name); {
			case len(tag) == 2 && tag[0] == 'h' && '1' <= tag[1] && tag[1] <= '6':
				out.WriteString("</" + demote(tag, p.offset) + ">")
			case tag == "table" && open > 0:
				out.WriteString("</table></div>")
				open--
			default:
				out.Write(z.Raw())
			}
			continue
		}
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			out.Write(z.Raw())
			continue
		}
		name, more := z.TagName()
		tag := string(name)
		switch {
		case tag == "a", tag == "img", tag == "input", tag == "pre", tag == "table", tag == "div",
			len(tag) == 2 && tag[0] == 'h' && '1' <= tag[1] && tag[1] <= '6':
		default:
			out.Write(z.Raw())
			continue
		}
		attrs := map[string]string{}
		for more {
			var k, v []byte
			k, v, more = z.TagAttr()
			if _, dup := attrs[string(k)]; !dup { // the first wins, as in a browser
				attrs[string(k)] = string(v)
			}
		}
		// id returns the attribute for the document's id v, "" when v is no id
		// or one already given.
		id := func(v string) string {
			v = strings.TrimSpace(v)
			if v == "" || len(v) > maxIDBytes || !anchorPattern.MatchString(v) {
				return ""
			}
			v = p.prefix + v
			if seen[v] {
				return ""
			}
			seen[v] = true
			return ` id="` + html.EscapeString(v) + `"`
		}
		switch tag {
		case "pre":
			out.WriteString(`<pre tabindex="0">`)
		case "table":
			tables++
			open++
			out.WriteString(`<div class="table-scroll" role="region" tabindex="0" aria-label="` +
				html.EscapeString("Table "+strconv.Itoa(tables)+" of "+p.label) + `"><table>`)
		case "div":
			if kind, ok := strings.CutPrefix(attrs["data-trove-alert"], p.nonce+" "); ok && p.nonce != "" && alertKinds[kind] != "" {
				out.WriteString(`<div class="alert alert-` + kind + `" role="note">`)
			} else {
				out.WriteString("<div>")
			}
		case "a":
			a := attrs["id"]
			if a == "" {
				a = attrs["name"]
			}
			writeTag(&out, tag, attrs, p, id(a))
		case "img", "input":
			writeTag(&out, tag, attrs, p, "")
		default: // a heading
			out.WriteString("<" + demote(tag, p.offset) + id(attrs["id"]) + ">")
		}
	}
}

// anchorPattern is what an id written in a document may be: letters, digits, "_",
// "-" and ".", as GitHub's heading slugs and terraform-docs' anchors are.
var anchorPattern = regexp.MustCompile(`^[\p{L}\p{N}_.-]+$`)

// demote returns heading tag hN moved down offset levels, at most to h6.
func demote(tag string, offset int) string {
	return "h" + strconv.Itoa(min(int(tag[1]-'0')+offset, 6))
}

// writeTag writes an a, img or input tag with the attributes the policy may keep; id
// is the a's id attribute (with its leading space) or "".
func writeTag(out *bytes.Buffer, tag string, attrs map[string]string, p post, id string) {
	attr := func(k, v string) {
		out.WriteString(" " + k + `="` + html.EscapeString(v) + `"`)
	}
	switch tag {
	case "a":
		out.WriteString("<a" + id)
		if v, ok := attrs["href"]; ok {
			if u, ok := checkURL(v, false, p.link, p.prefix); ok {
				attr("href", u)
				attr("rel", linkRel)
			}
		}
		if v, ok := attrs["title"]; ok {
			attr("title", v)
		}
		out.WriteString(">")
	case "img":
		u, ok := checkURL(attrs["src"], true, p.link, p.prefix)
		if !ok {
			out.WriteString(html.EscapeString(attrs["alt"]))
			return
		}
		out.WriteString("<img")
		attr("src", u)
		for _, k := range []string{"alt", "title", "width", "height"} {
			if v, ok := attrs[k]; ok {
				attr(k, v)
			}
		}
		out.WriteString(">")
	case "input":
		if !strings.EqualFold(strings.TrimSpace(attrs["type"]), "checkbox") {
			return
		}
		out.WriteString(`<input type="checkbox" disabled=""`)
		if _, ok := attrs["checked"]; ok {
			out.WriteString(` checked=""`)
		}
		out.WriteString(">")
	}
}

// checkURL applies the link (img false) or image (img true) rules of the package comment
// to the URL v: it returns the URL to write, or false to drop it.
func checkURL(v string, img bool, link func(string) string, prefix string) (string, bool) {
	v, ok := cleanURL(v)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(v, "#") {
		if img {
			return "", false
		}
		if v == "#" {
			return "", false // bluemonday drops it too
		}
		return "#" + prefix + v[1:], true
	}
	if hasScheme(v) || networkPath(v) {
		return v, absoluteOK(v, img)
	}
	if link != nil {
		if v, ok = cleanURL(link(v)); !ok {
			return "", false
		}
		if hasScheme(v) || networkPath(v) {
			return v, absoluteOK(v, img)
		}
	}
	if img && !(strings.HasPrefix(v, "/") && link != nil) {
		return "", false // relative images only as paths Link made
	}
	if _, err := url.Parse(v); err != nil {
		return "", false
	}
	return v, true
}

// cleanURL trims v and removes tabs and newlines, as a browser does, and refuses the
// empty URL and one with other control characters.
func cleanURL(v string) (string, bool) {
	v = strings.Trim(v, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	if strings.ContainsAny(v, "\t\n\r") {
		v = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(v)
	}
	if v == "" {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return "", false
		}
	}
	return v, true
}

// hasScheme reports whether v starts with something a browser could take for a scheme:
// a letter, letters, digits, "+", "-" or "." up to a colon before any "/", "?" or "#".
func hasScheme(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == ':':
			return i > 0
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}

// networkPath reports whether v is a protocol-relative URL ("//host/...", including the
// backslash spellings browsers accept).
func networkPath(v string) bool {
	return len(v) >= 2 && (v[0] == '/' || v[0] == '\\') && (v[1] == '/' || v[1] == '\\')
}

// absoluteOK reports whether an absolute URL may be a link (http, https, mailto) or an
// image (http, https) destination.
func absoluteOK(v string, img bool) bool {
	u, err := url.Parse(v)
	if err != nil || networkPath(v) {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return !img
	}
	return false
}

var (
	idPattern     = regexp.MustCompile(`^h-(?:[a-z0-9-]{1,64}:)?[\p{L}\p{N}_.-]+$`)
	imgSrcPattern = regexp.MustCompile(`^(?i:https?://)|^/(?:[^/\\]|$)`)
)

// policy is the bluemonday policy of the package comment, the last filter of Render's
// output. A bluemonday.Policy is safe for concurrent use once built.
var policy = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowStandardURLs() // parseable URLs: relative, http, https, mailto
	p.AllowElements(
		"p", "br", "hr", "blockquote", "pre", "code", "div", "span",
		"em", "strong", "b", "i", "u", "del", "s", "strike", "ins", "sub", "sup",
		"kbd", "samp", "var", "mark", "small", "abbr", "cite", "q", "dfn", "wbr",
		"ul", "ol", "li", "dl", "dt", "dd", "details", "summary",
		"table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
		"h1", "h2", "h3", "h4", "h5", "h6",
	)
	p.AllowAttrs("id").Matching(idPattern).OnElements("h1", "h2", "h3", "h4", "h5", "h6", "a")
	// What postProcess writes: focusable, labelled table regions and code blocks, and
	// the divs of notice boxes (every other div has lost its attributes there).
	p.AllowAttrs("tabindex").Matching(regexp.MustCompile(`^0$`)).OnElements("pre", "div")
	p.AllowAttrs("role").Matching(regexp.MustCompile(`^(?:region|note)$`)).OnElements("div")
	p.AllowAttrs("aria-label").Matching(regexp.MustCompile(`^Table [0-9]+ of [^<>"]{1,300}$`)).OnElements("div")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^(?:table-scroll|alert alert-(?:note|tip|important|warning|caution))$`)).OnElements("div")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^` + linkRel + `$`)).OnElements("a")
	p.AllowAttrs("title").OnElements("a", "abbr", "img")
	p.AllowAttrs("src").Matching(imgSrcPattern).OnElements("img")
	p.AllowAttrs("alt").OnElements("img")
	p.AllowAttrs("width", "height").Matching(regexp.MustCompile(`^[0-9]{1,5}$`)).OnElements("img")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(?:left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]{1,9}$`)).OnElements("ol")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w.+#-]{1,64}$`)).OnElements("code")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^$`)).OnElements("input")
	return p
})

// sanitize applies the policy.
func sanitize(h []byte) []byte {
	return policy().SanitizeBytes(h)
}
