package markdown

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"
)

// terraformDocsReadme is a README as terraform-docs writes it: a table of
// contents of fragment links, and tables whose rows carry <a name> anchors that
// the first column links to.
func terraformDocsReadme(inputs int) string {
	var b strings.Builder
	b.WriteString("# AWS VPC Terraform module\n\n")
	b.WriteString("- [Usage](#usage)\n- [Requirements](#requirements)\n- [Inputs](#inputs)\n- [Outputs](#outputs)\n- [Notes & caveats](#notes--caveats)\n\n")
	b.WriteString("## Usage\n\n```hcl\nmodule \"vpc\" {\n  source = \"x\"\n}\n```\n\n## Notes & caveats\n\nNone.\n\n")
	b.WriteString("<!-- BEGIN_TF_DOCS -->\n## Requirements\n\n| Name | Version |\n|------|---------|\n")
	b.WriteString("| <a name=\"requirement_terraform\"></a> [terraform](#requirement\\_terraform) | >= 1.0 |\n\n")
	b.WriteString("## Inputs\n\n| Name | Description | Type | Default | Required |\n|------|-------------|------|---------|:--------:|\n")
	for i := range inputs {
		fmt.Fprintf(&b, "| <a name=\"input_name_%d\"></a> [name\\_%d](#input\\_name\\_%d) | Input %d. | `string` | `null` | no |\n", i, i, i, i)
	}
	b.WriteString("\n## Outputs\n\n| Name | Description |\n|------|-------------|\n")
	b.WriteString("| <a name=\"output_vpc_id\"></a> [vpc\\_id](#output\\_vpc\\_id) | The ID of the VPC |\n<!-- END_TF_DOCS -->\n")
	return b.String()
}

// fragmentTargets returns the fragment links of h and its ids.
func fragmentTargets(t *testing.T, h string) (links []string, ids map[string]int) {
	t.Helper()
	ids = map[string]int{}
	z := xhtml.NewTokenizer(strings.NewReader(h))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return links, ids
		}
		if tt != xhtml.StartTagToken {
			continue
		}
		for _, a := range z.Token().Attr {
			switch {
			case a.Key == "id":
				ids[a.Val]++
			case a.Key == "href" && strings.HasPrefix(a.Val, "#"):
				links = append(links, a.Val[1:])
			}
		}
	}
}

// TestRenderAnchors: every fragment link of a terraform-docs README leads to an
// element of the rendered document, and ids are unique.
func TestRenderAnchors(t *testing.T) {
	for _, scope := range []string{"", "submodule-vpc"} {
		doc := Render([]byte(terraformDocsReadme(50)), Options{IDScope: scope})
		h := string(doc.HTML)
		links, ids := fragmentTargets(t, h)
		if len(links) != 5+1+50+1 {
			t.Errorf("scope %q: %d fragment links, want %d", scope, len(links), 57)
		}
		for _, l := range links {
			if ids[l] != 1 {
				t.Errorf("scope %q: the link #%s leads to %d elements", scope, l, ids[l])
			}
		}
		for id, n := range ids {
			if n != 1 {
				t.Errorf("scope %q: id %s is given %d times", scope, id, n)
			}
		}
		prefix := "h-"
		if scope != "" {
			prefix = "h-" + scope + ":"
		}
		for _, want := range []string{`<a id="` + prefix + `input_name_7">`, `href="#` + prefix + `notes--caveats"`, `<h2 id="` + prefix + `inputs">`} {
			if scope == "" && !strings.Contains(h, want) {
				t.Errorf("scope %q: no %s in\n%.2000s", scope, want, h)
			}
		}
		for _, hd := range doc.Headings {
			if ids[hd.ID] != 1 {
				t.Errorf("scope %q: Headings names %s, which the HTML does not have once", scope, hd.ID)
			}
		}
		if msg := checkSafe(h); msg != "" {
			t.Errorf("scope %q: unsafe output (%s)", scope, msg)
		}
	}
}

// TestRenderHeadingOffset: with HeadingOffset 1 no h1 is left, raw HTML's
// included, and levels stop at h6.
func TestRenderHeadingOffset(t *testing.T) {
	src := "# Title\n\n<h1 align=\"center\">Raw</h1>\n\n## Two\n\n###### Six\n\n<h6>raw six</h6>\n"
	doc := Render([]byte(src), Options{HeadingOffset: 1})
	h := string(doc.HTML)
	for _, want := range []string{`<h2 id="h-title">Title</h2>`, `<h2>Raw</h2>`, `<h3 id="h-two">Two</h3>`, `<h6 id="h-six">Six</h6>`, `<h6>raw six</h6>`} {
		if !strings.Contains(h, want) {
			t.Errorf("no %s in\n%s", want, h)
		}
	}
	if strings.Contains(h, "<h1") || strings.Contains(h, "</h1>") || strings.Contains(h, "<h7") {
		t.Errorf("an h1 or h7 is left:\n%s", h)
	}
	if doc.Title != "Title" || doc.Headings[0].Level != 1 {
		t.Errorf("Title %q, Headings %+v: want the levels as written", doc.Title, doc.Headings)
	}
}

// TestRenderAlerts: GitHub alerts and tfplugindocs notes become notice boxes.
func TestRenderAlerts(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      []string
		notWant   []string
	}{
		{name: "note", src: "> [!NOTE]\n> Useful information.\n",
			want:    []string{`<div class="alert alert-note" role="note">`, "<p><strong>Note</strong></p>", "<p>Useful information.</p>"},
			notWant: []string{"[!NOTE]", "<blockquote"}},
		{name: "every kind, any case", src: "> [!tip]\n> a\n\n> [!Important]\n> b\n\n> [!WARNING]\n> c\n\n> [!CAUTION]\n> d\n",
			want: []string{`alert alert-tip`, `alert alert-important`, `alert alert-warning`, `alert alert-caution`, "<strong>Caution</strong>"}},
		{name: "several blocks", src: "> [!WARNING]\n> First.\n>\n> - a list\n>\n> ```hcl\n> x = 1\n> ```\n",
			want: []string{`<div class="alert alert-warning" role="note">`, "<p>First.</p>", "<li>a list</li>", `<code class="language-hcl">`}},
		{name: "not a marker", src: "> [!NOTE] on the same line\n\n> [!UNKNOWN]\n> x\n\n> text\n> [!NOTE]\n",
			want: []string{"<blockquote>"}, notWant: []string{"alert"}},
		{name: "tfplugindocs notes", src: "-> **Note:** Hashes are computed.\n\n~> **Warning:** This destroys data.\n\n!> **Danger:** Secrets are stored in state.\n",
			want: []string{`<div class="alert alert-note" role="note">` + "\n<p><strong>Note:</strong> Hashes are computed.</p>",
				`<div class="alert alert-warning" role="note">` + "\n<p><strong>Warning:</strong> This destroys data.</p>",
				`<div class="alert alert-caution" role="note">` + "\n<p><strong>Danger:</strong> Secrets are stored in state.</p>"},
			notWant: []string{"-&gt;", "~&gt;", "!&gt;"}},
		{name: "arrows that are no notes", src: "a -> b\n\n->x\n\n`->` code\n",
			notWant: []string{"alert"}},
		{name: "XSS in an alert", src: "> [!WARNING]\n> <script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3))\n\n-> <iframe src=\"https://evil.example\"></iframe><a href=\"javascript:alert(4)\">y</a>\n",
			want: []string{`alert alert-warning`, `alert alert-note`}, notWant: []string{"<script", "onerror", `href="javascript:`, "<iframe", "<img"}},
		{name: "forged alert divs", src: "<div class=\"alert alert-warning\" role=\"note\" data-trove-alert=\"x warning\" tabindex=\"0\" aria-label=\"Table 1 of x\">fake</div>\n",
			want: []string{"<div>fake</div>"}, notWant: []string{"alert", "role=", "tabindex", "aria-label"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := string(Render([]byte(c.src), Options{}).HTML)
			for _, w := range c.want {
				if !strings.Contains(h, w) {
					t.Errorf("want %q in\n%s", w, h)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(h, w) {
					t.Errorf("do not want %q in\n%s", w, h)
				}
			}
			if msg := checkSafe(h); msg != "" {
				t.Errorf("unsafe output (%s)", msg)
			}
		})
	}
}

// TestRenderIDsHostile: ids a document writes cannot take the ids of the page around
// it (which never start with "h-") nor those of another document's scope, and a
// repeated id is given once.
func TestRenderIDsHostile(t *testing.T) {
	src := "# Readme\n\n<a name=\"readme\"></a><a id=\"inputs\"></a><a name=\"version-select\"></a>" +
		"<a name=\"h-sub:usage\"></a><a name=\"x&quot; onclick=&quot;alert(1)\"></a><a name=\"a b\"></a>\n\n" +
		"## Usage\n\n<h2 id=\"usage\">again</h2> <a name=\"usage\"></a>\n\n[u](#usage) [x](#sub:usage)\n"
	h := string(Render([]byte(src), Options{}).HTML)
	_, ids := fragmentTargets(t, h)
	for id, n := range ids {
		if !regexp.MustCompile(`^h-[\p{L}\p{N}_.-]+$`).MatchString(id) || n != 1 {
			t.Errorf("id %q given %d times in\n%s", id, n, h)
		}
	}
	if ids["h-usage"] != 1 || ids["h-readme"] != 1 || ids["h-inputs"] != 1 {
		t.Errorf("ids %v", ids)
	}
	if strings.Contains(h, "onclick") || strings.Contains(h, `id="readme"`) || strings.Contains(h, `id="inputs"`) {
		t.Errorf("hostile ids survived:\n%s", h)
	}
	scoped := string(Render([]byte(src), Options{IDScope: "Sub!"}).HTML)
	if !strings.Contains(scoped, `id="h-sub:usage"`) || !strings.Contains(scoped, `href="#h-sub:usage"`) || strings.Contains(scoped, `id="h-usage"`) {
		t.Errorf("scoped ids:\n%s", scoped)
	}
}

// TestRenderScrollRegions: tables scroll in a focusable, labelled region and code
// blocks are focusable, raw HTML's too; a stray </table> closes nothing else.
func TestRenderScrollRegions(t *testing.T) {
	src := "| a | b |\n|---|---|\n| 1 | 2 |\n\n<table><tr><td>raw</td></tr></table>\n\n</table></div>\n\n```\ncode\n```\n\n<pre>raw pre</pre>\n"
	h := string(Render([]byte(src), Options{Label: "the README of modules/vpc"}).HTML)
	for _, want := range []string{
		`<div class="table-scroll" role="region" tabindex="0" aria-label="Table 1 of the README of modules/vpc"><table>`,
		`<div class="table-scroll" role="region" tabindex="0" aria-label="Table 2 of the README of modules/vpc"><table>`,
		`<pre tabindex="0"><code>code`, `<pre tabindex="0">raw pre</pre>`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("no %s in\n%s", want, h)
		}
	}
	if n, m := strings.Count(h, "<div"), strings.Count(h, "</div>"); n != 2 || m != 3 {
		// The stray </div> of the source stays (bluemonday keeps it); the stray
		// </table> adds none.
		t.Errorf("%d div tags, %d ends in\n%s", n, m, h)
	}
}
