package login_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

const (
	password    = "correct horse battery staple"
	redirectURI = "http://localhost:10003/login"
	verifier    = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.123456789"
)

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// clock is a settable clock for the login service.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

type env struct {
	srv   *trovetest.Server
	acc   store.Access
	clock *clock
}

func start(t *testing.T, opt login.Options) *env {
	t.Helper()
	c := &clock{}
	opt.Now = c.Now
	srv := trovetest.Start(t, trovetest.Options{Login: opt})
	acc := srv.Index.(store.Access)
	e := &env{srv: srv, acc: acc, clock: c}
	e.user(t, "alice", false)
	return e
}

func (e *env) user(t *testing.T, name string, disabled bool) {
	t.Helper()
	hash, err := auth.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.acc.CreateUser(context.Background(), registry.User{Name: name, PasswordHash: hash, Disabled: disabled, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// browser plays the user's browser: it keeps cookies and does not follow
// redirects, so that the test sees where it is sent.
type browser struct {
	e      *env
	client *http.Client
}

func (e *env) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{e: e, client: &http.Client{
		Jar:           jar,
		Transport:     e.srv.HTTPClient().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(t *testing.T, req *http.Request) page {
	t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func authorizeQuery(mutate func(url.Values)) url.Values {
	q := url.Values{
		"response_type": {"code"}, "client_id": {"terraform-cli"}, "redirect_uri": {redirectURI},
		"state": {"state-1234"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"},
	}
	if mutate != nil {
		mutate(q)
	}
	return q
}

func (b *browser) open(t *testing.T, q url.Values) page {
	t.Helper()
	req, _ := http.NewRequest("GET", b.e.srv.URL+login.AuthorizePath+"?"+q.Encode(), nil)
	return b.do(t, req)
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// formFields returns the hidden fields of a login page.
func formFields(t *testing.T, p page) url.Values {
	t.Helper()
	f := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(p.body, -1) {
		f.Add(m[1], htmlUnescape(m[2]))
	}
	if f.Get("csrf") == "" {
		t.Fatalf("the page has no CSRF field:\n%s", p.body)
	}
	return f
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&#43;", "+").Replace(s)
}

func (b *browser) submit(t *testing.T, fields url.Values) page {
	t.Helper()
	req, _ := http.NewRequest("POST", b.e.srv.URL+login.AuthorizePath, strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(t, req)
}

// loginFields opens the form and fills it in.
func (b *browser) loginFields(t *testing.T, user, pw string) url.Values {
	t.Helper()
	p := b.open(t, authorizeQuery(nil))
	if p.status != http.StatusOK {
		t.Fatalf("GET authorize = %d:\n%s", p.status, p.body)
	}
	f := formFields(t, p)
	f.Set("username", user)
	f.Set("password", pw)
	f.Set("action", "allow")
	return f
}

// code logs in and returns the code from the redirect.
func (b *browser) code(t *testing.T, user string) string {
	t.Helper()
	p := b.submit(t, b.loginFields(t, user, password))
	if p.status != http.StatusFound {
		t.Fatalf("login = %d, want 302:\n%s", p.status, p.body)
	}
	u, err := url.Parse(p.header.Get("Location"))
	if err != nil || u.Scheme+"://"+u.Host+u.Path != redirectURI || u.Query().Get("state") != "state-1234" || u.Query().Get("code") == "" {
		t.Fatalf("redirect to %q, want %s?code=...&state=state-1234", p.header.Get("Location"), redirectURI)
	}
	return u.Query().Get("code")
}

type tokenAnswer struct {
	status int
	Access string `json:"access_token"`
	Type   string `json:"token_type"`
	Error  string `json:"error"`
	Desc   string `json:"error_description"`
	raw    string
}

func (e *env) exchange(t *testing.T, form url.Values) tokenAnswer {
	t.Helper()
	resp, err := e.srv.HTTPClient().PostForm(e.srv.URL+login.TokenPath, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := tokenAnswer{status: resp.StatusCode, raw: string(body)}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("token answer %d is not JSON: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("token answer has Cache-Control %q, want no-store", resp.Header.Get("Cache-Control"))
	}
	return a
}

func exchangeForm(code string, mutate func(url.Values)) url.Values {
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"code_verifier": {verifier}, "client_id": {"terraform-cli"}}
	if mutate != nil {
		mutate(f)
	}
	return f
}

func (e *env) whoami(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestDiscovery(t *testing.T) {
	e := start(t, login.Options{})
	resp, err := e.srv.HTTPClient().Get(e.srv.URL + "/.well-known/terraform.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	want := `{"authz":"/oauth/authorize","client":"terraform-cli","grant_types":["authz_code"],"ports":[10000,10010],"token":"/oauth/token"}`
	if string(doc["login.v1"]) != want {
		t.Errorf("login.v1 = %s, want %s", doc["login.v1"], want)
	}
}

func TestLoginFlow(t *testing.T) {
	e := start(t, login.Options{})
	b := e.browser(t)
	p := b.open(t, authorizeQuery(nil))
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "style-src 'sha256-") {
		t.Errorf("form CSP = %q", csp)
	}
	if xfo, rp := p.header.Get("X-Frame-Options"), p.header.Get("Referrer-Policy"); xfo != "DENY" || rp != "no-referrer" {
		t.Errorf("form X-Frame-Options = %q, Referrer-Policy = %q, want DENY and no-referrer", xfo, rp)
	}
	if style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(p.body); style == nil ||
		!strings.Contains(p.header.Get("Content-Security-Policy"), "'sha256-"+base64.StdEncoding.EncodeToString(sha256Of(style[1]))+"'") {
		t.Errorf("the page's style element does not match the hash in its CSP")
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		cookie = c
	}
	if cookie == nil || !cookie.Secure || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("form cookie = %+v, want Secure, HttpOnly, SameSite=Strict", cookie)
	}

	code := b.code(t, "alice")
	a := e.exchange(t, exchangeForm(code, nil))
	if a.status != http.StatusOK || a.Type != "bearer" || !strings.HasPrefix(a.Access, auth.TokenPrefix) {
		t.Fatalf("token answer %d %s", a.status, a.raw)
	}
	status, body := e.whoami(t, a.Access)
	if status != http.StatusOK || !strings.Contains(body, `"user":"alice"`) || !strings.Contains(body, `"scopes":["read"]`) {
		t.Fatalf("whoami with the issued token = %d %s", status, body)
	}
	tokens, err := e.acc.ListUserTokens(context.Background(), "alice")
	if err != nil || len(tokens) != 1 {
		t.Fatalf("alice's tokens = %+v, %v", tokens, err)
	}
	if left := time.Until(tokens[0].ExpiresAt); left < 29*24*time.Hour || left > 30*24*time.Hour+time.Minute {
		t.Errorf("the issued token expires in %s, want 30 days", left)
	}

	// The audit log has the login and the token, and no secret.
	events, err := e.acc.ListAudit(context.Background(), registry.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]bool{}
	for _, ev := range events {
		actions[ev.Action] = true
		for _, secret := range []string{password, code, a.Access} {
			if strings.Contains(ev.Details+ev.Target+ev.Actor, secret) {
				t.Errorf("audit event %+v contains a secret", ev)
			}
		}
	}
	if !actions[registry.AuditLoginSuccess] || !actions[registry.AuditTokenCreate] {
		t.Errorf("audit actions %v, want login.success and token.create", actions)
	}
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// TestAuthorizeRefusesBadRequests checks that invalid authorization
// requests show an error page and never redirect.
func TestAuthorizeRefusesBadRequests(t *testing.T) {
	e := start(t, login.Options{})
	b := e.browser(t)
	cases := map[string]func(url.Values){
		"foreign host":                 func(q url.Values) { q.Set("redirect_uri", "http://evil.example:10003/login") },
		"https scheme":                 func(q url.Values) { q.Set("redirect_uri", "https://localhost:10003/login") },
		"loopback address":             func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:10003/login") },
		"port below range":             func(q url.Values) { q.Set("redirect_uri", "http://localhost:9999/login") },
		"port above range":             func(q url.Values) { q.Set("redirect_uri", "http://localhost:10011/login") },
		"no port":                      func(q url.Values) { q.Set("redirect_uri", "http://localhost/login") },
		"other path":                   func(q url.Values) { q.Set("redirect_uri", "http://localhost:10003/callback") },
		"query in redirect":            func(q url.Values) { q.Set("redirect_uri", "http://localhost:10003/login?next=http://evil.example") },
		"user info":                    func(q url.Values) { q.Set("redirect_uri", "http://evil.example@localhost:10003/login") },
		"fragment":                     func(q url.Values) { q.Set("redirect_uri", "http://localhost:10003/login#x") },
		"missing redirect":             func(q url.Values) { q.Del("redirect_uri") },
		"two redirects":                func(q url.Values) { q.Add("redirect_uri", "http://evil.example/login") },
		"missing state":                func(q url.Values) { q.Del("state") },
		"missing challenge":            func(q url.Values) { q.Del("code_challenge") },
		"plain challenge method":       func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"missing challenge method":     func(q url.Values) { q.Del("code_challenge_method") },
		"short challenge":              func(q url.Values) { q.Set("code_challenge", "abc") },
		"unknown client":               func(q url.Values) { q.Set("client_id", "other-cli") },
		"implicit grant":               func(q url.Values) { q.Set("response_type", "token") },
		"foreign host and wrong state": func(q url.Values) { q.Set("redirect_uri", "http://evil.example/login"); q.Del("state") },
	}
	for name, mutate := range cases {
		p := b.open(t, authorizeQuery(mutate))
		if p.status != http.StatusBadRequest || p.header.Get("Location") != "" || strings.Contains(p.body, `name="password"`) {
			t.Errorf("%s: status %d, Location %q; want a 400 error page without a form or redirect", name, p.status, p.header.Get("Location"))
		}
	}
}

func TestSubmitRefusals(t *testing.T) {
	e := start(t, login.Options{})
	e.user(t, "mallory", true)
	b := e.browser(t)

	t.Run("missing CSRF token", func(t *testing.T) {
		f := b.loginFields(t, "alice", password)
		f.Del("csrf")
		if p := b.submit(t, f); p.status != http.StatusForbidden || p.header.Get("Location") != "" {
			t.Errorf("status %d, Location %q; want 403 without a redirect", p.status, p.header.Get("Location"))
		}
	})
	t.Run("CSRF token of another cookie", func(t *testing.T) {
		f := b.loginFields(t, "alice", password)
		other := e.browser(t) // another browser: another cookie
		if p := other.submit(t, f); p.status != http.StatusForbidden {
			t.Errorf("status %d, want 403", p.status)
		}
	})
	t.Run("tampered redirect on submit", func(t *testing.T) {
		f := b.loginFields(t, "alice", password)
		f.Set("redirect_uri", "http://evil.example/login")
		if p := b.submit(t, f); p.status != http.StatusBadRequest || p.header.Get("Location") != "" {
			t.Errorf("status %d, Location %q; want 400 without a redirect", p.status, p.header.Get("Location"))
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		p := b.submit(t, b.loginFields(t, "alice", "wrong password!"))
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Wrong user name or password") || p.header.Get("Location") != "" {
			t.Errorf("status %d, want 401 with the form again", p.status)
		}
		if strings.Contains(p.body, "wrong password!") {
			t.Error("the page repeats the password")
		}
	})
	t.Run("unknown user gets the same answer", func(t *testing.T) {
		known := b.submit(t, b.loginFields(t, "alice", "wrong password!"))
		unknown := b.submit(t, b.loginFields(t, "nobody", "wrong password!"))
		if known.status != unknown.status {
			t.Errorf("unknown user %d, wrong password %d", unknown.status, known.status)
		}
		if !strings.Contains(unknown.body, "Wrong user name or password") {
			t.Errorf("unknown user page lacks the generic message")
		}
	})
	t.Run("disabled user", func(t *testing.T) {
		p := b.submit(t, b.loginFields(t, "mallory", password))
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "disabled") || p.header.Get("Location") != "" {
			t.Errorf("status %d, want 403 saying the account is disabled", p.status)
		}
	})
	t.Run("deny", func(t *testing.T) {
		f := b.loginFields(t, "", "")
		f.Set("action", "deny")
		p := b.submit(t, f)
		u, _ := url.Parse(p.header.Get("Location"))
		if p.status != http.StatusFound || u == nil || u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "state-1234" || u.Query().Get("code") != "" {
			t.Errorf("deny: %d to %q, want 302 with error=access_denied and the state", p.status, p.header.Get("Location"))
		}
	})
	events, err := e.acc.ListAudit(context.Background(), registry.AuditFilter{Action: registry.AuditLoginFailure})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, ev := range events {
		reasons[ev.Target] += ev.Details + ";"
		if ev.SourceAddr == "" {
			t.Errorf("login failure without a source address: %+v", ev)
		}
		if ev.Actor != "anonymous" {
			t.Errorf("a failed login has the actor %q, want anonymous", ev.Actor)
		}
	}
	if !strings.Contains(reasons["alice"], "wrong password") || !strings.Contains(reasons["nobody"], "unknown user") || !strings.Contains(reasons["mallory"], "disabled") {
		t.Errorf("login failures in the audit log: %v", reasons)
	}
}

// TestFailedLoginCannotFakeActor types actor-like names into the login
// form: the audit log records them as the target of an anonymous
// attempt, so filtering by actor never finds them.
func TestFailedLoginCannotFakeActor(t *testing.T) {
	e := start(t, login.Options{})
	e.user(t, "bob", false)
	b := e.browser(t)
	for _, name := range []string{"user:bob", "token:tok_0123456789abcdef", "bob"} {
		if p := b.submit(t, b.loginFields(t, name, "wrong password!")); p.status != http.StatusUnauthorized {
			t.Fatalf("login as %q: %d, want 401", name, p.status)
		}
	}
	ctx := context.Background()
	for _, actor := range []string{"user:bob", "token:tok_0123456789abcdef", "bob"} {
		if events, err := e.acc.ListAudit(ctx, registry.AuditFilter{Actor: actor}); err != nil || len(events) != 0 {
			t.Errorf("events with actor %q: %+v, %v; want none", actor, events, err)
		}
	}
	events, err := e.acc.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditLoginFailure, Actor: "anonymous"})
	if err != nil || len(events) != 3 {
		t.Fatalf("anonymous login failures: %+v, %v; want 3", events, err)
	}
	if events[2].Target != "user:bob" || events[1].Target != "token:tok_0123456789abcdef" || events[0].Target != "bob" {
		t.Errorf("targets of the failures: %q, %q, %q; want the names tried", events[2].Target, events[1].Target, events[0].Target)
	}
}

func TestTokenRefusals(t *testing.T) {
	e := start(t, login.Options{AccountBurst: 20})
	b := e.browser(t)
	cases := map[string]struct {
		mutate func(url.Values)
		want   string
	}{
		"wrong verifier":        {func(f url.Values) { f.Set("code_verifier", strings.Repeat("x", 46)) }, "invalid_grant"},
		"foreign redirect_uri":  {func(f url.Values) { f.Set("redirect_uri", "http://localhost:10004/login") }, "invalid_grant"},
		"other client":          {func(f url.Values) { f.Set("client_id", "other-cli") }, "invalid_client"},
		"unknown code":          {func(f url.Values) { f.Set("code", "not-a-code") }, "invalid_grant"},
		"missing verifier":      {func(f url.Values) { f.Del("code_verifier") }, "invalid_request"},
		"malformed verifier":    {func(f url.Values) { f.Set("code_verifier", "short") }, "invalid_request"},
		"password grant":        {func(f url.Values) { f.Set("grant_type", "password") }, "unsupported_grant_type"},
		"verifier is challenge": {func(f url.Values) { f.Set("code_verifier", challenge(verifier)) }, "invalid_grant"},
	}
	for name, c := range cases {
		code := b.code(t, "alice")
		a := e.exchange(t, exchangeForm(code, c.mutate))
		if a.status < 400 || a.Error != c.want || a.Access != "" {
			t.Errorf("%s: %d %s, want error %s", name, a.status, a.raw, c.want)
		}
		if strings.Contains(a.raw, code) {
			t.Errorf("%s: the answer repeats the code", name)
		}
	}
	tokens, _ := e.acc.ListUserTokens(context.Background(), "alice")
	if len(tokens) != 0 {
		t.Errorf("refused exchanges created tokens: %+v", tokens)
	}
}

func TestCodeReuseRevokes(t *testing.T) {
	e := start(t, login.Options{})
	b := e.browser(t)
	code := b.code(t, "alice")
	first := e.exchange(t, exchangeForm(code, nil))
	if first.status != http.StatusOK {
		t.Fatalf("first exchange: %d %s", first.status, first.raw)
	}
	second := e.exchange(t, exchangeForm(code, nil))
	if second.status != http.StatusBadRequest || second.Error != "invalid_grant" || second.Access != "" {
		t.Fatalf("second exchange: %d %s, want invalid_grant", second.status, second.raw)
	}
	if status, body := e.whoami(t, first.Access); status != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Errorf("the token of a replayed code: whoami = %d %s, want 401 revoked", status, body)
	}
	events, _ := e.acc.ListAudit(context.Background(), registry.AuditFilter{Action: registry.AuditTokenReplay})
	if len(events) != 1 {
		t.Errorf("replay audit events: %+v", events)
	}
}

// TestReplayRefusedAtOnce: the token of a replayed code is refused on
// the very next request, also on the module protocol routes, which
// authenticate through the token cache: the revocation reaches the cache
// through the index's commit hook alone.
func TestReplayRefusedAtOnce(t *testing.T) {
	e := start(t, login.Options{})
	modules := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", e.srv.URL+"/v1/modules", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := e.srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	code := e.browser(t).code(t, "alice")
	first := e.exchange(t, exchangeForm(code, nil))
	if first.status != http.StatusOK {
		t.Fatalf("first exchange: %d %s", first.status, first.raw)
	}
	for range 2 { // the second from the cache
		if status := modules(first.Access); status != http.StatusOK {
			t.Fatalf("the login's token on the module list: %d", status)
		}
	}
	if second := e.exchange(t, exchangeForm(code, nil)); second.Error != "invalid_grant" {
		t.Fatalf("second exchange: %d %s, want invalid_grant", second.status, second.raw)
	}
	if status := modules(first.Access); status != http.StatusUnauthorized {
		t.Errorf("the token of a replayed code on the next request: %d, want 401", status)
	}
}

func TestExpiredCodeAndDisabledAfterLogin(t *testing.T) {
	e := start(t, login.Options{CodeTTL: time.Minute})
	b := e.browser(t)
	code := b.code(t, "alice")
	e.clock.Add(time.Minute + time.Second)
	if a := e.exchange(t, exchangeForm(code, nil)); a.Error != "invalid_grant" || !strings.Contains(a.Desc, "expired") {
		t.Errorf("expired code: %d %s", a.status, a.raw)
	}

	code = b.code(t, "alice")
	u, err := e.acc.GetUser(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	u.Disabled = true
	if err := e.acc.UpdateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if a := e.exchange(t, exchangeForm(code, nil)); a.Error != "invalid_grant" || a.Access != "" {
		t.Errorf("code of a user disabled since: %d %s", a.status, a.raw)
	}
}

func TestRateLimits(t *testing.T) {
	t.Run("per account", func(t *testing.T) {
		e := start(t, login.Options{AccountBurst: 2, AccountEvery: time.Hour})
		b := e.browser(t)
		for i := range 2 {
			if p := b.submit(t, b.loginFields(t, "alice", "wrong password!")); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i, p.status)
			}
		}
		// Even the right password is refused now, without being checked.
		p := b.submit(t, b.loginFields(t, "alice", password))
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || p.header.Get("Location") != "" {
			t.Fatalf("third attempt: %d (Retry-After %q), want 429", p.status, p.header.Get("Retry-After"))
		}
		// The limit is per account: another user still logs in.
		e.user(t, "bob", false)
		if p := b.submit(t, b.loginFields(t, "bob", password)); p.status != http.StatusFound {
			t.Errorf("another account: %d, want 302", p.status)
		}
		// After the refill interval the account may try again.
		e.clock.Add(time.Hour)
		if p := b.submit(t, b.loginFields(t, "alice", password)); p.status != http.StatusFound {
			t.Errorf("after an hour: %d, want 302", p.status)
		}
	})
	t.Run("per source address", func(t *testing.T) {
		e := start(t, login.Options{AddressBurst: 3, AddressEvery: time.Hour})
		b := e.browser(t)
		for i, name := range []string{"u1", "u2", "u3"} {
			if p := b.submit(t, b.loginFields(t, name, "wrong password!")); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i, p.status)
			}
		}
		if p := b.submit(t, b.loginFields(t, "alice", password)); p.status != http.StatusTooManyRequests {
			t.Errorf("fourth attempt from the address: %d, want 429", p.status)
		}
		events, _ := e.acc.ListAudit(context.Background(), registry.AuditFilter{Action: registry.AuditLoginFailure})
		if len(events) != 4 || events[0].Target != "alice" || !strings.Contains(events[0].Details, "rate limited") {
			t.Errorf("audit of the limited attempt: %+v", events)
		}
	})
}

// TestRateLimitSharedWithAPI checks that the login page and password
// changes through the management API draw from the same buckets: guesses
// through one path are limited by attempts through the other.
func TestRateLimitSharedWithAPI(t *testing.T) {
	e := start(t, login.Options{AccountBurst: 2, AccountEvery: time.Hour})
	e.user(t, "bob", false)
	ctx := context.Background()
	token := func(user string) string {
		secret, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := auth.NewID()
		if err := e.acc.(store.Index).CreateToken(ctx, registry.Token{ID: id, Hash: hash, User: user, Scopes: []registry.Scope{registry.ScopeAdmin}, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	changePassword := func(user, current string) int {
		req, _ := http.NewRequest("PATCH", e.srv.URL+"/api/v1/users/"+user,
			strings.NewReader(`{"password":"another fine password","current_password":"`+current+`"}`))
		req.Header.Set("Authorization", "Bearer "+token(user))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	b := e.browser(t)

	// Guesses on the login page use up alice's attempts through the API.
	for i := range 2 {
		if p := b.submit(t, b.loginFields(t, "alice", "wrong password!")); p.status != http.StatusUnauthorized {
			t.Fatalf("login attempt %d: %d", i, p.status)
		}
	}
	if status := changePassword("alice", password); status != http.StatusTooManyRequests {
		t.Errorf("API password check after two failed logins = %d, want 429", status)
	}
	// Guesses through the API use up bob's attempts on the login page.
	for i := range 2 {
		if status := changePassword("bob", "wrong password!"); status != http.StatusForbidden {
			t.Fatalf("API guess %d = %d, want 403", i, status)
		}
	}
	if p := b.submit(t, b.loginFields(t, "bob", password)); p.status != http.StatusTooManyRequests {
		t.Errorf("login after two API guesses = %d, want 429", p.status)
	}
}
