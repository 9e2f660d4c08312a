package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"trove.dev/trove/internal/web"
)

// The accessibility and layout test: every kind of page, at a desktop
// (1280 px) and a phone (390 px) width, checked with axe-core (no serious
// or critical violation) and for the defects of issue 22: no page scrolls
// sideways, one h1 and unique ids per page, every in-page link leads
// somewhere, scrollable regions are focusable, a module's inputs fit their
// column, README tables keep their words whole, the provider panel stays
// in its column and the version selector sits near the top on a phone.

// requireAxe returns the source of axe.min.js (TROVE_TEST_AXE), failing the
// test with the command that provides it when it is missing.
func requireAxe(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TROVE_TEST_AXE")
	if path == "" {
		t.Fatal("TROVE_TEST_AXE is not set: the accessibility test injects axe-core into the pages; " +
			"run 'source scripts/testenv/axe.sh' (it installs axe-core with npm into a cache directory once) and run again")
	}
	src, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(src), "axe") {
		t.Fatalf("TROVE_TEST_AXE=%s is not axe.min.js (%v): run 'source scripts/testenv/axe.sh' again", path, err)
	}
	return string(src)
}

// bigModuleInputs is the number of inputs of the big module: many, as
// real modules have (terraform-aws-modules/vpc has 236).
const bigModuleInputs = 60

// writeBigModule writes a module like the large public ones: many inputs
// with long object types, long defaults and long descriptions, a README
// as terraform-docs writes it (a table of contents, anchors in wide
// tables), GitHub alerts, and a submodule whose README has the same
// headings.
func writeBigModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var tf, rows strings.Builder
	for i := range bigModuleInputs {
		name := fmt.Sprintf("subnet_configuration_%02d", i)
		desc := fmt.Sprintf("Settings of subnet group %d: the CIDR blocks, the availability zones to spread them over, whether instances get public addresses, and the tags of every subnet, route table and network ACL of the group (see https://docs.example.com/networking/subnets/groups/%d/configuration-reference-for-very-long-urls).", i, i)
		switch {
		case i < 5: // required
			fmt.Fprintf(&tf, "variable %q {\n  type = object({\n    cidr_blocks = list(string)\n    availability_zones = list(string)\n    map_public_ip_on_launch = optional(bool, false)\n    tags = optional(map(string), {})\n  })\n  description = %q\n}\n\n", name, desc)
		case i%3 == 0:
			fmt.Fprintf(&tf, "variable %q {\n  type = map(object({ cidr_block = string, availability_zone = string, tags = map(string) }))\n  default = { primary = { cidr_block = \"10.0.%d.0/24\", availability_zone = \"eu-west-1a\", tags = { Name = \"primary-subnet-with-a-rather-long-name-%d\" } } }\n  description = %q\n}\n\n", name, i, i, desc)
		default:
			fmt.Fprintf(&tf, "variable %q {\n  type = string\n  default = \"arn:aws:iam::123456789012:policy/service-role/AWSLambdaBasicExecutionRole-0123456789abcdef%d\"\n  description = %q\n}\n\n", name, i, desc)
		}
		fmt.Fprintf(&rows, "| <a name=\"input_%s\"></a> [%s](#input\\_%s) | %s | <pre>object({<br>    cidr_blocks = list(string)<br>    availability_zones = list(string)<br>  })</pre> | `{}` | %s |\n",
			name, strings.ReplaceAll(name, "_", "\\_"), strings.ReplaceAll(name, "_", "\\_"), desc, map[bool]string{true: "yes", false: "no"}[i < 5])
	}
	tf.WriteString("resource \"terraform_data\" \"this\" {\n  input = var.subnet_configuration_00\n}\n\noutput \"vpc_id\" {\n  value = terraform_data.this.id\n  description = \"The ID of the VPC\"\n}\n")
	readme := "<h1 align=\"center\">AWS VPC Terraform module</h1>\n\n" +
		"Terraform module which creates VPC resources on AWS.\n\n" +
		"- [Usage](#usage)\n- [Notes & caveats](#notes--caveats)\n- [Requirements](#requirements)\n- [Inputs](#inputs)\n- [Outputs](#outputs)\n\n" +
		"> [!WARNING]\n> Version 6 renames every subnet input: read the [upgrade notes](#notes--caveats) first.\n\n" +
		"> [!NOTE]\n> The module needs `terraform >= 1.5`.\n\n" +
		"## Usage\n\n```hcl\nmodule \"vpc\" {\n  source  = \"trove.localhost/acme/vpc/aws\"\n  version = \"~> 1.2\"\n\n  subnet_configuration_00 = { cidr_blocks = [\"10.0.0.0/24\", \"10.0.1.0/24\", \"10.0.2.0/24\"], availability_zones = [\"eu-west-1a\", \"eu-west-1b\", \"eu-west-1c\"] }\n}\n```\n\n" +
		"## Notes & caveats\n\nNone for now.\n\n" +
		"<!-- BEGIN_TF_DOCS -->\n## Requirements\n\n| Name | Version |\n|------|---------|\n" +
		"| <a name=\"requirement_terraform\"></a> [terraform](#requirement\\_terraform) | >= 1.5 |\n" +
		"| <a name=\"requirement_aws\"></a> [aws](#requirement\\_aws) | >= 5.46 |\n\n" +
		"## Inputs\n\n| Name | Description | Type | Default | Required |\n|------|-------------|------|---------|:--------:|\n" + rows.String() +
		"\n## Outputs\n\n| Name | Description |\n|------|-------------|\n| <a name=\"output_vpc_id\"></a> [vpc\\_id](#output\\_vpc\\_id) | The ID of the VPC |\n<!-- END_TF_DOCS -->\n"
	writeFile(t, dir, "main.tf", []byte(tf.String()))
	writeFile(t, dir, "README.md", []byte(readme))
	sub := filepath.Join(dir, "modules", "endpoints")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "main.tf", []byte("variable \"vpc_id\" {\n  type = string\n  description = \"The VPC.\"\n}\n"))
	writeFile(t, sub, "README.md", []byte("# Endpoints\n\n- [Usage](#usage)\n- [Inputs](#inputs)\n\n## Usage\n\nCall it.\n\n## Inputs\n\n| Name | Type |\n|---|---|\n| <a name=\"input_vpc_id\"></a> [vpc\\_id](#input\\_vpc\\_id) | `string` |\n"))
	return dir
}

// writeExampleDocs writes a tfplugindocs docs/ tree with notes (->, ~>,
// !>), alerts and many resources with tfplugindocs' long titles.
func writeExampleDocs(t *testing.T) string {
	t.Helper()
	docs := t.TempDir()
	files := map[string]string{
		"docs/index.md": "---\npage_title: \"Provider: Example\"\n---\n# Example Provider\n\nThe example provider manages things.\n\n" +
			"-> **Note:** Version 2 of the provider needs Terraform 1.5.\n\n" +
			"> [!TIP]\n> Start with [example_thing_00](resources/thing_00.md).\n\n" +
			"## Example Usage\n\n```terraform\nprovider \"example\" {\n  endpoint = \"https://api.example.com/v1/with/a/rather/long/path/that/does/not/fit/on/a/phone/screen\"\n}\n```\n",
	}
	for i := range 12 {
		files[fmt.Sprintf("docs/resources/thing_%02d.md", i)] = fmt.Sprintf("---\npage_title: \"example_thing_%02d Resource - terraform-provider-example\"\nsubcategory: \"Things\"\ndescription: |-\n  Manages a thing.\n---\n# example_thing_%02d (Resource)\n\n"+
			"~> **Warning:** Deleting a thing deletes its data.\n\n!> **Danger:** The secret is stored in the state in plain text.\n\n"+
			"## Example Usage\n\n```terraform\nresource \"example_thing_%02d\" \"this\" {\n  name = \"hello\"\n}\n```\n\n"+
			"## Schema\n\n### Required\n\n- `name` (String) Name of the thing.\n\n### Timeouts\n\n| Operation | Default | Description |\n|---|---|---|\n| create | 20m | How long creating a thing may take before the provider gives up and reports an error. |\n", i, i, i)
	}
	files["docs/data-sources/thing.md"] = "---\npage_title: \"example_thing Data Source - terraform-provider-example\"\n---\n# example_thing (Data Source)\n\nReads a thing.\n"
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(docs, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, docs, name, []byte(body))
	}
	return docs
}

// pageProblems is the JavaScript that lists a page's structural defects
// (see the comment at the top of this file) as JSON.
const pageProblems = `JSON.stringify((() => {
	const p = [];
	const de = document.documentElement;
	if (de.scrollWidth > window.innerWidth + 1) {
		const wide = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
			.filter(e => !e.parentElement.closest(".scroll, .table-scroll, pre"))
			.slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + "." + [...e.classList].join(".") + " (" + Math.round(e.getBoundingClientRect().right) + " px)");
		p.push("the page scrolls sideways: " + de.scrollWidth + " px in a " + window.innerWidth + " px window; wide: " + wide.join(", "));
	}
	const h1 = document.querySelectorAll("h1").length;
	if (h1 !== 1) p.push(h1 + " h1 elements");
	const ids = {};
	for (const e of document.querySelectorAll("[id]")) ids[e.id] = (ids[e.id] || 0) + 1;
	const dup = Object.keys(ids).filter(k => ids[k] > 1);
	if (dup.length) p.push("duplicate ids: " + dup.slice(0, 10).join(", "));
	const dead = [];
	for (const a of document.querySelectorAll("a[href^='#']")) {
		const id = decodeURIComponent(a.getAttribute("href").slice(1));
		if (id !== "" && !document.getElementById(id)) dead.push(a.getAttribute("href"));
	}
	if (dead.length) p.push(dead.length + " in-page links lead nowhere: " + dead.slice(0, 10).join(", "));
	const searches = [...document.querySelectorAll("[role=search]")].map(e => e.getAttribute("aria-label") || "");
	if (searches.some(l => l === "") || new Set(searches).size !== searches.length) p.push("search landmarks not labelled apart: " + JSON.stringify(searches));
	for (const e of document.querySelectorAll("pre, .scroll, .table-scroll")) {
		if (e.scrollWidth > e.clientWidth + 1 && e.tabIndex < 0) p.push("a scrollable " + e.tagName.toLowerCase() + " is not focusable");
	}
	return p;
})())`

// axeRun runs axe-core on the page and returns its serious and critical
// violations, one line each.
const axeRun = `axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
	r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v =>
		v.impact + " " + v.id + " (" + v.help + "): " + v.nodes.slice(0, 5).map(n => n.target.join(" ") + " — " + (n.failureSummary || "").replace(/\s+/g, " ")).join("; "))))`

// TestWebUIAccessibility: see the comment at the top of this file.
func TestWebUIAccessibility(t *testing.T) {
	axe := requireAxe(t)
	shots := screenshots(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	b := newBrowser(t, srv)

	// Before anything is public, an anonymous visitor is told to sign
	// in, not that nothing is published.
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "hidden")
	srv.mustCLI(t, srv.AdminToken, "module", "publish", "hidden/secret/aws", "1.0.0", writeModuleDir(t, "secret", "1.0.0", ""))
	b.open("/", 200)
	if got := b.text("main"); !strings.Contains(got, "Sign in to see private namespaces") || strings.Contains(got, "Nothing is published yet") {
		t.Errorf("the home page of an anonymous visitor with nothing public says %q", got)
	}

	// The fixtures.
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	key := setupKey(t, srv)
	token := createToken(t, srv, "publish")
	publish(t, srv, token, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	if out := srv.mustCLI(t, token, "provider", "docs", "upload", namespace+"/"+providerType, "1.0.0", writeExampleDocs(t)); !strings.Contains(out, "14 pages") {
		t.Fatalf("docs upload: %s", out)
	}
	srv.mustCLI(t, token, "module", "publish", namespace+"/vpc/aws", "1.2.3", writeBigModule(t))
	srv.mustCLIStdin(t, srv.AdminToken, webPassword+"\n", "user", "create", "carol", "--password-stdin")
	srv.mustCLI(t, srv.AdminToken, "member", "add", namespace, "carol", "--role", "admin")
	ciToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", namespace, "--scope", "read", "--description",
		"a CI pipeline token with a long description that names the repository, the branch and the environment it deploys to"))
	carolToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--user", "carol", "--namespace", namespace, "--scope", "read"))
	// Downloads through the protocols, for the chart and the consumers
	// section: a user, a service token and anonymous visitors, with
	// both clients.
	for i, d := range []struct{ token, agent string }{
		{carolToken, "Terraform/1.9.5 (+https://www.terraform.io)"}, {ciToken, "OpenTofu/1.12.6"},
		{"", "OpenTofu/1.12.6"}, {"", "curl/8.5.0"}, {carolToken, "Terraform/1.10.0-beta1"},
	} {
		h := http.Header{"User-Agent": {d.agent}}
		if d.token != "" {
			h.Set("Authorization", "Bearer "+d.token)
		}
		if r := srv.do(t, http.MethodGet, downloadURL(t, srv, "1.0.0", []string{hostPlatform, otherPlatform}[i%2]), h); r.Status != http.StatusOK {
			t.Fatalf("provider download: %d %s", r.Status, r.Body)
		}
		if r := srv.do(t, http.MethodGet, srv.modulesBase(t)+namespace+"/vpc/aws/1.2.3/download", h); r.Status != http.StatusNoContent {
			t.Fatalf("module download: %d %s", r.Status, r.Body)
		}
	}

	// What an air-gap bundle brings with provenance: a module version and
	// a provider (into the mirror), signed by the exporting Trove's
	// managed key.
	exporter := startTrove(t, filepath.Join(t.TempDir(), "exporter"))
	exportKey, exportToken := setupNamespace(t, exporter)
	exporter.mustCLI(t, exporter.AdminToken, "key", "generate", namespace)
	publish(t, exporter, exportToken, packageRelease(t, exportKey, releaseSpec{Version: "2.0.0"}))
	exporter.mustCLI(t, exportToken, "module", "publish", namespace+"/dns/aws", "1.0.0", writeModuleDir(t, "dns", "1.0.0", ""))
	bundle := filepath.Join(t.TempDir(), "bundle.tar")
	exported := exporter.Host + "/" + namespace + "/" + providerType
	exporter.mustCLI(t, exporter.AdminToken, "bundle", "export", "--output", bundle,
		"--provider", exported+"@2.0.0", "--module", namespace+"/dns/aws@1.0.0", "--platform", hostPlatform)
	exporter.stop(t)
	srv.mustCLI(t, srv.AdminToken, "mirror", "upstream", "set", exporter.Host, "--service-url", "https://127.0.0.1:1/v1/providers/", "--allow", "*/*")
	srv.mustCLI(t, srv.AdminToken, "bundle", "import", bundle)

	const (
		modulePath = "/modules/acme/vpc/aws"
		docPath    = "/providers/acme/example/1.0.0/docs/resources/thing_03"
	)
	pages := []struct {
		name, path string
		signedIn   bool
		check      func(b *browserTab, width int)
	}{
		{name: "home", path: "/"},
		{name: "namespace", path: "/namespaces/acme"},
		{name: "search", path: "/search?q=vpc"},
		{name: "provider", path: "/providers/acme/example", check: checkProviderPage},
		{name: "provider docs page", path: docPath, check: checkDocsPage},
		{name: "module", path: modulePath, check: checkModulePage},
		{name: "tokens", path: web.TokensPath, signedIn: true},
		{name: "namespace settings", path: "/namespaces/acme/settings", signedIn: true},
		{name: "git sources", path: "/namespaces/acme/git-sources", signedIn: true},
		// The consumers section, shown to carol (an admin of acme): its
		// report, and its error for a bad form.
		{name: "provider with consumers", path: "/providers/acme/example?days=90", signedIn: true, check: checkConsumers},
		{name: "module with consumers", path: modulePath + "?versions=%3E%3D1.0", signedIn: true, check: checkConsumers},
		{name: "consumers refused", path: "/providers/acme/example?days=0&versions=%3Cnot%3E", signedIn: true},
		// Provenance an air-gap bundle carried (the mirror's page needs a
		// signed-in visitor).
		{name: "imported module", path: "/modules/acme/dns/aws/1.0.0", check: checkImportedProvenance},
		{name: "mirrored provider", path: "/mirror/" + exporter.Host + "/acme/example", signedIn: true, check: checkImportedProvenance},
	}
	signedIn := false
	for _, width := range []int{1280, 390} {
		for _, p := range pages {
			t.Run(fmt.Sprintf("%s at %d px", p.name, width), func(t *testing.T) {
				b := b.in(t)
				if p.signedIn && !signedIn {
					b.signIn("carol", webPassword)
					signedIn = true
				}
				b.step("setting the window's width", chromedp.EmulateViewport(int64(width), 900))
				b.open(p.path, 200)
				var problems []string
				if err := json.Unmarshal([]byte(eval[string](b, pageProblems)), &problems); err != nil {
					t.Fatal(err)
				}
				for _, pr := range problems {
					t.Errorf("%s at %d px: %s", p.path, width, pr)
				}
				b.step("injecting axe-core", chromedp.Evaluate[chromedp.Void](axe))
				raw := run(b, "running axe-core", chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
				var violations []string
				if err := json.Unmarshal([]byte(raw), &violations); err != nil {
					t.Fatalf("axe-core's answer %q: %v", raw, err)
				}
				for _, v := range violations {
					t.Errorf("axe-core on %s at %d px: %s", p.path, width, v)
				}
				if p.check != nil {
					p.check(b, width)
				}
				if p.path == modulePath && width < 600 {
					// What a phone shows first (the window, not the whole page).
					b.open(p.path, 200)
					png := run(b, "taking a screenshot", chromedp.CaptureScreenshot())
					path := filepath.Join(shots, "ui-module-phone.png")
					if err := os.WriteFile(path, png, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// checkModulePage: the inputs fit their column, required and optional
// apart, with a filter; the README's tables keep their words whole and
// scroll in a focusable region, its table of contents and anchors all
// resolve, alerts are notice boxes; the snippet has a version constraint
// and placeholders; on a phone the version selector is above the README.
func checkModulePage(b *browserTab, width int) {
	t := b.t
	t.Helper()
	var m struct {
		InputsWidth, InputsScroll, ColumnWidth        float64
		Required, Optional, Items                     int
		RegionsBad, HeaderLines                       []string
		Regions, FragmentLinks, Alerts                int
		SelectTop, ReadmeTop, AsideLeft, ContentRight float64
	}
	raw := eval[string](b, `JSON.stringify((() => {
		const r = s => document.querySelector(s).getBoundingClientRect();
		const inputs = document.getElementById("inputs");
		const m = {InputsWidth: inputs.getBoundingClientRect().width, InputsScroll: inputs.scrollWidth, ColumnWidth: document.querySelector(".layout > .content").clientWidth,
			Required: document.querySelectorAll("#inputs-list ul.inputs")[0].querySelectorAll("li.input").length,
			Optional: document.querySelectorAll("#inputs-list ul.inputs")[1].querySelectorAll("li.input").length,
			Items: document.querySelectorAll("#inputs li.input").length, RegionsBad: [], HeaderLines: []};
		const regions = document.querySelectorAll("#readme .readme .table-scroll");
		m.Regions = regions.length;
		for (const d of regions) {
			if (d.getAttribute("role") !== "region" || d.tabIndex !== 0 || !d.getAttribute("aria-label")) m.RegionsBad.push(d.outerHTML.slice(0, 120));
		}
		for (const th of document.querySelectorAll("#readme .readme th")) {
			const range = document.createRange();
			range.selectNodeContents(th);
			const lines = new Set([...range.getClientRects()].map(x => Math.round(x.top))).size;
			if (lines > 1) m.HeaderLines.push(th.textContent + ": " + lines + " lines");
		}
		m.FragmentLinks = document.querySelectorAll("#readme a[href^='#']").length;
		m.Alerts = document.querySelectorAll("#readme .alert.alert-warning, #readme .alert.alert-note").length;
		m.SelectTop = r("#version-select").top; m.ReadmeTop = r("#readme").top;
		m.AsideLeft = r("aside.side").left; m.ContentRight = r(".layout > .content").right;
		return m;
	})())`)
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	if m.InputsScroll > m.InputsWidth+1 || m.InputsWidth > float64(m.ColumnWidth)+1 {
		t.Errorf("at %d px the inputs are %.0f px wide (%.0f px scrolled) in a %.0f px column", width, m.InputsWidth, m.InputsScroll, m.ColumnWidth)
	}
	if m.Required != 5 || m.Optional != bigModuleInputs-5 {
		t.Errorf("%d required and %d optional inputs listed apart, want 5 and %d", m.Required, m.Optional, bigModuleInputs-5)
	}
	if m.Regions < 3 || len(m.RegionsBad) > 0 {
		t.Errorf("README tables: %d regions, not focusable and labelled: %q", m.Regions, m.RegionsBad)
	}
	if len(m.HeaderLines) > 0 {
		t.Errorf("at %d px README table headers wrap: %q", width, m.HeaderLines)
	}
	if m.FragmentLinks < bigModuleInputs+5 {
		t.Errorf("the README has %d in-page links, want its table of contents and every input's", m.FragmentLinks)
	}
	if m.Alerts != 2 {
		t.Errorf("the README shows %d notice boxes, want its warning and note", m.Alerts)
	}
	if width < 600 {
		if m.SelectTop > m.ReadmeTop {
			t.Errorf("at %d px the version selector is at %.0f px, below the README (%.0f px)", width, m.SelectTop, m.ReadmeTop)
		}
	} else if m.AsideLeft < m.ContentRight {
		t.Errorf("at %d px the side panel (left %.0f px) overlaps the content (right %.0f px)", width, m.AsideLeft, m.ContentRight)
	}
	snippet := b.text("#module-snippet")
	for _, want := range []string{`version = "~> 1.2"`, `subnet_configuration_00 = {} # object(`} {
		if !strings.Contains(snippet, want) {
			t.Errorf("the snippet %q lacks %q", snippet, want)
		}
	}
	// The filter: what matches shows, the rest hides.
	b.step("filtering the inputs", chromedp.SendKeys(chromedp.CSS("#inputs-filter"), "configuration_1"))
	if n := eval[int](b, `document.querySelectorAll("#inputs li.input:not([hidden])").length`); n != 10 {
		t.Errorf("the filter configuration_1 shows %d inputs, want 10", n)
	}
	b.waitText("#inputs-count", "10 of 60 inputs")
	if eval[bool](b, `!document.querySelector("#inputs-required").hidden`) {
		t.Error("the filter leaves the heading of the required inputs, none of which matches")
	}
}

// checkConsumers: the consumers section lists the consumers and the
// client mix, and its table scrolls inside its own region.
func checkConsumers(b *browserTab, width int) {
	t := b.t
	table := b.text("#consumers table")
	for _, want := range []string{"user:carol", "anonymous", "token:", "terraform 1.9.5", "opentofu 1.12.6"} {
		if !strings.Contains(table, want) {
			t.Errorf("at %d px the consumers table lacks %q: %q", width, want, table)
		}
	}
	if mix := b.text("#consumers ul.clients"); !strings.Contains(mix, "opentofu 1.12.6: 2 downloads") || !strings.Contains(mix, "other: 1 downloads") {
		t.Errorf("at %d px the client mix is %q", width, mix)
	}
}

// checkProviderPage: the facts of the provider panel stay in it, and the
// overview's notes and alerts are notice boxes.
func checkProviderPage(b *browserTab, width int) {
	checkPanel(b, width)
	if n := eval[int](b, `document.querySelectorAll("section.readme .alert.alert-note, section.readme .alert.alert-tip").length`); n != 2 {
		b.t.Errorf("the overview shows %d notice boxes, want the -> note and the tip", n)
	}
}

// checkDocsPage: the panel's facts stay in it, the tfplugindocs notes are
// notice boxes, the navigation shows short names and filters them.
func checkDocsPage(b *browserTab, width int) {
	t := b.t
	checkPanel(b, width)
	if n := eval[int](b, `document.querySelectorAll("article.readme .alert.alert-warning, article.readme .alert.alert-caution").length`); n != 2 {
		t.Errorf("the page shows %d notice boxes, want the ~> and !> notes", n)
	}
	if got := b.text(`nav.docnav a[aria-current="page"]`); got != "example_thing_03" {
		t.Errorf("the navigation names the current page %q, want example_thing_03", got)
	}
	b.step("filtering the navigation", chromedp.SendKeys(chromedp.CSS("#docnav-filter"), "thing_1"))
	if got := eval[string](b, `[...document.querySelectorAll("nav.docnav .docnav-group li:not([hidden])")].map(l => l.textContent).join(",")`); got != "example_thing_10,example_thing_11" {
		t.Errorf("the filter thing_1 shows %q", got)
	}
	if eval[bool](b, `[...document.querySelectorAll("nav.docnav .docnav-group")].find(g => g.textContent.includes("Data sources")).hidden !== true`) {
		t.Error("the filter leaves the data sources' group, none of whose pages matches")
	}
}

// checkPanel: every fact of the provider panel is inside the panel, the
// panel does not overlap the documentation, and on a phone the version
// selector comes before it.
func checkPanel(b *browserTab, width int) {
	raw := eval[string](b, `JSON.stringify((() => {
		const a = document.querySelector("aside.side").getBoundingClientRect();
		const c = document.querySelector(".layout > .content").getBoundingClientRect();
		const out = [...document.querySelectorAll("aside.side dd, aside.side dd *")].filter(e => e.getBoundingClientRect().right > a.right + 0.5)
			.map(e => e.textContent.slice(0, 60));
		if (window.innerWidth > 900 && a.right > c.left) out.push("the panel's right edge " + a.right + " passes the content's left edge " + c.left);
		const sel = document.getElementById("version-select").getBoundingClientRect();
		if (window.innerWidth < 600 && sel.top > c.top) out.push("the version selector (" + sel.top + " px) is below the documentation (" + c.top + " px)");
		return out;
	})())`)
	var out []string
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		b.t.Fatal(err)
	}
	if len(out) > 0 {
		b.t.Errorf("at %d px the provider panel spills: %q", width, out)
	}
}

// checkImportedProvenance: the provenance section says the statement was
// signed by the exporting Trove and carried by an air-gap bundle, and
// that it verified.
func checkImportedProvenance(b *browserTab, width int) {
	t := b.t
	t.Helper()
	got := b.text("#provenance-h + p")
	if !strings.Contains(got, "signed by the exporting Trove") || !strings.Contains(got, "carried here by an air-gap bundle") {
		t.Errorf("at %d px the provenance section says %q", width, got)
	}
}
