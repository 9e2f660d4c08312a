package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"trove.dev/trove/internal/web"
)

// The web UI as a user sees it, in headless Chromium (browser_test.go)
// against a real `trove serve` whose data is set up with the trove CLI.
// Pages are checked by what they show; every page's console must stay
// free of exceptions and Content-Security-Policy violations.
// TROVE_UPDATE_SCREENSHOTS=1 writes the screenshots into docs/images.

// networkReadme is the README of the network module: a heading, a table
// and a code block, rendered from Markdown by the module page.
const networkReadme = "# Network for AWS\n\n" +
	"Creates a VPC with public and private subnets.\n\n" +
	"| Input | Meaning |\n|---|---|\n| `name` | the VPC's name |\n| `cidr` | its address range |\n\n" +
	"```hcl\nmodule \"network\" {\n  source = \"trove.localhost/acme/network/aws\"\n  name   = \"prod\"\n}\n```\n"

// writeNetworkModule writes version of the network module: inputs of
// every kind (one required, one sensitive), an output, a resource and a
// submodule.
func writeNetworkModule(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "README.md", []byte(networkReadme+"\nVersion "+version+".\n"))
	writeFile(t, dir, "main.tf", []byte(`variable "name" {
  type        = string
  description = "Name of the VPC and prefix of its subnets."
}

variable "cidr" {
  type        = string
  default     = "10.0.0.0/16"
  description = "Address range of the VPC."
}

variable "admin_password" {
  type        = string
  default     = null
  sensitive   = true
  description = "Password of the bastion's admin account."
}

variable "tags" {
  type        = map(string)
  default     = {}
  description = "Tags of every resource."
}

resource "terraform_data" "vpc" {
  input = var.name
}

output "vpc_id" {
  value       = terraform_data.vpc.id
  description = "ID of the VPC."
}
`))
	sub := filepath.Join(dir, "modules", "subnets")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "main.tf", []byte(`variable "zones" {
  type        = list(string)
  description = "Availability zones to spread the subnets over."
}

output "subnet_ids" {
  value       = var.zones
  description = "IDs of the subnets."
}
`))
	return dir
}

// setupModules publishes acme/network/aws 1.0.0 and 1.1.0 and
// acme/storage/aws 1.0.0 into the public namespace acme.
func setupModules(t *testing.T, srv *troveServer) {
	t.Helper()
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	token := createToken(t, srv, "publish")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		srv.mustCLI(t, token, "module", "publish", namespace+"/network/aws", v, writeNetworkModule(t, v))
	}
	srv.mustCLI(t, token, "module", "publish", namespace+"/storage/aws", "1.0.0", writeModuleDir(t, "storage", "1.0.0", ""))
}

// TestWebUIModule is a visitor finding a module and reading its page:
// the search as you type, the module page's README, inputs and outputs,
// the version selector and the Copy button of the usage snippet.
func TestWebUIModule(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	setupModules(t, srv)
	shots := screenshots(t)
	tab := newBrowser(t, srv)
	const modulePath = "/modules/acme/network/aws"

	t.Run("search and open a module", func(t *testing.T) {
		b := tab.in(t)
		b.open("/", 200)
		if got := b.text("main h1"); !strings.Contains(got, "Providers and modules at") {
			t.Errorf("home page heading %q", got)
		}
		b.waitText(".results", "acme/network/aws")
		b.screenshot(shots, "home")

		// The header's search form, as a visitor submits it.
		b.step("typing into the header's search box", chromedp.SendKeys(chromedp.CSS("#site-search"), "nothing-matches-this"))
		b.navigating("submitting the header's search form", 200, chromedp.Submit(chromedp.CSS("#site-search")))
		if u := b.location(); u.Path != web.SearchPath || u.Query().Get("q") != "nothing-matches-this" {
			t.Fatalf("the header's search form went to %s", u)
		}
		b.waitText("#results", "No results for “nothing-matches-this”.")

		// The search as you type replaces the results without a new page.
		marker := eval[bool](b, "window.__samePage = true")
		b.step("typing into the live search box",
			chromedp.Clear(chromedp.CSS("#live-search")),
			chromedp.SendKeys(chromedp.CSS("#live-search"), "network"))
		b.step("waiting for the live results", chromedp.WaitVisible(chromedp.CSS(`#results a.title[href="`+modulePath+`"]`)))
		if !marker || !eval[bool](b, "window.__samePage === true") {
			t.Error("the live search loaded a new page; want the results replaced in place")
		}
		if n := eval[int](b, `document.querySelectorAll('#results a.title[href^="/modules/acme/storage/"]').length`); n != 0 {
			t.Errorf("the results for %q list the storage module", "network")
		}
		if u := b.location(); u.Query().Get("q") != "network" {
			t.Errorf("after the live search the address is %s, want q=network in it", u)
		}
		b.screenshot(shots, "search")

		b.navigating("clicking the result", 200, chromedp.Click(chromedp.CSS(`#results a.title[href="`+modulePath+`"]`)))
		if u := b.location(); u.Path != modulePath {
			t.Fatalf("the result link opened %s, want %s", u, modulePath)
		}
		if got := b.text("main h1"); got != "acme/network/aws" {
			t.Errorf("module page heading %q", got)
		}
		// The README: its heading, its table and its code block are shown.
		// (The UI does not render Markdown yet: renderMarkdown shows the
		// README as preformatted text, so the test checks the text only.)
		readme := b.text("#readme .readme")
		for _, want := range []string{"Network for AWS", "the VPC's name", `name   = "prod"`} {
			if !strings.Contains(readme, want) {
				t.Errorf("the README shown lacks %q:\n%s", want, readme)
			}
		}
		// Inputs with their badges; outputs.
		inputs := tableRows(b, "#inputs table")
		wantInputs := map[string][]string{
			"name":           {"required", "string", "Name of the VPC and prefix of its subnets."},
			"cidr":           {"string", `"10.0.0.0/16"`, "Address range of the VPC."},
			"admin_password": {"sensitive", "string", "Password of the bastion's admin account."},
			"tags":           {"map(string)", "{}", "Tags of every resource."},
		}
		for name, want := range wantInputs {
			row, ok := inputs[name]
			if !ok {
				t.Errorf("the inputs table has no row for %s: %q", name, inputs)
				continue
			}
			for _, w := range want {
				if !strings.Contains(row, w) {
					t.Errorf("input %s's row %q lacks %q", name, row, w)
				}
			}
		}
		if strings.Contains(inputs["name"], "sensitive") || strings.Contains(inputs["admin_password"], "required") || strings.Contains(inputs["cidr"], "required") {
			t.Errorf("badges on the wrong inputs: %q", inputs)
		}
		outputs := tableRows(b, "#outputs table")
		if row := outputs["vpc_id"]; !strings.Contains(row, "ID of the VPC.") || len(outputs) != 1 {
			t.Errorf("outputs table %q, want vpc_id with its description", outputs)
		}
		if got := b.text("#submodules summary"); !strings.Contains(got, "modules/subnets") {
			t.Errorf("submodules %q, want modules/subnets", got)
		}
		if n := eval[int](b, "document.querySelectorAll('.notice.warn').length"); n != 0 {
			t.Errorf("the latest version's page shows %d warnings", n)
		}
		b.screenshot(shots, "module")
	})

	t.Run("copy the usage snippet", func(t *testing.T) {
		b := tab.in(t)
		b.open(modulePath, 200)
		b.grantClipboard()
		snippet := b.text("#module-snippet")
		wantSource := `source  = "` + moduleHost + `/acme/network/aws"`
		for _, want := range []string{wantSource, `version = "1.1.0"`, "name = null # string"} {
			if !strings.Contains(snippet, want) {
				t.Errorf("the snippet %q lacks %q", snippet, want)
			}
		}
		b.step("clicking Copy", chromedp.Click(chromedp.CSS(`button.copy[data-copy="module-snippet"]`)))
		b.waitText(`button.copy[data-copy="module-snippet"]`, "Copied")
		copied := run(b, "reading the clipboard", chromedp.Evaluate[string]("navigator.clipboard.readText()", chromedp.EvalAwaitPromise))
		if copied != snippet+"\n" && copied != snippet {
			t.Errorf("the clipboard holds %q, want the snippet %q", copied, snippet)
		}
		for _, want := range []string{wantSource, `version = "1.1.0"`} {
			if !strings.Contains(copied, want) {
				t.Errorf("the clipboard %q lacks %q", copied, want)
			}
		}
	})

	t.Run("switch versions", func(t *testing.T) {
		b := tab.in(t)
		b.open(modulePath, 200)
		if got := run(b, "reading the version", chromedp.Value(chromedp.CSS("#version-select"))); got != "1.1.0" {
			t.Errorf("the version selector shows %q, want the latest, 1.1.0", got)
		}
		if eval[bool](b, "!document.getElementById('version-go').hidden") {
			t.Error("the selector's Show button is visible; the script hides it")
		}
		// As a user picks an option: the value changes and the select
		// fires change (what Playwright's selectOption does too).
		b.navigating("choosing 1.0.0", 200, chromedp.Steps(
			chromedp.SetValue(chromedp.CSS("#version-select"), "1.0.0"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("version-select").dispatchEvent(new Event("change", {bubbles: true}))`),
		))
		if u := b.location(); !strings.HasSuffix(u.Path, "/1.0.0") {
			t.Errorf("after choosing 1.0.0 the address is %s, want it to end with /1.0.0", u)
		}
		b.waitText(".notice.warn", "The latest version is 1.1.0")
		if got := b.text("#readme .readme"); !strings.Contains(got, "Version 1.0.0.") {
			t.Errorf("the README of 1.0.0 shows %q", got)
		}
		if got := run(b, "reading the version", chromedp.Value(chromedp.CSS("#version-select"))); got != "1.0.0" {
			t.Errorf("the version selector shows %q on 1.0.0's page", got)
		}
		if got := b.text("#module-snippet"); !strings.Contains(got, `version = "1.0.0"`) {
			t.Errorf("the snippet of 1.0.0 is %q", got)
		}
	})
}

// tableRows maps the first cell's code of each body row of the table to
// the row's text.
func tableRows(b *browserTab, sel string) map[string]string {
	b.t.Helper()
	b.step("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	raw := eval[string](b, `JSON.stringify(Object.fromEntries([...document.querySelectorAll(`+jsString(sel+" tbody tr")+`)].map(
		tr => [tr.cells[0].querySelector("code")?.textContent ?? "", tr.innerText.replace(/\s+/g, " ").trim()])))`)
	rows := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		b.t.Fatalf("rows of %s: %v", sel, err)
	}
	return rows
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
