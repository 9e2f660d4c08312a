package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/trovetest"
)

// deviceEnv is a Trove whose login service runs on a clock the test
// moves, with users alice, bob (both without roles) and carol.
type deviceEnv struct {
	s     *trovetest.Server
	admin *client.Client
	skew  atomic.Int64 // added to the login service's clock
}

const devicePassword = "correct horse battery staple"

func startDeviceEnv(t *testing.T) *deviceEnv {
	t.Helper()
	e := &deviceEnv{}
	e.s = trovetest.Start(t, trovetest.Options{Login: login.Options{
		DeviceInterval: time.Second, AccountBurst: 50,
		Now: func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) },
	}})
	var err error
	if e.admin, err = client.New(e.s.URL, e.s.AdminToken, client.WithHTTPClient(e.s.HTTPClient())); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", "carol"} {
		if _, err := e.admin.CreateUser(t.Context(), apispec.CreateUserRequest{Name: u, Password: devicePassword}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.admin.CreateNamespace(t.Context(), apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// deviceBrowser is a browser signed in to the web UI as one user.
type deviceBrowser struct {
	t      *testing.T
	e      *deviceEnv
	client *http.Client
}

func (e *deviceEnv) browser(t *testing.T, user string) *deviceBrowser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &deviceBrowser{t: t, e: e, client: &http.Client{Jar: jar, Transport: e.s.HTTPClient().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if user != "" {
		_, body := b.get("/sign-in")
		status, _ := b.post("/sign-in", url.Values{"csrf": {formCSRF(t, body)}, "username": {user}, "password": {devicePassword}, "next": {"/"}}, true)
		if status != http.StatusSeeOther {
			t.Fatalf("signing %s in: %d", user, status)
		}
	}
	return b
}

func (b *deviceBrowser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *deviceBrowser) get(path string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.s.URL+path, nil)
	return b.do(req)
}

// post sends form as this site's page would (sameSite) or as another
// site's page would.
func (b *deviceBrowser) post(path string, form url.Values, sameSite bool) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.s.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.s.URL)
	if !sameSite {
		req.Header.Set("Origin", "https://evil.example")
	}
	resp, body := b.do(req)
	return resp.StatusCode, body
}

// decide types code into the device page and approves or denies it.
func (b *deviceBrowser) decide(code, access, action string) (int, string) {
	b.t.Helper()
	_, page := b.get("/device")
	return b.post("/device", url.Values{"csrf": {formCSRF(b.t, page)}, "code": {code}, "access": {access}, "action": {action}}, true)
}

var deviceCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func formCSRF(t *testing.T, body string) string {
	t.Helper()
	m := deviceCSRF.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", body)
	}
	return m[1]
}

// start starts a device login as the CLI does.
func (e *deviceEnv) start(t *testing.T) (*client.Client, client.LoginService, apispec.DeviceAuthorization) {
	t.Helper()
	c, err := client.New(e.s.URL, "", client.WithHTTPClient(e.s.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := c.DiscoverLogin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.StartDeviceLogin(t.Context(), svc)
	if err != nil {
		t.Fatal(err)
	}
	return c, svc, d
}

// poll asks the token endpoint once and returns the token or the OAuth
// error code.
func (e *deviceEnv) poll(t *testing.T, svc client.LoginService, clientID, deviceCode string) (token, errCode string) {
	t.Helper()
	resp, err := e.s.HTTPClient().PostForm(svc.TokenURL.String(), url.Values{"grant_type": {apispec.DeviceGrantType}, "client_id": {clientID}, "device_code": {deviceCode}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if (out.AccessToken != "") != (resp.StatusCode == http.StatusOK) {
		t.Fatalf("token endpoint: %d with %+v", resp.StatusCode, out)
	}
	return out.AccessToken, out.Error
}

// TestDeviceLogin runs `trove login --device` against a real Trove while
// a person approves its code on the web UI's device page, then uses the
// stored token.
func TestDeviceLogin(t *testing.T) {
	e := startDeviceEnv(t)
	home := t.TempDir()
	env := map[string]string{"TROVE_ADDR": e.s.URL, "TROVE_CA_FILE": e.s.CAFile, "HOME": home}
	stderrR, stderrW := io.Pipe()
	var stdout strings.Builder
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		code := run(ctx, []string{"login", "--device"}, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, stderrW)
		stderrW.Close()
		done <- code
	}()
	var userCode, page string
	var transcript strings.Builder
	lines := bufio.NewScanner(stderrR)
	for lines.Scan() {
		line := lines.Text()
		transcript.WriteString(line + "\n")
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "Code: "); ok {
			userCode = c
		}
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "https://"); ok && page == "" {
			page = "https://" + u
		}
		if strings.HasPrefix(line, "Waiting") {
			break
		}
	}
	go io.Copy(io.Discard, stderrR) //nolint:errcheck // the rest of stderr
	if !regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`).MatchString(userCode) || page != e.s.URL+"/device" {
		t.Fatalf("trove login --device printed no code and page:\n%s", transcript.String())
	}

	// Not signed in: the page sends the browser to sign in, then back.
	anon := e.browser(t, "")
	resp, _ := anon.get("/device?code=" + userCode)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/sign-in?next="+url.QueryEscape("/device?code="+userCode) {
		t.Errorf("the device page without a session: %d to %q, want the sign-in page with next", resp.StatusCode, loc)
	}
	alice := e.browser(t, "alice")
	if _, body := alice.get("/device?code=" + userCode); !strings.Contains(body, `value="`+userCode+`"`) {
		t.Errorf("the device page does not prefill the code:\n%s", body)
	}
	if status, body := alice.decide(strings.ToLower(userCode), "read", "approve"); status != http.StatusOK || !strings.Contains(body, "Approved") {
		t.Fatalf("approving: %d\n%s", status, body)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("trove login --device: exit %d\n%s", code, transcript.String())
	}
	if !strings.Contains(stdout.String(), "Logged in to ") || !strings.Contains(stdout.String(), " as alice") {
		t.Errorf("stdout %q, want the login of alice", stdout.String())
	}
	env["HOME"] = home // the stored token serves the next commands
	if r := runTrove(t, env, "", "token", "list", "--user", "alice"); r.code != exitOK || !strings.Contains(r.stdout, "device login by") {
		t.Errorf("trove token list with the stored token: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestDeviceLoginHostile: wrong, expired, reused and denied codes,
// polling too fast, approvals by users without rights or disabled, and
// forms sent without the page's CSRF token or from another site.
func TestDeviceLoginHostile(t *testing.T) {
	e := startDeviceEnv(t)
	ctx := t.Context()
	alice := e.browser(t, "alice")

	_, svc, d := e.start(t)
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "authorization_pending" {
		t.Errorf("first poll: %q, want authorization_pending", code)
	}
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "slow_down" {
		t.Errorf("a poll right after another: %q, want slow_down", code)
	}
	if _, code := e.poll(t, svc, svc.ClientID, "not-a-device-code"); code != "invalid_grant" {
		t.Errorf("a wrong device code: %q, want invalid_grant", code)
	}
	if _, code := e.poll(t, svc, "other-client", d.DeviceCode); code != "invalid_client" {
		t.Errorf("another client: %q, want invalid_client", code)
	}
	if _, code := e.poll(t, svc, svc.ClientID, d.UserCode); code != "invalid_grant" {
		t.Errorf("the user code as device code: %q, want invalid_grant", code)
	}

	// Forms without the page's CSRF token, or from another site: refused,
	// nothing decided.
	if status, _ := alice.post("/device", url.Values{"code": {d.UserCode}, "access": {"full"}, "action": {"approve"}}, true); status != http.StatusForbidden {
		t.Errorf("approval without a CSRF token: %d, want 403", status)
	}
	_, page := alice.get("/device")
	if status, _ := alice.post("/device", url.Values{"csrf": {formCSRF(t, page)}, "code": {d.UserCode}, "access": {"full"}, "action": {"approve"}}, false); status != http.StatusForbidden {
		t.Errorf("approval from another site: %d, want 403", status)
	}
	mallory := e.browser(t, "bob")
	if status, _ := mallory.post("/device", url.Values{"csrf": {formCSRF(t, page)}, "code": {d.UserCode}, "action": {"approve"}}, true); status != http.StatusForbidden {
		t.Errorf("approval with another session's CSRF token: %d, want 403", status)
	}
	e.skew.Add(int64(2 * time.Second))
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "authorization_pending" {
		t.Errorf("after the refused forms: %q, want authorization_pending", code)
	}

	// Malformed and unknown codes.
	for typed, want := range map[string]string{
		"AEIO-U123":       "not a code of this registry",
		"BCDF":            "not a code of this registry",
		"<script>x":       "not a code of this registry",
		"BBBB-BBBB":       "No login waits for the code BBBB-BBBB",
		"bbbb bbbb":       "No login waits for the code BBBB-BBBB",
		d.UserCode + "ZZ": "not a code of this registry",
	} {
		if status, body := alice.decide(typed, "read", "approve"); status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("code %q: %d, want 400 with %q", typed, status, want)
		}
	}

	// Approved by bob, who has no role: the token is bob's and reads
	// nothing private; approving it again is refused; a second
	// redemption revokes the token.
	if status, body := e.browser(t, "bob").decide(d.UserCode, "full", "approve"); status != http.StatusOK {
		t.Fatalf("bob's approval: %d\n%s", status, body)
	}
	if status, body := alice.decide(d.UserCode, "full", "approve"); status != http.StatusConflict || !strings.Contains(body, "used already") {
		t.Errorf("a second approval: %d, want 409 used already", status)
	}
	token, code := e.poll(t, svc, svc.ClientID, d.DeviceCode) // approved: no slow_down however fast
	if token == "" {
		t.Fatalf("poll after the approval: %q, want a token", code)
	}
	bob, _ := client.New(e.s.URL, token, client.WithHTTPClient(e.s.HTTPClient()))
	if who, err := bob.WhoAmI(ctx); err != nil || who.User != "bob" {
		t.Errorf("the token: %+v, %v; want bob's", who, err)
	}
	if _, err := bob.GetNamespace(ctx, "acme"); !client.IsNotFound(err) && client.StatusCode(err) != http.StatusForbidden {
		t.Errorf("bob's token reads private namespace acme: %v", err)
	}
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "invalid_grant" {
		t.Errorf("a second redemption: %q, want invalid_grant", code)
	}
	if _, err := bob.WhoAmI(ctx); client.StatusCode(err) != http.StatusUnauthorized {
		t.Errorf("the token after a second redemption: %v, want revoked (401)", err)
	}

	// Denied.
	_, svc, d = e.start(t)
	if status, _ := alice.decide(d.UserCode, "read", "deny"); status != http.StatusOK {
		t.Errorf("deny: %d", status)
	}
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "access_denied" {
		t.Errorf("poll after a denial: %q, want access_denied", code)
	}

	// Approved by a user disabled before the poll.
	_, svc, d = e.start(t)
	if status, _ := e.browser(t, "carol").decide(d.UserCode, "read", "approve"); status != http.StatusOK {
		t.Fatalf("carol's approval: %d", status)
	}
	disabled := true
	if _, err := e.admin.UpdateUser(ctx, "carol", apispec.UpdateUserRequest{Disabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	if tok, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); tok != "" || code != "invalid_grant" {
		t.Errorf("poll after the approver was disabled: %q, want invalid_grant and no token", code)
	}

	// Expired: neither approved nor redeemed.
	_, svc, d = e.start(t)
	e.skew.Add(int64(login.DefaultDeviceCodeTTL + time.Second))
	if status, body := alice.decide(d.UserCode, "read", "approve"); status != http.StatusBadRequest || !strings.Contains(body, "expired") {
		t.Errorf("approving an expired code: %d, want 400 expired", status)
	}
	if _, code := e.poll(t, svc, svc.ClientID, d.DeviceCode); code != "expired_token" {
		t.Errorf("poll of an expired code: %q, want expired_token", code)
	}

	// Device authorizations of an unknown client.
	resp, err := e.s.HTTPClient().PostForm(e.s.URL+apispec.DeviceAuthorizationPath, url.Values{"client_id": {"evil"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("device authorization of an unknown client: %d, want 401", resp.StatusCode)
	}
}
