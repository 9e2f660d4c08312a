package markdown

import (
	"bytes"
	"html"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
	xhtml "golang.org/x/net/html"
)

// linkRel is the rel of every link Render writes.
const linkRel = "nofollow noopener noreferrer"

// rewriteURLs passes every a, img and input tag of h (goldmark's output, raw HTML
// included) through the link and image rules of the package comment, calling link for
// relative URLs, and copies everything else as it is. It tokenizes with the same
// tokenizer bluemonday uses, so both see the same tags.
func rewriteURLs(h []byte, link func(string) string) []byte {
	z := xhtml.NewTokenizer(bytes.NewReader(h))
	var out bytes.Buffer
	out.Grow(len(h) + len(h)/8)
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return out.Bytes() // io.EOF: a bytes.Reader fails in no other way
		}
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			out.Write(z.Raw())
			continue
		}
		name, more := z.TagName()
		switch string(name) {
		case "a", "img", "input":
		default:
			out.Write(z.Raw())
			continue
		}
		tag := string(name)
		attrs := map[string]string{}
		for more {
			var k, v []byte
			k, v, more = z.TagAttr()
			if _, dup := attrs[string(k)]; !dup { // the first wins, as in a browser
				attrs[string(k)] = string(v)
			}
		}
		writeTag(&out, tag, attrs, link)
	}
}

// writeTag writes an a, img or input tag with the attributes the policy may keep.
func writeTag(out *bytes.Buffer, tag string, attrs map[string]string, link func(string) string) {
	attr := func(k, v string) {
		out.WriteString(" " + k + `="` + html.EscapeString(v) + `"`)
	}
	switch tag {
	case "a":
		out.WriteString("<a")
		if v, ok := attrs["href"]; ok {
			if u, ok := checkURL(v, false, link); ok {
				attr("href", u)
				attr("rel", linkRel)
			}
		}
		if v, ok := attrs["title"]; ok {
			attr("title", v)
		}
		out.WriteString(">")
	case "img":
		u, ok := checkURL(attrs["src"], true, link)
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
func checkURL(v string, img bool, link func(string) string) (string, bool) {
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
		return "#" + HeadingIDPrefix + v[1:], true
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
	headingIDPattern = regexp.MustCompile(`^h-[\p{L}\p{N}_-]+$`)
	imgSrcPattern    = regexp.MustCompile(`^(?i:https?://)|^/(?:[^/\\]|$)`)
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
	p.AllowAttrs("id").Matching(headingIDPattern).OnElements("h1", "h2", "h3", "h4", "h5", "h6")
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
