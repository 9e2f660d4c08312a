package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
		b.open("/search?q=aws", 200)
		b.waitText("#results", "1–2 of 2 results")
		b.screenshot(shots, "search")
		b.open("/", 200)

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

		b.navigating("clicking the result", 200, chromedp.Click(chromedp.CSS(`#results a.title[href="`+modulePath+`"]`)))
		if u := b.location(); u.Path != modulePath {
			t.Fatalf("the result link opened %s, want %s", u, modulePath)
		}
		if got := b.text("main h1"); got != "acme/network/aws" {
			t.Errorf("module page heading %q", got)
		}
		// The README is rendered: its heading, its table and its code
		// block are elements, not Markdown text.
		if got := b.text("#readme .readme h2"); got != "Network for AWS" {
			t.Errorf("the README's heading is %q", got)
		}
		if got := b.text("#readme .readme table"); !strings.Contains(got, "the VPC's name") || strings.Contains(got, "|") {
			t.Errorf("the README's table shows %q", got)
		}
		if got := b.text("#readme .readme pre code.language-hcl"); !strings.Contains(got, `name   = "prod"`) {
			t.Errorf("the README's code block shows %q", got)
		}
		// Inputs with their badges; outputs.
		inputs := inputItems(b, "#inputs")
		wantInputs := map[string][]string{
			"name":           {"required", "string", "Name of the VPC and prefix of its subnets."},
			"cidr":           {"string", `Default: "10.0.0.0/16"`, "Address range of the VPC."},
			"admin_password": {"sensitive", "string", "Password of the bastion's admin account."},
			"tags":           {"map(string)", "Default: {}", "Tags of every resource."},
		}
		for name, want := range wantInputs {
			row, ok := inputs[name]
			if !ok {
				t.Errorf("the inputs list has no entry for %s: %q", name, inputs)
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
		for _, want := range []string{wantSource, `version = "~> 1.1"`, `name = "" # string: Name of the VPC and prefix of its subnets.`} {
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
		for _, want := range []string{wantSource, `version = "~> 1.1"`} {
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
		// One script sets the value and fires change: the navigation it
		// starts must not race a second step.
		b.navigating("choosing 1.0.0", 200, chromedp.Evaluate[chromedp.Void](
			`(() => { const s = document.getElementById("version-select"); s.value = "1.0.0"; s.dispatchEvent(new Event("change", {bubbles: true})); })()`))
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
		if got := b.text("#module-snippet"); !strings.Contains(got, `version = "~> 1.0.0"`) {
			t.Errorf("the snippet of 1.0.0 is %q", got)
		}
	})
}

// inputItems maps the name of each input listed in the section sel to the
// text of its entry.
func inputItems(b *browserTab, sel string) map[string]string {
	b.t.Helper()
	b.step("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	raw := eval[string](b, `JSON.stringify(Object.fromEntries([...document.querySelectorAll(`+jsString(sel+" li.input")+`)].map(
		li => [li.querySelector("code.name")?.textContent ?? "", li.innerText.replace(/\s+/g, " ").trim()])))`)
	items := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		b.t.Fatalf("inputs of %s: %v", sel, err)
	}
	return items
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

// webPassword is the password of the web UI tests' users.
const webPassword = "correct horse battery staple"

// TestWebUITokens is a user signing in, creating a token in the UI, using
// it against the API, revoking it, and signing out.
func TestWebUITokens(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLIStdin(t, srv.AdminToken, webPassword+"\n", "user", "create", "carol", "--password-stdin")
	shots := screenshots(t)
	b := newBrowser(t, srv)

	b.open("/sign-in", 200)
	b.screenshot(shots, "sign-in")
	b.signIn("carol", webPassword)
	session := b.cookie("__Host-trove-session")
	if session == nil || !session.HTTPOnly || !session.Secure {
		t.Fatalf("after signing in the session cookie is %+v, want an HttpOnly, Secure cookie", session)
	}

	// Create a token.
	b.open(web.TokensPath, 200)
	b.step("filling the token form",
		chromedp.SendKeys(chromedp.CSS("#t-desc"), "ci pipeline"),
		chromedp.SetValue(chromedp.CSS("#t-access"), "read"),
	)
	b.navigating("creating the token", 200, chromedp.Click(chromedp.CSS(`form[action="/settings/tokens"] button[type=submit]`)))
	heading := b.text("#created-h")
	id := regexp.MustCompile(`tok_[0-9a-f]+`).FindString(heading)
	if id == "" {
		t.Fatalf("the created token's heading %q names no token ID", heading)
	}
	secret := b.text("#new-token")
	if !strings.HasPrefix(secret, "trove_") {
		t.Fatalf("the new token's secret %q does not start with trove_", secret)
	}
	row := b.text(`tr:has(button[aria-label="Revoke token ` + id + `"])`)
	for _, want := range []string{id, "ci pipeline", "read"} {
		if !strings.Contains(row, want) {
			t.Errorf("the token's row %q lacks %q", row, want)
		}
	}

	// The secret works against the API, as carol.
	whoami := func() response {
		return srv.do(t, http.MethodGet, "/api/v1/whoami", http.Header{"Authorization": {"Bearer " + secret}})
	}
	if r := whoami(); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"carol"`) {
		t.Fatalf("whoami with the new token: %d %s, want 200 naming carol", r.Status, r.Body)
	}

	// The screenshot never shows the secret, even a test one.
	b.step("hiding the secret", chromedp.Evaluate[chromedp.Void](`document.getElementById("new-token").textContent = "trove_…(the new token)…"`))
	b.screenshot(shots, "tokens")

	// The secret is shown once: the page is the answer to the POST only.
	b.open(web.TokensPath, 200)
	if n := eval[int](b, `document.querySelectorAll("#new-token").length`); n != 0 {
		t.Error("the token's secret is shown again on the next visit of the tokens page")
	}
	if html := eval[string](b, "document.documentElement.outerHTML"); strings.Contains(html, secret) {
		t.Error("the tokens page shows the secret again")
	}

	// Revoke it in its row.
	b.navigating("revoking the token", 200, chromedp.Click(chromedp.CSS(`button[aria-label="Revoke token `+id+`"]`)))
	b.waitText(".notice.ok", "Token "+id+" is revoked.")
	if n := eval[int](b, `document.querySelectorAll('button[aria-label="Revoke token `+id+`"]').length`); n != 0 {
		t.Error("the revoked token still has a Revoke button")
	}
	if r := whoami(); r.Status != http.StatusUnauthorized {
		t.Errorf("whoami with the revoked token: %d %s, want 401", r.Status, r.Body)
	}

	// Sign out with the header's button: the session ends on the server,
	// so the old cookie, put back into the browser, opens nothing.
	b.navigating("signing out", 200, chromedp.Click(chromedp.CSS(`form[action="/sign-out"] button`)))
	if got := b.text("header .who a"); got != "Sign in" {
		t.Errorf("after signing out the header shows %q, want Sign in", got)
	}
	if c := b.cookie("__Host-trove-session"); c != nil {
		t.Errorf("after signing out the browser still has the session cookie")
	}
	b.setCookie(session)
	b.open(web.TokensPath, 200) // the redirect's target
	if u := b.location(); u.Path != web.SignInPath || u.Query().Get("next") != web.TokensPath {
		t.Errorf("the tokens page with the signed-out session's cookie went to %s, want the sign-in page", u)
	}
}

// TestWebUIPrivateNamespace: to a signed-in user who is not a member, a
// private namespace and its module leave no trace in any page: not on the
// home page, not in search (results, filters), and their own pages answer
// exactly like names that never existed. Made a reader, the user sees
// them.
func TestWebUIPrivateNamespace(t *testing.T) {
	const (
		secret     = "secretns"
		secretPath = "/modules/secretns/vault/aws"
	)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	setupModules(t, srv) // public modules, so that pages are not empty
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", secret)
	srv.mustCLI(t, srv.AdminToken, "module", "publish", secret+"/vault/aws", "1.0.0", writeModuleDir(t, "vault", "1.0.0", ""))
	srv.mustCLIStdin(t, srv.AdminToken, webPassword+"\n", "user", "create", "dave", "--password-stdin")
	b := newBrowser(t, srv)
	b.signIn("dave", webPassword)

	// traces lists where the page mentions word: "element@attribute" or
	// "element#text", the element named by tag, id and classes.
	traces := func(b *browserTab, word string) []string {
		var out []string
		raw := eval[string](b, `JSON.stringify((() => {
			const word = `+jsString(word)+`, hits = [];
			const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + [...e.classList].map(c => "." + c).join("");
			const w = document.createTreeWalker(document, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT | NodeFilter.SHOW_COMMENT);
			for (let n = w.currentNode; n; n = w.nextNode()) {
				if (n.nodeType === Node.ELEMENT_NODE) {
					for (const a of n.attributes) if (a.value.toLowerCase().includes(word)) hits.push(name(n) + "@" + a.name);
				} else if (n.nodeValue !== null && n.nodeValue.toLowerCase().includes(word)) {
					hits.push(name(n.parentNode) + "#" + (n.nodeType === Node.TEXT_NODE ? "text" : "comment"));
				}
			}
			return hits;
		})())`)
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			b.t.Fatal(err)
		}
		return out
	}
	noTrace := func(b *browserTab, where string) {
		b.t.Helper()
		if got := traces(b, secret); len(got) > 0 {
			b.t.Errorf("%s mentions %s in %q", where, secret, got)
		}
		if got := traces(b, "vault"); len(got) > 0 {
			b.t.Errorf("%s mentions the private module (vault) in %q", where, got)
		}
	}

	t.Run("nothing of it while not a member", func(t *testing.T) {
		b := b.in(t)
		b.open("/", 200)
		b.waitText(".results", "acme/network/aws")
		noTrace(b, "the home page")

		// A search for the namespace: the words typed are echoed back in
		// the page's title, both search boxes and the "No results" line,
		// and nowhere else.
		b.open("/search?q="+secret, 200)
		b.waitText("#results", "No results for “"+secret+"”.")
		want := []string{"title#text", "input#site-search@value", "input#live-search@value", "p.meta#text"}
		if got := traces(b, secret); !slices.Equal(got, want) {
			t.Errorf("the search for %s mentions it in %q, want only the echoes of the query %q", secret, got, want)
		}
		if got := traces(b, "vault"); len(got) > 0 {
			t.Errorf("the search for %s mentions the private module in %q", secret, got)
		}
		if n := eval[int](b, `document.querySelectorAll("#results a.title").length`); n != 0 {
			t.Errorf("the search for %s lists %d results", secret, n)
		}

		// The module's name, typed into the live search.
		b.open("/search", 200)
		b.step("typing the module's name", chromedp.SendKeys(chromedp.CSS("#live-search"), "vault"))
		b.waitText("#results", "No results for “vault”.")
		if got := traces(b, secret); len(got) > 0 {
			t.Errorf("the live search for vault mentions %s in %q", secret, got)
		}
		// Every module, and the namespace filter's choices.
		b.open("/search?kind=module", 200)
		b.waitText("#results", "acme/network/aws")
		noTrace(b, "the list of every module")

		// The namespace's and the module's own pages are "not found",
		// exactly as for names that never existed.
		for _, p := range []struct{ path, twin string }{
			{"/namespaces/" + secret, "/namespaces/nosuchns"},
			{secretPath, "/modules/nosuchns/vault/aws"},
			{secretPath + "/1.0.0", "/modules/nosuchns/vault/aws/1.0.0"},
		} {
			b.open(p.path, 404)
			if got := b.text("main h1"); got != "Not found" {
				t.Errorf("%s: heading %q, want Not found", p.path, got)
			}
			noTrace(b, p.path)
			page := eval[string](b, "document.documentElement.outerHTML")
			b.open(p.twin, 404)
			if twin := eval[string](b, "document.documentElement.outerHTML"); twin != page {
				t.Errorf("%s differs from %s, a name that never existed:\n%s\n---\n%s", p.path, p.twin, page, twin)
			}
		}
	})

	t.Run("visible once a reader", func(t *testing.T) {
		b := b.in(t)
		srv.mustCLI(t, srv.AdminToken, "member", "add", secret, "dave", "--role", "reader")
		// Rights are cached for up to 5 s: poll, within a bound.
		deadline := time.Now().Add(20 * time.Second)
		for {
			status := 0
			ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
			resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.addr(secretPath)))
			cancel()
			if err != nil {
				t.Fatalf("opening %s: %v", secretPath, err)
			}
			if resp != nil {
				status = int(resp.Status)
			}
			if status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still answers %d 20 s after dave became a reader", secretPath, status)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if got := b.text("main h1"); !strings.HasPrefix(got, secret+"/vault/aws") || !strings.Contains(got, "private") {
			t.Errorf("module page heading %q, want %s/vault/aws with a private badge", got, secret)
		}
		b.open("/search?q=vault", 200)
		b.step("waiting for the result", chromedp.WaitVisible(chromedp.CSS(`#results a.title[href="`+secretPath+`"]`)))
		b.open("/", 200)
		b.step("waiting for the namespace", chromedp.WaitVisible(chromedp.CSS(`aside a[href="/namespaces/`+secret+`"]`)))
	})
}

// TestWebUIContentSecurityPolicy: every page's Content-Security-Policy
// allows no inline script or style, and the pages run under it without a
// violation (the console checks of every browser test). The browser's
// reports are checked to reach the test: an inline script injected into
// a page is refused and reported, and so is an uncaught exception.
func TestWebUIContentSecurityPolicy(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	setupModules(t, srv)

	t.Run("headers", func(t *testing.T) {
		browserGet := http.Header{"Accept": {"text/html,application/xhtml+xml"}}
		for _, p := range []struct {
			path   string
			status int
		}{
			{"/", 200},
			{"/search?q=network", 200},
			{"/search?q=network&fragment=1", 200},
			{"/namespaces/acme", 200},
			{"/modules/acme/network/aws", 200},
			{"/modules/acme/network/aws/1.0.0", 200},
			{"/sign-in", 200},
			{"/settings/tokens", 200}, // redirected to the sign-in page
			{"/modules/acme/nothing/aws", 404},
			{"/no/such/page", 404},
		} {
			r := srv.do(t, http.MethodGet, p.path, browserGet)
			if r.Status != p.status {
				t.Errorf("GET %s: status %d, want %d", p.path, r.Status, p.status)
			}
			csp := r.Header.Get("Content-Security-Policy")
			switch {
			case csp == "":
				t.Errorf("GET %s: no Content-Security-Policy", p.path)
			case strings.Contains(csp, "'unsafe-inline'") || strings.Contains(csp, "'unsafe-eval'"):
				t.Errorf("GET %s: Content-Security-Policy %q allows inline script or style", p.path, csp)
			case r.Status == 200 && !strings.Contains(csp, "script-src 'self'"):
				t.Errorf("GET %s: Content-Security-Policy %q, want script-src 'self'", p.path, csp)
			}
		}
	})

	t.Run("the browser reports violations and exceptions", func(t *testing.T) {
		b := newBrowser(t, srv)
		b.open("/modules/acme/network/aws", 200)
		b.step("injecting an inline script and an uncaught exception", chromedp.Evaluate[chromedp.Void](`
			const s = document.createElement("script");
			s.textContent = "document.title = 'inline script ran'";
			document.head.appendChild(s);
			setTimeout(() => { throw new Error("canary exception"); }, 0);`))
		// Wait for both reports, within bounds.
		var csp, exception bool
		var seen []string
		deadline := time.Now().Add(stepTimeout)
		for !(csp && exception) && time.Now().Before(deadline) {
			eval[int](b, "1") // a round trip: earlier events have arrived
			for _, p := range b.log.take() {
				seen = append(seen, p)
				csp = csp || strings.Contains(p, "Content Security Policy")
				exception = exception || strings.Contains(p, "canary exception")
			}
			if !(csp && exception) {
				time.Sleep(100 * time.Millisecond)
			}
		}
		t.Logf("the console reported: %q", seen)
		if !csp || !exception {
			t.Errorf("the console reported %q; want a Content Security Policy violation and the canary exception", seen)
		}
		if title := eval[string](b, "document.title"); title == "inline script ran" {
			t.Error("an inline script ran despite the Content-Security-Policy")
		}
	})
}

// TestWebUIProviderDocs is a user reading a private provider's
// documentation: the provider page with its overview and navigation, a
// click to a resource's page, and the links between pages.
func TestWebUIProviderDocs(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	key := setupKey(t, srv)
	token := createToken(t, srv, "publish")
	publish(t, srv, token, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	docs := t.TempDir()
	for name, body := range map[string]string{
		"docs/index.md": "---\npage_title: \"Provider: Example\"\n---\n# Example Provider\n\nThe example provider manages things. Start with [example_thing](resources/thing.md).\n",
		"docs/resources/thing.md": "---\npage_title: \"example_thing Resource\"\nsubcategory: \"Things\"\ndescription: |-\n  Manages a thing.\n---\n# example_thing (Resource)\n\n" +
			"## Example Usage\n\n```terraform\nresource \"example_thing\" \"this\" {\n  name = \"hello\"\n}\n```\n\n## Schema\n\n### Required\n\n- `name` (String) Name of the thing.\n\nBack to the [overview](../index.md).\n",
		"docs/data-sources/thing.md": "# example_thing (Data Source)\n\nReads a thing.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(docs, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, docs, name, []byte(body))
	}
	if out := srv.mustCLI(t, token, "provider", "docs", "upload", namespace+"/"+providerType, "1.0.0", docs); !strings.Contains(out, "3 pages") {
		t.Fatalf("docs upload: %s", out)
	}
	shots := screenshots(t)
	b := newBrowser(t, srv).in(t)

	base := "/providers/" + namespace + "/" + providerType
	b.open(base, 200)
	if got := b.text("main h1"); got != namespace+"/"+providerType {
		t.Errorf("provider page heading %q", got)
	}
	if got := b.text("main section.readme h2"); got != "Example Provider" {
		t.Errorf("the overview's heading is %q", got)
	}
	if got := strings.ToLower(b.text("nav.docnav")); !strings.Contains(got, "resources") || !strings.Contains(got, "data sources") || !strings.Contains(got, "example_thing") {
		t.Errorf("the documentation's navigation shows %q", got)
	}
	if got := b.text("#provider-snippet"); !strings.Contains(got, `source  = "trove.localhost/acme/example"`) {
		t.Errorf("the provider's snippet is %q", got)
	}
	b.screenshot(shots, "provider")

	thing := base + "/1.0.0/docs/resources/thing"
	b.navigating("clicking the resource in the navigation", 200, chromedp.Click(chromedp.CSS(`nav.docnav a[href="`+thing+`"]`)))
	if u := b.location(); u.Path != thing {
		t.Fatalf("the navigation opened %s, want %s", u, thing)
	}
	if got := b.text("article.readme h2"); got != "example_thing (Resource)" {
		t.Errorf("the resource page's title is %q", got)
	}
	if got := b.text("article.readme pre code.language-terraform"); !strings.Contains(got, `resource "example_thing" "this"`) {
		t.Errorf("the example usage shows %q", got)
	}
	if got := b.text(`nav.docnav a[aria-current="page"]`); got != "example_thing" {
		t.Errorf("the navigation marks %q as the current page", got)
	}
	b.screenshot(shots, "provider-docs")

	b.navigating("following the link back to the overview", 200, chromedp.Click(chromedp.CSS(`article.readme a[href="`+base+`/1.0.0"]`)))
	if got := b.text("main section.readme h2"); got != "Example Provider" {
		t.Errorf("the overview link led to a page whose overview heading is %q", got)
	}
	b.checkConsole()
}
