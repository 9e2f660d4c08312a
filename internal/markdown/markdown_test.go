package markdown

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
)

// docsLink is the Link of a provider's documentation page at /p/hashicorp/aws/docs/.
func docsLink(dest string) string {
	if strings.HasPrefix(dest, "drop/") {
		return ""
	}
	if strings.HasPrefix(dest, "evil/") {
		return "javascript:alert(1)"
	}
	return "/p/hashicorp/aws/docs/" + dest
}

// checkSafe reports what in h breaks the policy of the package comment, "" if nothing:
// the properties every output must have, whatever the input. It looks at tags and
// attributes, not at the text: a README may well say "javascript:" or "onclick=" in
// prose or code, and the HTML then has it as escaped text, which is harmless.
func checkSafe(h string) string {
	if strings.Contains(strings.ToLower(h), "<script") {
		return "contains <script"
	}
	if !utf8.ValidString(h) {
		return "invalid UTF-8"
	}
	z := xhtml.NewTokenizer(strings.NewReader(h))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return ""
		}
		if tt != xhtml.StartTagToken && tt != xhtml.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "script", "style", "iframe", "object", "embed", "form", "svg", "math", "base",
			"meta", "link", "textarea", "button", "select", "frame", "frameset", "applet":
			return "element " + tok.String()
		}
		attrs := map[string]string{}
		for _, a := range tok.Attr {
			attrs[a.Key] = a.Val
			switch {
			case onAttr.MatchString(a.Key), a.Key == "style", a.Key == "name", a.Key == "srcdoc",
				a.Key == "formaction", a.Key == "action", a.Key == "xlink:href":
				return "attribute " + tok.String()
			case a.Key == "class" && !(tok.Data == "code" && strings.HasPrefix(a.Val, "language-")) &&
				!(tok.Data == "div" && (a.Val == "table-scroll" || strings.HasPrefix(a.Val, "alert alert-"))):
				return "class " + tok.String()
			case a.Key == "id" && !strings.HasPrefix(a.Val, HeadingIDPrefix):
				return "id " + tok.String()
			case a.Key == "href" || a.Key == "src":
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.Contains(v, "javascript:") {
					return "javascript: in " + tok.String()
				}
				if i := strings.IndexAny(v, ":/?#"); i >= 0 && v[i] == ':' &&
					!strings.HasPrefix(v, "http:") && !strings.HasPrefix(v, "https:") &&
					!(a.Key == "href" && strings.HasPrefix(v, "mailto:")) {
					return "scheme " + tok.String()
				}
				if strings.HasPrefix(v, "//") || strings.HasPrefix(v, `\`) || strings.HasPrefix(v, `/\`) {
					return "network path " + tok.String()
				}
			}
		}
		switch tok.Data {
		case "input":
			if attrs["type"] != "checkbox" || attrs["disabled"] != "" || !hasAttr(tok, "disabled") {
				return "input " + tok.String()
			}
		case "a":
			if _, ok := attrs["href"]; ok && attrs["rel"] != linkRel {
				return "rel " + tok.String()
			}
		case "img":
			if !imgSrcPattern.MatchString(attrs["src"]) {
				return "img " + tok.String()
			}
		}
	}
}

var onAttr = regexp.MustCompile(`^on\w+$`)

func hasAttr(tok xhtml.Token, key string) bool {
	for _, a := range tok.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     string
		link    func(string) string
		want    []string // substrings of the HTML
		notWant []string // substrings (case-insensitive) the HTML must not have
	}{
		// Hostile input.
		{name: "script tag", src: "a\n\n<script>alert(1)</script>\n\nb <script src=https://evil.example/x.js></script>",
			want: []string{"<p>a</p>"}, notWant: []string{"<script", "alert(1)", "evil.example"}},
		{name: "img onerror", src: `<img src="https://a.example/x.png" onerror="alert(1)">`,
			want: []string{`<img src="https://a.example/x.png">`}, notWant: []string{"onerror", "alert"}},
		{name: "img onerror unquoted", src: "x <img src=x onerror=alert(1)//>",
			notWant: []string{"onerror", "<img"}},
		{name: "raw a javascript", src: `<a href="javascript:alert(1)">click</a>`,
			want: []string{"click"}, notWant: []string{"javascript", "href"}},
		{name: "markdown link javascript", src: "[click](javascript:alert(1))",
			want: []string{"click"}, notWant: []string{"javascript", "href"}},
		{name: "mixed case scheme", src: "[click](JaVaScRiPt:alert(1)) <a href=\"JAVASCRIPT:alert(2)\">two</a>",
			want: []string{"click", "two"}, notWant: []string{"javascript", "href"}},
		{name: "entity encoded scheme raw", src: `<a href="&#106;avascript:alert(1)">a</a> <a href="&#x6A;&#x61;vascript&colon;alert(1)">b</a>`,
			want: []string{"a", "b"}, notWant: []string{"javascript", "href"}},
		{name: "entity encoded scheme markdown", src: "[a](&#106;avascript:alert(1)) [b](javascript&#58;alert(1))",
			notWant: []string{"javascript", "href"}},
		{name: "whitespace in scheme", src: "<a href=\"java\tscript:alert(1)\">a</a> <a href=\"java&#x0A;script:alert(1)\">b</a> <a href=\" \x01javascript:alert(1)\">c</a>",
			notWant: []string{"javascript", "href"}},
		{name: "vbscript and file", src: "[a](vbscript:msgbox(1)) <a href=\"file:///etc/passwd\">b</a> [c](ftp://x.example/)",
			notWant: []string{"vbscript", "file:", "ftp:", "href"}},
		{name: "data link", src: "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) <a href=\"data:text/html,<script>alert(1)</script>\">y</a>",
			want: []string{"x", "y"}, notWant: []string{"data:", "href"}},
		{name: "data image", src: "![svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+) <img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"png\">",
			want: []string{"svg", "png"}, notWant: []string{"data:", "<img"}},
		{name: "inline svg script", src: "<svg><script>alert(1)</script><a xlink:href=\"javascript:alert(2)\">x</a></svg>\n\n<svg onload=alert(3)>",
			notWant: []string{"<svg", "<script", "alert", "xlink"}},
		{name: "iframe", src: `<iframe src="https://evil.example/" srcdoc="<script>alert(1)</script>"></iframe>`,
			notWant: []string{"<iframe", "evil.example", "srcdoc"}},
		{name: "style", src: "<style>body{display:none}</style>\n\n<p style=\"position:fixed\">x</p>",
			want: []string{"<p>x</p>"}, notWant: []string{"<style", "display", "position"}},
		{name: "form", src: `<form action="https://evil.example/"><input type="password" name="p"><input type="text"><button formaction="https://evil.example/">Go</button></form>`,
			notWant: []string{"<form", "<input", "<button", "evil.example", "password"}},
		{name: "object embed base meta", src: "<object data=\"https://evil.example/x.swf\"></object><embed src=\"https://evil.example/\"><base href=\"https://evil.example/\"><meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/\"><link rel=stylesheet href=https://evil.example/>",
			notWant: []string{"<object", "<embed", "<base", "<meta", "<link", "evil.example"}},
		{name: "quotes in link destination", src: `[x](https://a.example/"onmouseover="alert(1)) [y](<https://a.example/" onclick="alert(1)>)`,
			want: []string{`href="https://a.example/%22onmouseover=%22alert(1)"`}, notWant: []string{`" onclick`, `"onmouseover`}},
		{name: "quotes in image alt and title", src: `![a" onerror="alert(1)](https://a.example/x.png "t' onload='alert(2)")`,
			want: []string{`alt="a&#34; onerror=&#34;alert(1)"`}, notWant: []string{`" onerror`, `' onload`}},
		{name: "quotes in raw attributes", src: `<a href='https://a.example/' title='x" onclick="y'>t</a> <img src="https://a.example/x.png" alt='"><script>alert(1)</script>'>`,
			want: []string{`title="x&#34; onclick=&#34;y"`}, notWant: []string{`" onclick`, "<script"}},
		{name: "heading id clobbering", src: "# location\n\n## cookie\n\n<h2 id=\"getElementById\">raw</h2> <a name=\"forms\">a</a> <img name=\"body\" src=\"https://a.example/x.png\">",
			want:    []string{`<h1 id="h-location">`, `<h2 id="h-cookie">`, `<h2 id="h-getElementById">raw</h2>`, `<a id="h-forms">a</a>`},
			notWant: []string{`id="location"`, `id="getElementById"`, `name=`}},
		{name: "network path", src: `[x](//evil.example/) <a href="\\evil.example\">y</a> ![z](//evil.example/z.png)`,
			notWant: []string{"evil.example"}},
		{name: "raw text elements", src: "<textarea><img src=x onerror=alert(1)></textarea><title></title><img src=x onerror=alert(2)></title><noscript><p title=\"</noscript><img src=x onerror=alert(3)>\"></noscript><xmp><script>alert(4)</script></xmp>",
			notWant: []string{"<script", "<img", "<textarea", "<noscript", "<xmp"}},
		{name: "comments and CDATA", src: "<!-- <script>alert(1)</script> --><![CDATA[<script>alert(2)</script>]]><!--><img src=x onerror=alert(3)>-->",
			notWant: []string{"<script", "onerror", "<!--"}},
		{name: "raw task list input", src: `<input type="checkbox" checked onclick="alert(1)"> <input type="hidden" value="x">`,
			want: []string{`<input type="checkbox" disabled="" checked="">`}, notWant: []string{"onclick", "hidden"}},
		{name: "class and dangerous code language", src: "<p class=\"danger\">x</p>\n\n```go\" onclick=\"alert(1)\nx\n```\n",
			notWant: []string{"danger", "onclick"}},
		{name: "link returns javascript", src: "[x](evil/a.md)", link: docsLink,
			want: []string{"x"}, notWant: []string{"javascript", "href"}},

		// Markdown features.
		{name: "table", src: "| Name | Type |\n|:-----|-----:|\n| `id` | string |\n| a \\| b | c |\n",
			want: []string{"<table>", `<th align="left">Name</th>`, `<th align="right">Type</th>`, "<td align=\"left\"><code>id</code></td>", "a | b"}},
		{name: "fenced code", src: "```hcl\nresource \"aws_instance\" \"x\" {}\n```\n",
			want: []string{`<pre tabindex="0"><code class="language-hcl">resource &#34;aws_instance&#34; &#34;x&#34; {}`}},
		{name: "task list", src: "- [x] done\n- [ ] todo\n",
			want: []string{`<li><input type="checkbox" disabled="" checked=""> done</li>`, `<li><input type="checkbox" disabled=""> todo</li>`}},
		{name: "strikethrough and autolink", src: "~~old~~ www.example.com https://example.com/x <me@example.com>",
			want: []string{"<del>old</del>", `<a href="http://www.example.com" rel="nofollow noopener noreferrer">www.example.com</a>`,
				`<a href="https://example.com/x" rel="nofollow noopener noreferrer">`, `<a href="mailto:me@example.com" rel="nofollow noopener noreferrer">`}},
		{name: "relative link rewritten", src: "[foo](../resources/foo.md) ![diagram](img/d.png) <a href=\"guides/x.md\">x</a>", link: docsLink,
			want: []string{`<a href="/p/hashicorp/aws/docs/../resources/foo.md" rel="nofollow noopener noreferrer">foo</a>`,
				`<img src="/p/hashicorp/aws/docs/img/d.png" alt="diagram">`, `<a href="/p/hashicorp/aws/docs/guides/x.md" rel="nofollow noopener noreferrer">x</a>`}},
		{name: "relative without Link", src: "[foo](../resources/foo.md) ![diagram](img/d.png)",
			want: []string{`<a href="../resources/foo.md" rel="nofollow noopener noreferrer">foo</a>`, "diagram"}, notWant: []string{"<img"}},
		{name: "link dropped by Link", src: "[gone](drop/x.md) ![alt text](drop/i.png)", link: docsLink,
			want: []string{"gone", "alt text"}, notWant: []string{"href", "<img"}},
		{name: "anchor links kept", src: "# Usage\n\nsee [usage](#usage) and [top](#)", link: docsLink,
			want: []string{`<h1 id="h-usage">`, `<a href="#h-usage" rel="nofollow noopener noreferrer">usage</a>`, "and top</p>"}},
		{name: "absolute links kept", src: "[a](https://registry.terraform.io/) [b](HTTP://x.example/) ![c](https://img.example/c.png)", link: docsLink,
			want: []string{`href="https://registry.terraform.io/"`, `href="http://x.example/"`, `<img src="https://img.example/c.png" alt="c">`}},
		{name: "heading ids unique", src: "# A\n\n## A\n\n## A\n\n### A-1\n",
			want: []string{`<h1 id="h-a">`, `<h2 id="h-a-1">`, `<h2 id="h-a-2">`, `<h3 id="h-a-1-1">`}},
		{name: "ordered list start and details", src: "3. three\n4. four\n\n<details><summary>More</summary>\n\nhidden\n\n</details>\n",
			want: []string{`<ol start="3">`, "<details><summary>More</summary>", "<p>hidden</p>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := Render([]byte(tc.src), Options{Link: tc.link})
			h := string(doc.HTML)
			if msg := checkSafe(h); msg != "" {
				t.Errorf("unsafe output (%s):\n%s", msg, h)
			}
			for _, w := range tc.want {
				if !strings.Contains(h, w) {
					t.Errorf("want %q in\n%s", w, h)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(strings.ToLower(h), strings.ToLower(w)) {
					t.Errorf("do not want %q in\n%s", w, h)
				}
			}
			if doc.Truncated {
				t.Error("Truncated")
			}
		})
	}
}

func TestRenderHeadings(t *testing.T) {
	src := "Intro\n\n# Provider `aws` <em>x</em>\n\n## Example Usage\n\n## Example Usage\n\n### Argument *Reference*\n\n#### Deep\n\n> # Quoted\n\n# Second title\n"
	doc := Render([]byte(src), Options{})
	want := []Heading{
		{1, "h-provider-aws-x", "Provider aws x"},
		{2, "h-example-usage", "Example Usage"},
		{2, "h-example-usage-1", "Example Usage"},
		{3, "h-argument-reference", "Argument Reference"},
		{1, "h-quoted", "Quoted"},
		{1, "h-second-title", "Second title"},
	}
	if doc.Title != "Provider aws x" {
		t.Errorf("Title = %q", doc.Title)
	}
	if !reflect.DeepEqual(doc.Headings, want) {
		t.Errorf("Headings = %+v\nwant %+v", doc.Headings, want)
	}
	for _, h := range doc.Headings {
		if !strings.Contains(string(doc.HTML), ` id="`+h.ID+`"`) {
			t.Errorf("no element with id %q", h.ID)
		}
	}
	if d := Render([]byte("## no title\n"), Options{}); d.Title != "" {
		t.Errorf("Title without level-1 heading = %q", d.Title)
	}

	many := strings.Repeat("## same\n\n", 20_000)
	doc = Render([]byte(many), Options{})
	if len(doc.Headings) != MaxHeadings {
		t.Errorf("%d headings, want %d", len(doc.Headings), MaxHeadings)
	}
	if !strings.Contains(string(doc.HTML), `id="h-same-19999"`) {
		t.Error("the last duplicate heading has no unique id")
	}
	long := "# " + strings.Repeat("word ", 10_000) + "\n"
	doc = Render([]byte(long), Options{})
	if len(doc.Headings[0].ID) > maxIDBytes+len(HeadingIDPrefix) || len(doc.Title) > maxHeadingTextBytes {
		t.Errorf("id of %d bytes, title of %d", len(doc.Headings[0].ID), len(doc.Title))
	}
}

// TestRenderBounds renders inputs built to be slow, deep or large and checks that the
// output stays safe, shallow and at most a small multiple of the input. Timing is not
// asserted (tests never do); BenchmarkRender/hostile measures it.
func TestRenderBounds(t *testing.T) {
	size := DefaultMaxBytes
	if raceEnabled {
		size = 128 << 10
	}
	for _, tc := range hostileDocs(size) {
		t.Run(tc.name, func(t *testing.T) {
			doc := Render(tc.src, Options{MaxBytes: size})
			h := string(doc.HTML)
			if msg := checkSafe(h); msg != "" {
				t.Fatalf("unsafe output (%s)", msg)
			}
			in := min(len(tc.src), size)
			if len(h) > 32*in+1024 {
				t.Errorf("%d bytes of HTML from %d of input", len(h), in)
			}
			if d := depth(h); d > 4*MaxNesting+16 {
				t.Errorf("elements nest %d deep", d)
			}
			if doc.Truncated != tc.truncated {
				t.Errorf("Truncated = %v, want %v", doc.Truncated, tc.truncated)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

// TestRender10MB renders a 10 MB provider page whose table has 100,000 rows with the
// default MaxBytes, under the race detector too.
func TestRender10MB(t *testing.T) {
	var b strings.Builder
	b.WriteString("# aws_huge\n\n| Name | Description | Default |\n|---|---|---|\n")
	for i := 0; b.Len() < 10<<20; i++ {
		fmt.Fprintf(&b, "| `attribute_%d` | The value of attribute %d, see [docs](../d/%d.md). | `null` |\n", i, i, i)
	}
	doc := Render([]byte(b.String()), Options{Link: docsLink})
	h := string(doc.HTML)
	if !doc.Truncated {
		t.Error("not Truncated")
	}
	if len(h) > 8*DefaultMaxBytes {
		t.Errorf("%d bytes of HTML", len(h))
	}
	if rows := strings.Count(h, "<tr>"); rows < 1000 || rows > MaxTableCells/3+1 {
		t.Errorf("%d rows", rows)
	}
	if doc.Title != "aws_huge" || !strings.HasSuffix(h, "</table></div>\n") {
		t.Errorf("Title %q, end %q", doc.Title, h[max(0, len(h)-100):])
	}
	if msg := checkSafe(h); msg != "" {
		t.Fatalf("unsafe output (%s)", msg)
	}
}

type hostileDoc struct {
	name      string
	src       []byte
	truncated bool
	check     func(t *testing.T, h string)
}

func rep(s string, n int) string { return strings.Repeat(s, n) }

// hostileDocs are inputs against each bound of the package comment, and the classic
// pathological inputs of CommonMark implementations, each around n bytes (the ones
// that are truncated: 10n).
func hostileDocs(n int) []hostileDoc {
	var bigTable strings.Builder
	bigTable.WriteString("| Name | Description | Default |\n|---|---|---|\n")
	for i := 0; bigTable.Len() < 10*n; i++ {
		fmt.Fprintf(&bigTable, "| `attribute_%d` | The value of attribute %d. | `null` |\n", i, i)
	}
	var indented strings.Builder
	for i := 0; indented.Len() < n-4096; i++ {
		indented.WriteString(rep("  ", i) + "- item\n")
	}
	var quotes strings.Builder
	for i := 1; quotes.Len() < n-4096; i++ {
		quotes.WriteString(rep(">", i%2000) + " q\n")
	}
	var backticks strings.Builder
	for i := 1; backticks.Len() < n-4096; i++ {
		backticks.WriteString("e" + rep("`", i))
	}
	count := func(tag string, max int) func(t *testing.T, h string) {
		return func(t *testing.T, h string) {
			if c := strings.Count(h, tag); c > max {
				t.Errorf("%d %s, want at most %d", c, tag, max)
			}
		}
	}
	return []hostileDoc{
		{name: "huge table", src: []byte(bigTable.String()), truncated: true,
			check: func(t *testing.T, h string) {
				if !strings.Contains(h, "<table>") || !strings.Contains(h, "attribute_1000") {
					t.Error("the table's first rows are missing")
				}
			}},
		{name: "10n of text", src: []byte(rep("Lorem ipsum dolor sit amet, *consectetur* adipiscing elit.\n", 10*n/58)), truncated: true},
		{name: "10n in one line", src: []byte(rep("word ", 2*n)), truncated: true},
		{name: "table padding", src: []byte("|" + rep("a|", MaxTableColumns) + "\n|" + rep("-|", MaxTableColumns) + "\n" + rep("x\n", n/2-1024)),
			truncated: true, check: count("<td", MaxTableCells)},
		{name: "table too wide", src: []byte("|" + rep("a|", MaxTableColumns+1) + "\n|" + rep("-|", MaxTableColumns+1) + "\n" + rep("x\n", n/4)),
			check: count("<table", 0)},
		{name: "many tables", src: []byte(rep("|a|b|c|d|\n|-|-|-|-|\n"+rep("|\n", 100)+"\n", n/240)), truncated: true,
			check: count("<td", MaxTableCells)},
		{name: "10k nested blockquotes", src: []byte(rep("> ", 10_000) + "a\n"), check: count("<blockquote>", MaxNesting)},
		{name: "nested blockquotes no spaces", src: []byte(rep(">", n-16) + "a\n"), check: count("<blockquote>", MaxNesting)},
		{name: "10k nested lists", src: []byte(rep("- ", 10_000) + "a\n"), check: count("<ul>", MaxNesting)},
		{name: "10k nested ordered lists", src: []byte(rep("1. ", 10_000) + "a\n"), check: count("<ol>", MaxNesting)},
		{name: "nested quotes and lists", src: []byte(rep("> - ", n/4-16) + "a\n")},
		{name: "indented nested lists", src: []byte(indented.String())},
		{name: "growing blockquotes", src: []byte(quotes.String())},
		{name: "tab indented lists", src: []byte(rep(rep("\t", 200)+"- a\n", n/210))},
		{name: "nested emphasis", src: []byte(rep("*a **a ", n/16) + "b" + rep(" a** a*", n/16))},
		{name: "emphasis closers", src: []byte(rep("a_ ", n/3))},
		{name: "emphasis openers", src: []byte(rep("_a ", n/3))},
		{name: "mismatched emphasis", src: []byte(rep("*a_ ", n/4))},
		{name: "emphasis multiple of 3", src: []byte("a**b" + rep("c* ", n/3-8))},
		{name: "link closers", src: []byte(rep("a]", n/2))},
		{name: "link openers", src: []byte(rep("[a", n/2))},
		{name: "link openers and emphasis closers", src: []byte(rep("[ a_", n/4))},
		{name: "link paren openers", src: []byte(rep("[ (](", n/5))},
		{name: "nested brackets", src: []byte(rep("[", n/2-8) + "a" + rep("]", n/2-8))},
		{name: "nested images", src: []byte(rep("![", n/6) + "a" + rep("](b)", n/6))},
		{name: "backticks", src: []byte(backticks.String())},
		{name: "unclosed links A", src: []byte(rep("[a](<b", n/6))},
		{name: "unclosed links B", src: []byte(rep("[a](b", n/5))},
		{name: "unclosed comments", src: []byte("</" + rep("<!--", n/4-4))},
		{name: "unclosed tags", src: []byte(rep("<a ", n/3))},
		{name: "autolinks", src: []byte(rep("www.a.co/(", n/10))},
		{name: "reference amplification", src: []byte("[a]: https://x.example/" + rep("x", 2000) + "\n\n" + rep("[a] ", n/4-1024)),
			check: func(t *testing.T, h string) {
				if len(h) > 8<<20 {
					t.Errorf("%d bytes of HTML", len(h))
				}
			}},
		{name: "entities", src: []byte(rep("&NotNestedGreaterGreater;", n/25))},
		{name: "NUL and invalid UTF-8", src: []byte(rep("a\x00b\xff\xfe<\x00script>\xc3(\n", n/20)),
			check: func(t *testing.T, h string) {
				if strings.ContainsRune(h, 0) {
					t.Error("NUL in output")
				}
			}},
	}
}

// depth returns how deep the elements of h nest.
func depth(h string) int {
	z := xhtml.NewTokenizer(strings.NewReader(h))
	d, deepest := 0, 0
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return deepest
		case xhtml.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "br", "hr", "img", "input", "wbr":
			default:
				d++
				deepest = max(deepest, d)
			}
		case xhtml.EndTagToken:
			d--
		}
	}
}

func TestRenderMaxBytes(t *testing.T) {
	src := []byte("line one\nline two\nline three\n")
	doc := Render(src, Options{MaxBytes: 20})
	if !doc.Truncated || string(doc.HTML) != "<p>line one\nline two</p>\n" {
		t.Errorf("cut to 20 bytes: %q, Truncated %v", doc.HTML, doc.Truncated)
	}
	doc = Render(src, Options{MaxBytes: len(src)})
	if doc.Truncated {
		t.Error("input of exactly MaxBytes truncated")
	}
	doc = Render([]byte("ééééé"), Options{MaxBytes: 5}) // one line: cut inside a character
	if !doc.Truncated || string(doc.HTML) != "<p>éé</p>\n" {
		t.Errorf("one line cut to 5 bytes: %q", doc.HTML)
	}
}

func TestRenderInvalidUTF8(t *testing.T) {
	doc := Render([]byte("# a\x00b\n\nc\xffd [e\x00](https://x.example/\xff) <a href=\"java\x00script:alert(1)\">f</a>"), Options{})
	h := string(doc.HTML)
	if msg := checkSafe(h); msg != "" {
		t.Fatalf("unsafe output (%s): %s", msg, h)
	}
	if strings.ContainsRune(h, 0) || !strings.Contains(h, "a\uFFFDb") || !strings.Contains(h, "c\uFFFDd") {
		t.Errorf("NUL and invalid UTF-8 not replaced: %q", h)
	}
	if doc.Title != "a\uFFFDb" {
		t.Errorf("Title = %q", doc.Title)
	}
}

func TestFrontMatter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		fields map[string]string // nil: no front matter, rest is src
		rest   string
	}{
		{name: "tfplugindocs", src: "---\npage_title: \"aws_instance Resource - terraform-provider-aws\"\nsubcategory: \"EC2\"\ndescription: |-\n  Provides an EC2 instance.\n---\n\n# aws_instance\n",
			fields: map[string]string{"page_title": "aws_instance Resource - terraform-provider-aws", "subcategory": "EC2", "description": "Provides an EC2 instance."},
			rest:   "\n# aws_instance\n"},
		{name: "CRLF", src: "---\r\npage_title: x\r\nsubcategory: \"\"\r\n---\r\n# x\r\n",
			fields: map[string]string{"page_title": "x", "subcategory": ""}, rest: "# x\r\n"},
		{name: "none", src: "# x\n---\na: b\n---\n"},
		{name: "not at the start", src: "\n---\na: b\n---\n"},
		{name: "unterminated", src: "---\npage_title: x\n\n# x\n"},
		{name: "closed by end of input", src: "---\na: b\n---", fields: map[string]string{"a": "b"}, rest: ""},
		{name: "empty", src: "---\n---\nbody", fields: map[string]string{}, rest: "body"},
		{name: "non-string values", src: "---\nn: 3\nb: true\nnull_value:\nlist: [1, 2]\nmap: {a: b}\ns: text\n---\nbody",
			fields: map[string]string{"n": "3", "b": "true", "s": "text"}, rest: "body"},
		{name: "not a mapping", src: "---\n- a\n- b\n---\nbody"},
		{name: "not YAML", src: "---\na: [unclosed\n---\nbody"},
		{name: "dashes without newline", src: "----\na: b\n---\n"},
		{name: "too long", src: "---\na: " + rep("x", maxFrontMatter+10) + "\n---\nbody"},
		{name: "alias bomb", src: "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: ok\n---\nbody",
			fields: map[string]string{"e": "ok"}, rest: "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, rest := FrontMatter([]byte(tc.src))
			wantRest := tc.rest
			if tc.fields == nil {
				wantRest = tc.src
			}
			if !reflect.DeepEqual(fields, tc.fields) || string(rest) != wantRest {
				t.Errorf("FrontMatter = %#v, %q\nwant %#v, %q", fields, rest, tc.fields, wantRest)
			}
		})
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"# Title\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>",
		"<a href=\"&#106;avascript:alert(1)\">x</a>",
		"| a | b |\n|---|---|\n| `x` | [y](../y.md) |\n",
		"- [ ] task\n- [x] done\n\n```go\ncode\n```\n",
		"<svg><script>alert(1)</script></svg><iframe src=x></iframe>",
		"![a](data:image/svg+xml;base64,PHN2Zz4=) [b](#anchor) www.example.com",
		"> > > - - 1. nested\n\n<details><summary>s</summary>x</details>",
		"[a]: javascript:alert(1)\n\n[a] [b][a]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		doc := Render(src, Options{Link: docsLink, MaxBytes: 64 << 10})
		if msg := checkSafe(string(doc.HTML)); msg != "" {
			t.Fatalf("unsafe output (%s) for %q:\n%s", msg, src, doc.HTML)
		}
		for _, h := range doc.Headings {
			if !strings.HasPrefix(h.ID, HeadingIDPrefix) {
				t.Fatalf("heading id %q", h.ID)
			}
		}
	})
}

// BenchmarkRender renders documents of the sizes Trove serves: a module README, a large
// provider resource page, and a hostile 1 MiB document of each bound's kind.
func BenchmarkRender(b *testing.B) {
	docs := []struct {
		name string
		src  []byte
	}{
		{"readme-5KB", readme(5 << 10)},
		{"resource-50KB", resourceDoc(50 << 10)},
	}
	for _, d := range docs {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(d.src)))
			for b.Loop() {
				Render(d.src, Options{Link: docsLink})
			}
		})
	}
	b.Run("hostile-1MiB", func(b *testing.B) {
		b.ReportAllocs()
		for _, d := range hostileDocs(DefaultMaxBytes) {
			b.Run(strings.ReplaceAll(d.name, " ", "_"), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(min(len(d.src), DefaultMaxBytes)))
				for b.Loop() {
					Render(d.src, Options{})
				}
			})
		}
	})
}

// readme returns a module README of about size bytes: prose, a usage example, inputs
// and outputs tables, badges and links.
func readme(size int) []byte {
	var b bytes.Buffer
	b.WriteString("# terraform-aws-vpc\n\n[![CI](https://github.com/example/vpc/actions/workflows/ci.yml/badge.svg)](https://github.com/example/vpc/actions) [![Registry](https://img.shields.io/badge/registry-vpc-blue)](https://registry.example.com/)\n\n")
	b.WriteString("Terraform module which creates **VPC** resources on AWS, with _public_ and _private_ subnets, NAT gateways and [flow logs](docs/flow-logs.md).\n\n")
	b.WriteString("## Usage\n\n```hcl\nmodule \"vpc\" {\n  source  = \"registry.example.com/example/vpc/aws\"\n  version = \"~> 5.0\"\n\n  name = \"my-vpc\"\n  cidr = \"10.0.0.0/16\"\n\n  azs             = [\"eu-west-1a\", \"eu-west-1b\", \"eu-west-1c\"]\n  private_subnets = [\"10.0.1.0/24\", \"10.0.2.0/24\", \"10.0.3.0/24\"]\n}\n```\n\n")
	b.WriteString("## Inputs\n\n| Name | Description | Type | Default | Required |\n|------|-------------|------|---------|:--------:|\n")
	for i := 0; b.Len() < size*3/4; i++ {
		fmt.Fprintf(&b, "| <a name=\"input_name_%d\"></a> [name\\_%d](#input\\_name\\_%d) | Name to be used on all the resources as identifier, see [docs](https://docs.example.com/%d). | `string` | `\"\"` | no |\n", i, i, i, i)
	}
	b.WriteString("\n## Outputs\n\n- [x] `vpc_id`: the ID of the VPC\n- [ ] ~~`vpc_arn`~~: deprecated\n\n> **Note** See <https://www.example.com/notes> and www.example.org.\n\n")
	for b.Len() < size {
		b.WriteString("Lorem ipsum dolor sit amet, *consectetur* adipiscing elit, sed do `eiusmod` tempor incididunt ut labore.\n")
	}
	return b.Bytes()
}

// resourceDoc returns a tfplugindocs resource page of about size bytes: front matter,
// examples, and long nested argument lists.
func resourceDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString("---\npage_title: \"aws_instance Resource - terraform-provider-aws\"\nsubcategory: \"EC2\"\n---\n\n# aws_instance (Resource)\n\nProvides an EC2 instance resource.\n\n## Example Usage\n\n```terraform\nresource \"aws_instance\" \"web\" {\n  ami           = data.aws_ami.ubuntu.id\n  instance_type = \"t3.micro\"\n\n  tags = {\n    Name = \"HelloWorld\"\n  }\n}\n```\n\n<!-- schema generated by tfplugindocs -->\n## Schema\n\n### Required\n\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "- `argument_%d` (String) The argument %d. See [the guide](../guides/argument-%d.md) and [AWS](https://docs.aws.amazon.com/ec2/%d). Valid values are `a`, `b` and `c`.\n", i, i, i, i)
		if i%10 == 9 {
			fmt.Fprintf(&b, "\n<a id=\"nestedblock--block_%d\"></a>\n### Nested Schema for `block_%d`\n\nOptional:\n\n  - `enabled` (Boolean) Whether **block %d** is enabled.\n    - nested detail with `code`\n\n| Attribute | Type |\n|---|---|\n| `id` | `String` |\n\n", i, i, i)
		}
	}
	return b.Bytes()
}
