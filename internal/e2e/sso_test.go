package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"trove.dev/trove/internal/protocol/login"
)

// Single sign-on end to end: a real `trove serve` and a real OpenID
// provider process (testdata/oidc-provider, built on zitadel/oidc, a
// certified OpenID Connect library) on loopback. The tests set the
// provider up as docs/sso.md says, with the trove CLI, and sign in as
// people do: `terraform login` / `tofu login` and the web UI's sign-in
// page in Chromium, through the provider's own login form.

// The identity provider of these tests, as Trove knows it.
const (
	ssoIdP       = "corp"
	ssoIdPLabel  = "Example Corp"
	ssoClientID  = "trove"
	ssoSecret    = "a client secret of the test provider"
	ssoSecretEnv = "TROVE_OIDC_SECRET_CORP"
	ssoPassword  = "the password at the identity provider"
)

// oidcUser is a person at the test provider.
type oidcUser struct {
	ID       string   `json:"id"` // the ID token's subject
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

// oidcProvider is a running test OpenID provider.
type oidcProvider struct {
	Issuer string // http://127.0.0.1:<port>
	config string // its configuration file, read at every look-up
	client map[string]any
	users  []oidcUser
}

// startOIDCProvider starts the test provider with one confidential client
// (ssoClientID, ssoSecret) whose redirect URI is redirectURI, and users.
// It stops when the test ends.
func startOIDCProvider(t *testing.T, redirectURI string, users ...oidcUser) *oidcProvider {
	t.Helper()
	p := &oidcProvider{
		config: filepath.Join(t.TempDir(), "provider.json"),
		client: map[string]any{"id": ssoClientID, "secret": ssoSecret, "redirect_uris": []string{redirectURI}},
		users:  users,
	}
	p.write(t)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "oidc-provider.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(oidcProviderBin, "-config", p.config, "-listen", "127.0.0.1:0")
	cmd.Env = baseEnv(t.TempDir())
	cmd.Stderr = logFile
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdoutW
	err = cmd.Start()
	stdoutW.Close()
	logFile.Close()
	if err != nil {
		t.Fatalf("starting the test OpenID provider: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("the test OpenID provider logged:\n%s", b)
		}
	})
	lines := newLineLog(stdout)
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	const prefix = "OpenID provider listening on "
	line, ok := lines.wait(ctx, prefix)
	if !ok {
		b, _ := os.ReadFile(logFile.Name())
		t.Fatalf("the test OpenID provider printed no %q line:\n%s\n%s", prefix, lines, b)
	}
	p.Issuer = strings.TrimPrefix(line, prefix)
	return p
}

// write writes the provider's configuration atomically: the provider
// reads it at every look-up.
func (p *oidcProvider) write(t *testing.T) {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"client": p.client, "users": p.users}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := p.config + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p.config); err != nil {
		t.Fatal(err)
	}
}

// setGroups changes the groups of the user named username at the
// provider, as its administrator would; the next sign-in sees them.
func (p *oidcProvider) setGroups(t *testing.T, username string, groups ...string) {
	t.Helper()
	i := slices.IndexFunc(p.users, func(u oidcUser) bool { return u.Username == username })
	if i < 0 {
		t.Fatalf("the test provider has no user %s", username)
	}
	p.users[i].Groups = groups
	p.write(t)
}

// setupSSO starts Trove (with the client secret in its environment and
// the extra flags) and the test provider with the users, and adds the
// provider to Trove as docs/sso.md says, with `trove sso provider set`.
func setupSSO(t *testing.T, extra []string, users ...oidcUser) (*troveServer, *oidcProvider) {
	t.Helper()
	srv := startTroveEnv(t, filepath.Join(t.TempDir(), "data"), []string{ssoSecretEnv + "=" + ssoSecret}, extra...)
	redirect := srv.Addr + "/oauth/sso/" + ssoIdP + "/callback"
	idp := startOIDCProvider(t, redirect, users...)
	out := srv.mustCLI(t, srv.AdminToken, "sso", "provider", "set", ssoIdP, "--issuer", idp.Issuer, "--client-id", ssoClientID,
		"--client-secret-env", ssoSecretEnv, "--scopes", "profile,email,groups", "--display-name", ssoIdPLabel)
	if !strings.Contains(out, "Its redirect URI: "+redirect) {
		t.Fatalf("trove sso provider set printed %q, want the redirect URI %s", out, redirect)
	}
	return srv, idp
}

// ssoBrowser is a browser played with an HTTP client: it keeps cookies,
// trusts the server's CA, and follows redirects between Trove and the
// provider until one leaves both (terraform's listener).
type ssoBrowser struct {
	t      *testing.T
	client *http.Client
}

func newSSOBrowser(t *testing.T, srv *troveServer, idp *oidcProvider) *ssoBrowser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := srv.httpClient(t)
	c.Jar = jar
	trove, _ := url.Parse(srv.Addr)
	provider, _ := url.Parse(idp.Issuer)
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 20 {
			return fmt.Errorf("more than 20 redirects")
		}
		if req.URL.Host != trove.Host && req.URL.Host != provider.Host {
			return http.ErrUseLastResponse // terraform's listener: the caller delivers it
		}
		return nil
	}
	return &ssoBrowser{t: t, client: c}
}

// page is a fetched page: the URL it came from, status and body.
type page struct {
	URL    *url.URL
	Status int
	Header http.Header
	Body   string
}

func (b *ssoBrowser) do(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return page{URL: resp.Request.URL, Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
}

func (b *ssoBrowser) get(rawURL string) page {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// post submits form to action, resolved against the page's URL.
func (b *ssoBrowser) post(from page, action string, form url.Values) page {
	b.t.Helper()
	u, err := from.URL.Parse(html.UnescapeString(action))
	if err != nil {
		b.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var (
	anyHiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
	formAction     = regexp.MustCompile(`<form[^>]* action="([^"]+)"`)
	buttonAction   = regexp.MustCompile(`<button type="submit" name="action" value="sso" formaction="([^"]+)"[^>]*>([^<]*)</button>`)
)

// hidden returns the hidden inputs of a page's form.
func hidden(p page) url.Values {
	v := url.Values{}
	for _, m := range anyHiddenInput.FindAllStringSubmatch(p.Body, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// signInAtProvider fills the test provider's login form on p (the page a
// redirect to the provider ended on) and returns the page the redirects
// back through Trove end on.
func (b *ssoBrowser) signInAtProvider(p page, idp *oidcProvider, username, password string) page {
	b.t.Helper()
	if p.Status != http.StatusOK || !strings.HasPrefix(p.URL.String(), idp.Issuer+"/login/username") || !strings.Contains(p.Body, `name="password"`) {
		b.t.Fatalf("expected the provider's login page, got %d at %s:\n%s", p.Status, p.URL, p.Body)
	}
	form := hidden(p)
	form.Set("username", username)
	form.Set("password", password)
	m := formAction.FindStringSubmatch(p.Body)
	if m == nil {
		b.t.Fatalf("the provider's login page has no form:\n%s", p.Body)
	}
	return b.post(p, m[1], form)
}

// ssoCLILogin plays the browser of `terraform login` through the identity
// provider: it opens the authorization URL (Trove's login page), presses
// "Log in with <provider> and allow", signs in at the provider as
// username and returns the URL of terraform's listener that Trove
// finally redirects to, with the code.
func ssoCLILogin(t *testing.T, srv *troveServer, idp *oidcProvider, authz, username string) string {
	t.Helper()
	b := newSSOBrowser(t, srv, idp)
	form := b.get(authz)
	if form.Status != http.StatusOK {
		t.Fatalf("the login page answered %d:\n%s", form.Status, form.Body)
	}
	m := buttonAction.FindStringSubmatch(form.Body)
	if m == nil || m[2] != "Log in with "+ssoIdPLabel+" and allow" {
		t.Fatalf("the login page has no button %q:\n%s", "Log in with "+ssoIdPLabel+" and allow", form.Body)
	}
	values := hidden(form)
	values.Set("access", "read")
	values.Set("action", "sso")
	atIdP := b.post(form, m[1], values)
	back := b.signInAtProvider(atIdP, idp, username, ssoPassword)
	loc, err := url.Parse(back.Header.Get("Location"))
	q, _ := url.Parse(authz)
	if back.Status != http.StatusFound || err != nil || loc.Scheme+"://"+loc.Host+loc.Path != q.Query().Get("redirect_uri") ||
		loc.Query().Get("code") == "" || loc.Query().Get("state") != q.Query().Get("state") {
		t.Fatalf("after the sign-in at the provider, %s answered %d to %q, want a redirect to %s with a code and the state:\n%s",
			back.URL, back.Status, back.Header.Get("Location"), q.Query().Get("redirect_uri"), back.Body)
	}
	return loc.String()
}

// ssoTerraformLogin runs `terraform login` (or tofu's) for srv through
// the identity provider as username and returns the token it stored.
func ssoTerraformLogin(t *testing.T, srv *troveServer, idp *oidcProvider, client, username string) string {
	t.Helper()
	tf := newClient(t, client, srv, "")
	// As in testPrivateInstalls: the credentials go to HOME's
	// credentials.tfrc.json, which TF_CLI_CONFIG_FILE would hide.
	tf.env = slices.DeleteFunc(tf.env, func(kv string) bool { return strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") })
	if err := os.MkdirAll(filepath.Join(tf.home(), ".terraform.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	terraformLoginVia(t, tf, srv.Host, func(authz string) string { return ssoCLILogin(t, srv, idp, authz, username) })
	raw, err := os.ReadFile(filepath.Join(tf.home(), ".terraform.d", "credentials.tfrc.json"))
	if err != nil {
		t.Fatalf("%s login stored no credentials: %v", client, err)
	}
	var creds struct {
		Credentials map[string]struct {
			Token string `json:"token"`
		} `json:"credentials"`
	}
	if err := json.Unmarshal(raw, &creds); err != nil || !strings.HasPrefix(creds.Credentials[srv.Host].Token, "trove_") {
		t.Fatalf("credentials.tfrc.json = %s, want a Trove token for %s", raw, srv.Host)
	}
	return creds.Credentials[srv.Host].Token
}

// installPrivateModule runs init and plan of a configuration calling the
// platform/network/aws module with token as the credentials of the module
// host, and returns init's result.
func installPrivateModule(t *testing.T, srv *troveServer, client, token string) (tfResult, string) {
	t.Helper()
	tf := newClient(t, client, srv, "")
	addModuleHost(t, tf, srv)
	appendCLIConfig(t, tf, fmt.Sprintf("credentials %q {\n  token = %q\n}\n", moduleHost, token))
	dir := t.TempDir()
	writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"network\" {\n  source  = \"%s/platform/network/aws\"\n  version = \"~> 1.0\"\n}\n\noutput \"text\" {\n  value = module.network.text\n}\n", moduleHost)))
	res := tf.run(t, dir, "init", "-input=false")
	if res.Code != 0 {
		return res, ""
	}
	return res, tf.mustRun(t, dir, "plan", "-input=false").Flat
}

// users returns the server's users by name, as `trove user list --json`
// prints them.
func (s *troveServer) users(t *testing.T) map[string]map[string]any {
	t.Helper()
	var list struct {
		Users []map[string]any `json:"users"`
	}
	out := s.mustCLI(t, s.AdminToken, "user", "list", "--json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("trove user list --json printed %q: %v", out, err)
	}
	byName := map[string]map[string]any{}
	for _, u := range list.Users {
		byName[u["name"].(string)] = u
	}
	return byName
}

// memberRole returns user's role in ns from `trove member list`, "" if
// none.
func (s *troveServer) memberRole(t *testing.T, ns, user string) string {
	t.Helper()
	for line := range strings.Lines(s.mustCLI(t, s.AdminToken, "member", "list", ns)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == user {
			return f[1]
		}
	}
	return ""
}

// TestSSOTerraformLogin is docs/sso.md's walkthrough with both clients:
// a private namespace "platform" holds a module; the group "platform" of
// the identity provider is mapped to the reader role there. alice signs
// in with `terraform login` / `tofu login` through the provider: Trove
// creates her user just in time (alice-2: a local alice exists and is
// never taken over), linked by issuer and subject (the second client's
// login finds the same user), with the role the mapping grants, and the
// CLI installs the module with the token. Then the provider's admin takes
// her out of the group: at her next login the membership is gone and the
// new token cannot install the module.
func TestSSOTerraformLogin(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	srv, idp := setupSSO(t, nil, oidcUser{ID: "id-alice", Username: "alice", Password: ssoPassword, Email: "alice@example.com", Groups: []string{"platform", "staff"}})

	// A local account of the same name, which the sign-in must not take.
	srv.mustCLIStdin(t, srv.AdminToken, loginPassword+"\n", "user", "create", "alice", "--password-stdin")
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "platform")
	srv.mustCLI(t, srv.AdminToken, "module", "publish", "platform/network/aws", "1.0.0", writeModuleDir(t, "network", "1.0.0", ""))
	out := srv.mustCLI(t, srv.AdminToken, "sso", "mapping", "add", ssoIdP, "--claim", "groups", "--value", "platform", "--namespace", "platform", "--role", "reader")
	if !strings.Contains(out, "groups=platform gives reader in platform") {
		t.Fatalf("trove sso mapping add printed %q", out)
	}

	forEachClient(t, func(t *testing.T, client string) {
		idp.setGroups(t, "alice", "platform", "staff")
		token := ssoTerraformLogin(t, srv, idp, client, "alice")

		users := srv.users(t)
		sso, local := users["alice-2"], users["alice"]
		if sso == nil || local == nil || len(users) != 2 {
			t.Fatalf("users after %s login through the provider: %v, want the local alice and alice-2 (created just in time)", client, users)
		}
		if sso["has_password"] != false || local["has_password"] != true {
			t.Errorf("alice-2 = %v, alice = %v: want the SSO user without a password, the local one unchanged", sso, local)
		}
		if role := srv.memberRole(t, "platform", "alice-2"); role != "reader" {
			t.Errorf("alice-2's role in platform after the login = %q, want reader (the role mapping)", role)
		}
		if role := srv.memberRole(t, "platform", "alice"); role != "" {
			t.Errorf("the local alice got role %q in platform: the sign-in was merged into her account", role)
		}
		res, plan := installPrivateModule(t, srv, client, token)
		if res.Code != 0 || !strings.Contains(plan, `text = "network 1.0.0"`) {
			t.Fatalf("%s init of the private module with the login token: exit %d\n%s\nplan: %s", client, res.Code, res.Output, plan)
		}

		// Out of the group at the provider: the next login removes the role.
		idp.setGroups(t, "alice", "staff")
		token = ssoTerraformLogin(t, srv, idp, client, "alice")
		if role := srv.memberRole(t, "platform", "alice-2"); role != "" {
			t.Errorf("alice-2's role in platform after a login without the group = %q, want none", role)
		}
		res, _ = installPrivateModule(t, srv, client, token)
		// Not found, exactly as if the module did not exist.
		if res.Code == 0 || !strings.Contains(res.Flat, "cannot be found in the module registry at "+moduleHost) {
			t.Errorf("%s init of the private module after the group removal: exit %d, want module not found:\n%s", client, res.Code, res.Output)
		}
		if len(srv.users(t)) != 2 {
			t.Errorf("users after the second login: %v, want alice and alice-2 still", srv.users(t))
		}
	})

	audit := srv.mustCLI(t, srv.AdminToken, "audit")
	for _, want := range []string{"sso:" + ssoIdP, "created at the first sign-in through identity provider " + ssoIdP,
		"role reader in namespace platform by role mapping", "removed from namespace platform by role mapping"} {
		if !strings.Contains(audit, want) {
			t.Errorf("trove audit lacks %q:\n%s", want, audit)
		}
	}
	if log := srv.log(); strings.Contains(log, ssoSecret) || strings.Contains(log, ssoPassword) {
		t.Error("the server log contains the client secret or the provider password")
	}
}

// TestSSOLocalPasswordsOff starts Trove with --local-passwords=false:
// the login page refuses a password with the documented message and
// offers the provider, through which both clients log in; the first
// admin token keeps working, and the API refuses to set a password.
func TestSSOLocalPasswordsOff(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	srv, idp := setupSSO(t, []string{"--local-passwords=false"}, oidcUser{ID: "id-bob", Username: "bob", Password: ssoPassword, Email: "bob@example.com"})

	// The first admin token still works, but passwords cannot be set.
	cmd := exec.CommandContext(t.Context(), troveBin, "user", "create", "carol", "--password-stdin")
	cmd.Env = append(baseEnv(t.TempDir()), "TROVE_ADDR="+srv.Addr, "TROVE_CA_FILE="+srv.CAFile, "TROVE_TOKEN="+srv.AdminToken)
	cmd.Stdin = strings.NewReader(loginPassword + "\n")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "local passwords are switched off") {
		t.Errorf("user create with a password: %v, output %q, want the refusal", err, out)
	}
	srv.mustCLI(t, srv.AdminToken, "user", "create", "carol")

	// The web sign-in page shows the provider's button and no password form.
	p := srv.get(t, "/sign-in")
	if p.Status != http.StatusOK || !strings.Contains(string(p.Body), "Sign in with "+ssoIdPLabel) || strings.Contains(string(p.Body), `name="password"`) {
		t.Errorf("the sign-in page with local passwords off (status %d):\n%s", p.Status, p.Body)
	}

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		tf.env = slices.DeleteFunc(tf.env, func(kv string) bool { return strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") })
		if err := os.MkdirAll(filepath.Join(tf.home(), ".terraform.d"), 0o700); err != nil {
			t.Fatal(err)
		}
		terraformLoginVia(t, tf, srv.Host, func(authz string) string {
			// A password, posted as the form would if it had the fields.
			b := newSSOBrowser(t, srv, idp)
			form := b.get(authz)
			if strings.Contains(form.Body, `name="password"`) || strings.Contains(form.Body, `value="allow"`) {
				t.Errorf("the login page offers a password login with local passwords off:\n%s", form.Body)
			}
			values := hidden(form)
			values.Set("username", "carol")
			values.Set("password", loginPassword)
			values.Set("action", "allow")
			refused := b.post(form, formAction.FindStringSubmatch(form.Body)[1], values)
			if refused.Status != http.StatusForbidden || !strings.Contains(html.UnescapeString(refused.Body), login.PasswordsOffMessage) {
				t.Errorf("a password login with local passwords off answered %d, want 403 with %q:\n%s", refused.Status, login.PasswordsOffMessage, refused.Body)
			}
			return ssoCLILogin(t, srv, idp, authz, "bob")
		})
	})
	if u := srv.users(t)["bob"]; u == nil || u["has_password"] != false {
		t.Errorf("users after the logins: %v, want bob created by the sign-in, without a password", srv.users(t))
	}
}

// TestSSOWebUIBrowser signs in to the web UI in Chromium through the
// provider: the sign-in page's "Sign in with Example Corp" button, the
// provider's own login page, back to Trove signed in.
func TestSSOWebUIBrowser(t *testing.T) {
	srv, idp := setupSSO(t, nil, oidcUser{ID: "id-dora", Username: "dora", Password: ssoPassword, Email: "dora@example.com", Groups: []string{"platform"}})
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "platform")
	srv.mustCLI(t, srv.AdminToken, "sso", "mapping", "add", ssoIdP, "--claim", "groups", "--value", "platform", "--namespace", "platform", "--role", "publisher")

	b := newBrowser(t, srv)
	b.open("/sign-in", 200)
	b.step("waiting for the provider's button", chromedp.WaitVisible(chromedp.CSS(`a.button[href^="/oauth/sso/`+ssoIdP+`/start"]`)))
	if got := b.text(`a.button[href^="/oauth/sso/` + ssoIdP + `/start"]`); got != "Sign in with "+ssoIdPLabel {
		t.Errorf("the provider's button says %q, want %q", got, "Sign in with "+ssoIdPLabel)
	}
	b.navigating("pressing the provider's button", 200, chromedp.Click(chromedp.CSS(`a.button[href^="/oauth/sso/`+ssoIdP+`/start"]`)))
	if u := b.location(); !strings.HasPrefix(u.String(), idp.Issuer+"/login/username") {
		t.Fatalf("the button led to %s, want the provider's login page%s", u, b.where())
	}
	b.step("filling the provider's login form",
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "dora"),
		chromedp.SendKeys(chromedp.CSS("#password"), ssoPassword),
	)
	b.navigating("submitting the provider's login form", 200, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	if u := b.location(); u.Host != srv.Host {
		t.Fatalf("after the provider's login the tab shows %s, want Trove%s", u, b.where())
	}
	if got := b.text("header .who a"); got != "dora" {
		t.Fatalf("after signing in through the provider, the header names %q, want dora%s", got, b.where())
	}
	b.open("/settings/tokens", 200)
	if u := b.location(); u.Path != "/settings/tokens" {
		t.Errorf("/settings/tokens went to %s, want the page itself (signed in)", u)
	}
	if role := srv.memberRole(t, "platform", "dora"); role != "publisher" {
		t.Errorf("dora's role in platform after the web sign-in = %q, want publisher (the role mapping)", role)
	}
}
