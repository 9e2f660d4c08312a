package web_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/trovetest"
)

// env is a running Trove with an admin client, public namespace "acme",
// private namespace "secret", and users "alice" (admin of secret) and
// "bob" (no membership), both with password "correct horse battery".
type env struct {
	srv   *trovetest.Server
	admin *client.Client
}

const password = "correct horse battery"

func start(t *testing.T, opts ...trovetest.Options) *env {
	t.Helper()
	srv := trovetest.Start(t, opts...)
	admin, err := client.New(srv.URL, srv.AdminToken, client.WithCAFile(srv.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, admin: admin}
	ctx := context.Background()
	for _, ns := range []apispec.CreateNamespaceRequest{{Name: "acme", Visibility: "public"}, {Name: "secret", Description: "hush-hush things"}} {
		if _, err := admin.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := admin.CreateUser(ctx, apispec.CreateUserRequest{Name: u, Password: password}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.SetMember(ctx, "secret", "alice", "admin"); err != nil {
		t.Fatal(err)
	}
	return e
}

// publishModule publishes a module from files.
func (e *env) publishModule(t *testing.T, ns, name, system, version string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := modules.PackArchive(&buf, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.PublishModule(context.Background(), client.ModuleUpload{Namespace: ns, Name: name, System: system,
		Version: version, Archive: &buf, ContentType: apispec.ModuleArchiveTarGz}); err != nil {
		t.Fatal(err)
	}
}

var networkModule = map[string]string{
	"README.md": "# Network\n\nBuilds a network.\n\n## Usage\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
	"main.tf": `variable "cidr" {
  type        = string
  description = "The CIDR block."
}
variable "tags" {
  type    = map(string)
  default = { team = "platform" }
}
variable "api_key" {
  type      = string
  default   = "hunter2-default"
  sensitive = true
}
output "id" {
  value       = "x"
  description = "The network's ID."
}
`,
	"modules/subnet/main.tf": `variable "zone" {}`,
}

// browser is a cookie-keeping HTTP client, as a browser is.
type browser struct {
	t      *testing.T
	e      *env
	client *http.Client
}

func (e *env) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: e.srv.HTTPClient().Transport, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, e: e, client: c}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	req.Header.Set("Accept", "text/html")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, resp.Header, string(body)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.srv.URL+path, nil)
	return b.do(req)
}

func (b *browser) post(path string, form url.Values, header ...string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.srv.URL)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the first form of p.
func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", p.body)
	}
	return m[1]
}

func (b *browser) signIn(user, pw string) page {
	b.t.Helper()
	form := b.get("/sign-in")
	return b.post("/sign-in", url.Values{"csrf": {csrf(b.t, form)}, "username": {user}, "password": {pw}, "next": {"/settings/tokens"}})
}

func TestPagesAndHeaders(t *testing.T) {
	e := start(t)
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	e.publishModule(t, "acme", "network", "aws", "1.1.0", networkModule)
	b := e.browser(t)

	home := b.get("/")
	if home.status != 200 || !strings.Contains(home.body, `href="/modules/acme/network/aws"`) {
		t.Fatalf("home: %d\n%s", home.status, home.body)
	}
	csp := home.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows unsafe sources", csp)
	}
	if home.header.Get("X-Content-Type-Options") != "nosniff" || home.header.Get("Cache-Control") != "private, no-cache" ||
		home.header.Get("Etag") == "" || home.header.Get("Vary") != "Cookie, Accept-Encoding" {
		t.Errorf("headers: %v", home.header)
	}
	// The referrer policy is the page's own (its first element after the
	// charset, before any request the page makes), not a header.
	if !strings.Contains(home.body, "<meta charset=\"utf-8\">\n<meta name=\"referrer\" content=\"same-origin\">\n") {
		t.Errorf("home page lacks the referrer policy at the top of its head")
	}
	// Framing is refused by the policy, and by X-Frame-Options too on
	// every page but the anonymous visitor's cached ones (nothing there
	// acts when clicked): the sign-in form keeps it.
	if p := b.get("/sign-in"); p.header.Get("X-Frame-Options") != "DENY" || !strings.Contains(p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("sign-in page headers: %v", p.header)
	}
	// At most 8 headers besides the Date net/http adds: past 8,
	// net/http's handling of the header map costs every page more
	// (docs/benchmarks.md). A cached page sends 7 and 8 with gzip's
	// Content-Encoding (which the client's transport takes off with
	// Content-Length when it decompresses), a rendered one 8 (here a
	// page that is not found; the sign-in form adds its cookie).
	for _, p := range []struct {
		path string
		max  int
	}{{"/", 7}, {"/nosuch", 8}} {
		n, h := 0, b.get(p.path).header
		for k := range h {
			if k != "Date" {
				n++
			}
		}
		if n > p.max {
			t.Errorf("%s sends %d headers besides Date, want at most %d: %v", p.path, n, p.max, h)
		}
	}

	mod := b.get("/modules/acme/network/aws")
	for _, want := range []string{"<h1>acme/network/aws", "The CIDR block.", `<code class="name">cidr</code> <span class="badge">required</span>`,
		"The network&#39;s ID.", "modules/subnet", `source  = &#34;trove.localhost/acme/network/aws`, `version = &#34;~&gt; 1.1&#34;`} {
		if !strings.Contains(mod.body, want) {
			t.Errorf("module page lacks %q", want)
		}
	}
	if strings.Contains(mod.body, "hunter2-default") || !strings.Contains(mod.body, "hidden: sensitive") {
		t.Error("the default of a sensitive input is shown")
	}
	old := b.get("/modules/acme/network/aws/1.0.0")
	if !strings.Contains(old.body, "The latest version is") || !strings.Contains(old.body, `version = &#34;~&gt; 1.0.0&#34;`) {
		t.Errorf("the page of 1.0.0 does not say it is not the latest:\n%s", old.body)
	}
	if p := b.get("/modules/acme/network/aws?version=1.0.0"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/modules/acme/network/aws/1.0.0" {
		t.Errorf("version form: %d %s", p.status, p.header.Get("Location"))
	}
	if etag := mod.header.Get("ETag"); etag == "" {
		t.Error("no ETag")
	} else {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/modules/acme/network/aws", nil)
		req.Header.Set("If-None-Match", etag)
		if p := b.do(req); p.status != http.StatusNotModified {
			t.Errorf("revalidation answered %d", p.status)
		}
	}

	search := b.get("/search?q=network&kind=module")
	if !strings.Contains(search.body, "acme/network/aws") || !strings.Contains(search.body, "1 result") {
		t.Errorf("search:\n%s", search.body)
	}
	frag := b.get("/search?q=network&fragment=1")
	if strings.Contains(frag.body, "<html") || !strings.Contains(frag.body, "acme/network/aws") {
		t.Errorf("search fragment:\n%s", frag.body)
	}
	if p := b.get("/search?kind=bogus"); p.status != http.StatusBadRequest {
		t.Errorf("unknown kind answered %d", p.status)
	}
	if p := b.get("/search?q=zzz-nothing"); !strings.Contains(p.body, "No results") {
		t.Errorf("empty search:\n%s", p.body)
	}

	// A new version shows up at once: publishes drop cached pages, the
	// home and namespace pages' too.
	for _, path := range []string{"/", "/namespaces/acme", "/search?q=network"} {
		if p := b.get(path); !strings.Contains(p.body, "latest 1.1.0") {
			t.Fatalf("%s does not list acme/network/aws 1.1.0:\n%s", path, p.body)
		}
	}
	e.publishModule(t, "acme", "network", "aws", "1.2.0", networkModule)
	for _, path := range []string{"/", "/namespaces/acme", "/search?q=network"} {
		if p := b.get(path); !strings.Contains(p.body, "latest 1.2.0") {
			t.Errorf("%s still shows the old latest version after a publish:\n%s", path, p.body)
		}
	}
	for range 2 { // downloads of the new version, counted in memory
		resp, err := e.srv.HTTPClient().Get(e.srv.URL + "/v1/modules/acme/network/aws/1.2.0/download")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("module download: %d", resp.StatusCode)
		}
	}
	p := b.get("/modules/acme/network/aws")
	if !strings.Contains(p.body, `version = &#34;~&gt; 1.2&#34;`) {
		t.Error("the module page still shows the old latest version after a publish")
	}
	if !strings.Contains(p.body, "2 of this version, 2 in all") {
		t.Error("the module page does not count the downloads")
	}

	// Browsers get an HTML 404; API clients keep JSON.
	if p := b.get("/no/such/page"); p.status != 404 || !strings.Contains(p.header.Get("Content-Type"), "text/html") {
		t.Errorf("browser 404: %d %s", p.status, p.header.Get("Content-Type"))
	}
	resp, err := e.srv.HTTPClient().Get(e.srv.URL + "/no/such/page")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("API 404: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// Assets: forever cacheable at their current version.
	css := b.get("/ui/static/style.css")
	if css.status != 200 || css.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("style.css: %d %q", css.status, css.header.Get("Cache-Control"))
	}
	m := regexp.MustCompile(`/ui/static/style\.css\?v=([0-9a-f]+)`).FindStringSubmatch(home.body)
	if m == nil {
		t.Fatal("the page links no versioned style sheet")
	}
	if p := b.get(m[0]); !strings.Contains(p.header.Get("Cache-Control"), "immutable") {
		t.Errorf("versioned style.css: %q", p.header.Get("Cache-Control"))
	}
	if p := b.get("/ui/static/../web.go"); p.status < 400 {
		t.Errorf("asset traversal answered %d", p.status)
	}
	if p := b.get("/ui/static/nope.js"); p.status != 404 {
		t.Errorf("unknown asset answered %d", p.status)
	}
}

// TestPrivateNamespaceLeavesNoTrace checks that a visitor who may not
// read a namespace gets, for every page, exactly what a name that does
// not exist gets, and finds nothing of it in search.
func TestPrivateNamespaceLeavesNoTrace(t *testing.T) {
	e := start(t)
	e.publishModule(t, "secret", "vault", "aws", "0.1.0", networkModule)
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)

	anon := e.browser(t)
	bob := e.browser(t)
	if p := bob.signIn("bob", password); p.status != http.StatusSeeOther {
		t.Fatalf("bob's sign-in: %d\n%s", p.status, p.body)
	}
	for name, b := range map[string]*browser{"anonymous": anon, "bob": bob} {
		for _, path := range []string{"/", "/search?q=vault", "/search?q=secret", "/search?namespace=secret", "/search?q=hush"} {
			p := b.get(path)
			body := strings.ReplaceAll(p.body, `value="vault"`, "")
			body = strings.ReplaceAll(body, `value="secret"`, "")
			body = strings.ReplaceAll(body, `value="hush"`, "")
			body = regexp.MustCompile(`for “[a-z]+”|<title>Search: [a-z]+ · Trove</title>|/sign-in\?next=[^"]*`).ReplaceAllString(body, "")
			if strings.Contains(body, "secret") || strings.Contains(body, "vault") || strings.Contains(body, "hush") {
				t.Errorf("%s: %s shows the private namespace:\n%s", name, path, body)
			}
		}
		for _, pair := range [][2]string{
			{"/namespaces/secret", "/namespaces/nosuch"},
			{"/modules/secret/vault/aws", "/modules/nosuch/vault/aws"},
			{"/modules/secret/vault/aws/0.1.0", "/modules/nosuch/vault/aws/0.1.0"},
			{"/providers/secret/widget", "/providers/nosuch/widget"},
			{"/namespaces/secret/settings", "/namespaces/nosuch/settings"},
		} {
			hidden, missing := b.get(pair[0]), b.get(pair[1])
			if name == "anonymous" && strings.HasSuffix(pair[0], "/settings") {
				if hidden.status != http.StatusSeeOther || missing.status != http.StatusSeeOther {
					t.Errorf("anonymous settings: %d and %d, want redirects to the sign-in page", hidden.status, missing.status)
				}
				continue
			}
			if hidden.status != 404 || missing.status != 404 || strings.ReplaceAll(hidden.body, "secret", "nosuch") != missing.body {
				t.Errorf("%s: %s answers %d, %s answers %d; the pages differ:\n%s\n---\n%s", name, pair[0], hidden.status, pair[1], missing.status, hidden.body, missing.body)
			}
		}
	}

	// alice administers it: she sees it everywhere, though the pages of
	// others are cached.
	alice := e.browser(t)
	alice.signIn("alice", password)
	if p := alice.get("/"); !strings.Contains(p.body, `href="/namespaces/secret"`) || !strings.Contains(p.body, "secret/vault/aws") {
		t.Errorf("alice's home page misses her namespace:\n%s", p.body)
	}
	if p := alice.get("/namespaces/secret"); p.status != 200 || !strings.Contains(p.body, "secret/vault/aws") || !strings.Contains(p.body, "Members and tokens") {
		t.Errorf("alice's namespace page: %d\n%s", p.status, p.body)
	}
	if p := bob.get("/namespaces/acme"); strings.Contains(p.body, "Members and tokens") {
		t.Error("bob sees the settings link of a namespace he does not administer")
	}
	if p := alice.get("/search?q=vault"); !strings.Contains(p.body, "secret/vault/aws") {
		t.Errorf("alice's search misses her namespace:\n%s", p.body)
	}
	if p := alice.get("/modules/secret/vault/aws"); p.status != 200 || !strings.Contains(p.body, "private") {
		t.Errorf("alice's module page: %d", p.status)
	}
	if p := alice.get("/namespaces/secret/settings"); p.status != 200 || !strings.Contains(p.body, "alice") {
		t.Errorf("alice's settings page: %d\n%s", p.status, p.body)
	}
}

func TestSignInSessionsAndTokens(t *testing.T) {
	e := start(t)
	b := e.browser(t)

	// Wrong password: the form again, 401, nothing set.
	form := b.get("/sign-in")
	if c := form.header.Get("Set-Cookie"); !strings.Contains(c, "__Host-trove-sign-in=") || !strings.Contains(c, "Secure") || !strings.Contains(c, "HttpOnly") {
		t.Errorf("sign-in cookie: %q", c)
	}
	p := b.post("/sign-in", url.Values{"csrf": {csrf(t, form)}, "username": {"alice"}, "password": {"nope"}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Wrong user name or password.") {
		t.Errorf("wrong password: %d\n%s", p.status, p.body)
	}
	// No CSRF token, or a foreign origin: refused before the password is checked.
	if p := b.post("/sign-in", url.Values{"username": {"alice"}, "password": {password}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without CSRF token: %d", p.status)
	}
	if p := b.post("/sign-in", url.Values{"csrf": {csrf(t, form)}, "username": {"alice"}, "password": {password}},
		"Origin", "https://evil.example"); p.status != http.StatusForbidden {
		t.Errorf("sign-in from another origin: %d", p.status)
	}
	// An open redirect through next is refused.
	p = b.post("/sign-in", url.Values{"csrf": {csrf(t, form)}, "username": {"alice"}, "password": {password}, "next": {"//evil.example/"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d, Location %q", p.status, p.header.Get("Location"))
	}
	session := ""
	for _, c := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "__Host-trove-session=") {
			session = c
		}
	}
	for _, want := range []string{"HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=43200"} {
		if !strings.Contains(session, want) {
			t.Errorf("session cookie %q lacks %s", session, want)
		}
	}

	tokens := b.get("/settings/tokens")
	if tokens.status != 200 || !strings.Contains(tokens.body, "web session") || !strings.Contains(tokens.body, "this session") {
		t.Fatalf("tokens page: %d\n%s", tokens.status, tokens.body)
	}
	// A token created in the UI may live 30 days, longer than the session.
	p = b.post("/settings/tokens", url.Values{"csrf": {csrf(t, tokens)}, "description": {"ci"}, "access": {"publish"}, "days": {"30"}})
	secret := regexp.MustCompile(`trove_[A-Za-z0-9_-]{20,}`).FindString(p.body)
	if p.status != 200 || secret == "" {
		t.Fatalf("creating a token: %d\n%s", p.status, p.body)
	}
	// The page that shows the secret is stored nowhere; the next page is
	// cached as every page is.
	if cc, etag := p.header.Get("Cache-Control"), p.header.Get("Etag"); cc != "no-store" || etag != "" {
		t.Errorf("the page with the new secret: Cache-Control %q, ETag %q, want no-store and no validator", cc, etag)
	}
	if cc := b.get("/settings/tokens").header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("the tokens page after: Cache-Control %q", cc)
	}
	c, err := client.New(e.srv.URL, secret, client.WithCAFile(e.srv.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.WhoAmI(context.Background())
	if err != nil || who.User != "alice" || who.ExpiresAt == nil || who.ExpiresAt.Before(time.Now().Add(29*24*time.Hour)) {
		t.Fatalf("the new token: %+v, %v", who, err)
	}
	// Not without the CSRF token, nor with another session's.
	if p := b.post("/settings/tokens", url.Values{"description": {"x"}, "access": {"read"}, "days": {"1"}}); p.status != http.StatusForbidden {
		t.Errorf("token without CSRF: %d", p.status)
	}
	bob := e.browser(t)
	bob.signIn("bob", password)
	if p := b.post("/settings/tokens", url.Values{"csrf": {csrf(t, bob.get("/settings/tokens"))}, "description": {"x"}, "access": {"read"}, "days": {"1"}}); p.status != http.StatusForbidden {
		t.Errorf("token with bob's CSRF token: %d", p.status)
	}
	// Bad input is answered on the form, nothing created.
	if p := b.post("/settings/tokens", url.Values{"csrf": {csrf(t, tokens)}, "description": {"x"}, "access": {"root"}, "days": {"1"}}); p.status != http.StatusBadRequest {
		t.Errorf("unknown access: %d", p.status)
	}
	if p := b.post("/settings/tokens", url.Values{"csrf": {csrf(t, tokens)}, "description": {"x"}, "access": {"read"}, "days": {"9999"}}); p.status != http.StatusBadRequest {
		t.Errorf("unoffered lifetime: %d", p.status)
	}
	if p := b.post("/settings/tokens", url.Values{"csrf": {csrf(t, tokens)}, "description": {"x"}, "access": {"read"}, "days": {"1"}, "namespaces": {"nosuch"}}); p.status != http.StatusNotFound {
		t.Errorf("a token bound to a namespace that does not exist: %d\n%s", p.status, p.body)
	}

	// Revoking it in the UI stops it at once.
	p = b.post("/settings/tokens/"+who.ID+"/revoke", url.Values{"csrf": {csrf(t, tokens)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d\n%s", p.status, p.body)
	}
	if _, err := c.WhoAmI(context.Background()); !client.IsUnauthenticated(err) {
		t.Errorf("the revoked token still works: %v", err)
	}
	// Bob cannot revoke alice's session.
	sessions, err := e.admin.ListUserTokens(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var sessionID string
	for _, tok := range sessions {
		if tok.Description == "web session" && tok.RevokedAt == nil {
			sessionID = tok.ID
		}
	}
	if p := bob.post("/settings/tokens/"+sessionID+"/revoke", url.Values{"csrf": {csrf(t, bob.get("/settings/tokens"))}}); p.status < 400 {
		t.Errorf("bob revoked alice's session: %d", p.status)
	}

	// Signing out revokes the session server-side.
	p = b.post("/sign-out", url.Values{"csrf": {csrf(t, b.get("/settings/tokens"))}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	got, err := e.admin.GetToken(context.Background(), sessionID)
	if err != nil || got.RevokedAt == nil {
		t.Errorf("the session's token after sign-out: %+v, %v", got, err)
	}
	if p := b.get("/settings/tokens"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/sign-in") {
		t.Errorf("after sign-out the tokens page answers %d", p.status)
	}
	// The session cookie is no bearer token for the API, and a bearer
	// token is no session.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/whoami", nil)
	req.AddCookie(&http.Cookie{Name: "__Host-trove-session", Value: e.srv.AdminToken})
	resp, err := e.srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API took a cookie: %d", resp.StatusCode)
	}
	adminCookie := e.browser(t)
	u, _ := url.Parse(e.srv.URL)
	adminCookie.client.Jar.SetCookies(u, []*http.Cookie{{Name: "__Host-trove-session", Value: e.srv.AdminToken}})
	if p := adminCookie.get("/settings/tokens"); p.status != http.StatusSeeOther {
		t.Errorf("a service token in the cookie opened the tokens page: %d", p.status)
	}
}

func TestNamespaceSettings(t *testing.T) {
	e := start(t)
	alice, bob := e.browser(t), e.browser(t)
	alice.signIn("alice", password)
	bob.signIn("bob", password)

	page := alice.get("/namespaces/secret/settings")
	p := alice.post("/namespaces/secret/settings/members", url.Values{"csrf": {csrf(t, page)}, "user": {"bob"}, "role": {"reader"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("adding bob: %d\n%s", p.status, p.body)
	}
	ms, err := e.admin.ListMembers(context.Background(), "secret")
	if err != nil || len(ms) != 2 {
		t.Fatalf("members: %+v, %v", ms, err)
	}
	// Bob reads the namespace now but does not administer it.
	if p := bob.get("/namespaces/secret"); p.status != 200 {
		t.Errorf("bob, reader, sees the namespace: %d", p.status)
	}
	if p := bob.get("/namespaces/secret/settings"); p.status != http.StatusForbidden {
		t.Errorf("bob, reader, opens the settings: %d", p.status)
	}
	if p := bob.post("/namespaces/secret/settings/members", url.Values{"csrf": {csrf(t, bob.get("/settings/tokens"))}, "user": {"bob"}, "role": {"admin"}}); p.status != http.StatusForbidden {
		t.Errorf("bob made himself admin: %d", p.status)
	}
	// A bad role is answered on the page.
	if p := alice.post("/namespaces/secret/settings/members", url.Values{"csrf": {csrf(t, page)}, "user": {"bob"}, "role": {"owner"}}); p.status != http.StatusBadRequest {
		t.Errorf("unknown role: %d", p.status)
	}
	p = alice.post("/namespaces/secret/settings/members/bob/remove", url.Values{"csrf": {csrf(t, page)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("removing bob: %d\n%s", p.status, p.body)
	}
	if ms, _ := e.admin.ListMembers(context.Background(), "secret"); len(ms) != 1 {
		t.Errorf("members after removal: %+v", ms)
	}
}

// TestHostilePaths sends odd addresses to every page family: they answer
// 4xx pages, never a 500.
func TestHostilePaths(t *testing.T) {
	e := start(t)
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	b := e.browser(t)
	for _, path := range []string{
		"/modules/acme/network/aws/v1.0.0", "/modules/acme/network/aws/1.0", "/modules/ACME/network/aws",
		"/modules/acme/network/AWS", "/modules/" + strings.Repeat("a", 300) + "/x/y", "/providers/acme/" + strings.Repeat("b", 5000),
		"/modules/acme/net%00work/aws", "/namespaces/%3Cscript%3E", "/search?q=" + strings.Repeat("%E2%80%AE", 500),
		"/search?page=-5", "/search?page=999999999999999", "/mirror/evil.example/a/b", "/providers/acme/widget/1.0.0/docs/resources/x",
		"/settings/tokens/abc/revoke", "/sign-in?next=javascript:alert(1)",
	} {
		p := b.get(path)
		if p.status >= 500 {
			t.Errorf("%s answered %d", path, p.status)
		}
		if strings.Contains(p.body, "<script>") {
			t.Errorf("%s echoes markup", path)
		}
	}
	if p := b.get("/sign-in?next=javascript:alert(1)"); strings.Contains(p.body, "javascript:") {
		t.Error("the sign-in page keeps a javascript: next page")
	}
	// An address longer than any page's is not repeated in the sign-in
	// link, on a page rendered for the visitor or cached for anonymous
	// visitors (twice: rendered, then from the cache).
	junk := strings.Repeat("z", 3000)
	for _, path := range []string{"/providers/acme/" + junk, "/?junk=" + junk, "/search?q=x&junk=" + junk, "/?junk=" + junk} {
		if p := b.get(path); strings.Contains(p.body, junk) {
			t.Errorf("%.40s... repeats the 3,000-byte address in its page", path)
		}
	}
	// A huge form body is refused.
	if p := b.post("/sign-in", url.Values{"username": {strings.Repeat("x", 1<<20)}}); p.status < 400 {
		t.Errorf("a 1 MiB sign-in form answered %d", p.status)
	}
}

// hostileReadme carries what a careless or hostile publisher may write
// into a README.
var hostileReadme = strings.Join([]string{
	"# Hostile <img src=x onerror=alert(1)>",
	"<script>alert('readme')</script>",
	`<a href="javascript:alert(1)">js link</a> [md js](javascript:alert(2)) [entity](&#106;avascript:alert(3))`,
	`[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) ![svg](data:image/svg+xml;base64,PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+)`,
	`<svg><script>alert(4)</script></svg> <iframe src="https://evil.example"></iframe> <style>body{display:none}</style>`,
	`<div onclick="alert(5)" style="position:fixed">click</div> <form action="https://evil.example"><input type="password"></form>`,
	`[relative](docs/setup.md) ![relative image](diagram.png) ![badge](https://img.example/badge.svg)`,
	"| " + strings.Repeat("c | ", 300) + "\n|" + strings.Repeat("---|", 300) + "\n" + strings.Repeat("| x "+strings.Repeat("| y ", 299)+"|\n", 200),
	strings.Repeat("> ", 5000) + "deep quote",
	strings.Repeat("  ", 3000) + "- deep list",
	"## Usage\n\nSee [usage](#usage).",
}, "\n\n")

// TestHostileReadme publishes a module whose README tries every trick,
// and checks what its page carries.
func TestHostileReadme(t *testing.T) {
	e := start(t)
	files := map[string]string{"README.md": hostileReadme + "\n\n" + strings.Repeat("filler line of text\n", 20000), "main.tf": `variable "x" {}`}
	e.publishModule(t, "acme", "evil", "aws", "1.0.0", files)
	b := e.browser(t)
	p := b.get("/modules/acme/evil/aws")
	if p.status != 200 {
		t.Fatalf("module page: %d", p.status)
	}
	body := strings.ToLower(p.body)
	for _, bad := range []string{"<script>alert", "onerror", "onclick", "javascript:", "data:text", "data:image", "<svg", "<iframe", "<style", "<form action=\"https://evil", "position:fixed", `type="password"`} {
		if strings.Contains(body, bad) {
			t.Errorf("the page carries %q", bad)
		}
	}
	for _, want := range []string{`<h2 id="h-hostile`, `rel="nofollow noopener noreferrer"`, `src="https://img.example/badge.svg"`, "deep quote", "deep list",
		`href="#h-usage"`, "relative image", "The README is long: only its beginning is shown."} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(p.body, `href="docs/setup.md"`) || strings.Contains(p.body, `src="diagram.png"`) {
		t.Error("relative links into the repository are kept")
	}
	if len(p.body) > 2<<20 {
		t.Errorf("the page is %d bytes", len(p.body))
	}
}

// TestHomeNothingPublic: with nothing public, a visitor who is not signed
// in is told to sign in, not that nothing is published; a signed-in user
// who sees nothing is told how to publish.
func TestHomeNothingPublic(t *testing.T) {
	e := start(t)
	e.publishModule(t, "secret", "vault", "aws", "1.0.0", networkModule)
	b := e.browser(t)
	home := b.get("/")
	if !strings.Contains(home.body, `<a href="/sign-in">Sign in</a> to see private namespaces.`) ||
		!strings.Contains(home.body, "private namespaces show once you sign in") || strings.Contains(home.body, "Nothing is published yet") {
		t.Errorf("the home page of an anonymous visitor with nothing public:\n%s", home.body)
	}
	b.signIn("bob", password)
	if home := b.get("/"); !strings.Contains(home.body, "Nothing is published yet") || strings.Contains(home.body, "show once you sign in") {
		t.Errorf("the home page of bob, who sees nothing:\n%s", home.body)
	}
}

// TestSearchFollowsVisibility changes the namespaces' visibility after
// anonymous pages and searches were cached: what an anonymous visitor
// may read is asked again per request (the readable sets the catalog
// shares are handed out only when they are the answer), so a namespace
// made private leaves the results at once and one made public enters
// them.
func TestSearchFollowsVisibility(t *testing.T) {
	e := start(t)
	e.publishModule(t, "secret", "vault", "aws", "0.1.0", networkModule)
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	anon := e.browser(t)
	shows := func(path, want string) bool {
		t.Helper()
		p := anon.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: status %d\n%s", path, p.status, p.body)
		}
		return strings.Contains(p.body, want)
	}
	if !shows("/search?q=network", "acme/network/aws") || shows("/search?q=vault", "secret/vault/aws") || !shows("/", "acme/network/aws") {
		t.Fatal("before: want acme's module found and secret's hidden")
	}
	visibility := func(ns, v string) {
		t.Helper()
		if _, err := e.admin.UpdateNamespace(context.Background(), ns, apispec.UpdateNamespaceRequest{Visibility: &v}); err != nil {
			t.Fatal(err)
		}
	}
	visibility("acme", "private")
	if shows("/search?q=network", "acme/network/aws") || shows("/", "acme/network/aws") {
		t.Error("acme made private: an anonymous visitor still finds its module")
	}
	visibility("secret", "public")
	if !shows("/search?q=vault", "secret/vault/aws") || shows("/search?q=network", "acme/network/aws") {
		t.Error("secret made public, acme private: want only secret's module found")
	}
	visibility("acme", "public")
	if !shows("/search?q=network", "acme/network/aws") || !shows("/search?q=vault", "secret/vault/aws") {
		t.Error("both public: want both modules found")
	}
}
