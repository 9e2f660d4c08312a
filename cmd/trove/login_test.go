package main

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/internal/trovetest"
)

var (
	loginURL    = regexp.MustCompile(`https://\S+/oauth/authorize\?\S+`)
	hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// playLoginBrowser does what the user's browser does with the URL trove
// login prints: it opens the login page, submits the form with user and
// password, and follows the redirect to the waiting trove login.
func playLoginBrowser(t *testing.T, s *trovetest.Server, authz, user, password string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &http.Client{Jar: jar, Transport: s.HTTPClient().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := b.Get(authz)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the login page answered %d:\n%s", resp.StatusCode, page)
	}
	form := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	form.Set("username", user)
	form.Set("password", password)
	form.Set("action", "allow")
	post, _ := url.Parse(authz)
	post.RawQuery = ""
	resp, err = b.PostForm(post.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("submitting the login form answered %d:\n%s", resp.StatusCode, body)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Hostname() != "localhost" {
		t.Fatalf("the login redirects to %q", resp.Header.Get("Location"))
	}
	back.Host = "127.0.0.1:" + back.Port()
	resp, err = http.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "logged in") {
		t.Fatalf("trove login's listener answered %d: %s", resp.StatusCode, body)
	}
}

// runLoginCommand runs `trove login` and plays the browser for it.
func runLoginCommand(t *testing.T, s *trovetest.Server, environ map[string]string, user, password string) result {
	t.Helper()
	pr, pw := io.Pipe()
	var stdout strings.Builder
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"login", s.Host, "--timeout", "1m"}, func(k string) string { return environ[k] },
			strings.NewReader(""), &stdout, pw)
		pw.Close()
		done <- code
	}()
	var stderr strings.Builder
	sc := bufio.NewScanner(pr)
	played := false
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if u := loginURL.FindString(sc.Text()); u != "" && !played {
			played = true
			go func() {
				// The rest of stderr must be read meanwhile.
				playLoginBrowser(t, s, u, user, password)
			}()
		}
	}
	code := <-done
	if !played {
		t.Fatalf("trove login printed no URL:\n%s", stderr.String())
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestLoginStoresTokenForEveryCommand(t *testing.T) {
	s := trovetest.Start(t)
	home := t.TempDir()
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": home}
	for _, args := range [][]string{
		{"namespace", "create", "acme"},
		{"user", "create", "alice", "--password-stdin"},
		{"member", "add", "acme", "alice", "--role", "reader"},
	} {
		if r := runTrove(t, admin, "a long password\n", args...); r.code != exitOK {
			t.Fatalf("trove %v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// A credentials file of terraform's with another host in it, which
	// must survive.
	cfgDir := filepath.Join(t.TempDir(), "tf")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(cfgDir, "credentials.tfrc.json")
	if err := os.WriteFile(credFile, []byte(`{"credentials":{"other.example":{"token":"keep-me"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	user := map[string]string{"TROVE_ADDR": s.URL, "TROVE_CA_FILE": s.CAFile, "HOME": home, "TF_CLI_CONFIG_DIR": cfgDir}

	// Without a token, the private namespace is invisible and the error
	// (for a command needing one) says how to get a token.
	if r := runTrove(t, user, "", "token", "list", "--user", "alice"); r.code != exitError || !strings.Contains(r.stderr, "trove login "+s.Host) {
		t.Errorf("token list without a token: exit %d, stderr %q; want advice to run trove login", r.code, r.stderr)
	}

	r := runLoginCommand(t, s, user, "alice", "a long password")
	if r.code != exitOK || !strings.Contains(r.stdout, "Logged in to "+s.Host+" as alice") {
		t.Fatalf("trove login: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Credentials map[string]struct {
			Token string `json:"token"`
		} `json:"credentials"`
	}
	data, err := os.ReadFile(credFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Credentials["other.example"].Token != "keep-me" || !strings.HasPrefix(doc.Credentials[s.Host].Token, "trove_") {
		t.Fatalf("credentials file after login:\n%s", data)
	}
	// One login serves terraform and tofu too: they know this local
	// server as trove.localhost, through its host block.
	if doc.Credentials["trove.localhost"].Token != doc.Credentials[s.Host].Token || !strings.Contains(r.stdout, "trove.localhost") {
		t.Fatalf("after login, trove.localhost lacks the token of %s:\n%s\nstdout: %s", s.Host, data, r.stdout)
	}
	if fi, err := os.Stat(credFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, %v; want 0600", fi.Mode(), err)
	}

	// Every client command now uses the stored token.
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitOK || !strings.Contains(r.stdout, "acme") {
		t.Errorf("namespace list with the stored token: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Terraform's TF_TOKEN_<host> variable wins over the file, as in
	// Terraform (a host with a port can only be passed literally, through
	// a process environment).
	tfVar := "TF_TOKEN_" + strings.ReplaceAll(s.Host, ".", "_")
	user[tfVar] = "trove_notavalidtoken"
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitError || !strings.Contains(r.stderr, "came from "+tfVar) {
		t.Errorf("namespace list with a bad %s: exit %d, stderr %q", tfVar, r.code, r.stderr)
	}
	delete(user, tfVar)
	// TROVE_TOKEN wins over both; a refused one is named as the source.
	user["TROVE_TOKEN"] = "trove_notavalidtoken"
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitError || !strings.Contains(r.stderr, "came from TROVE_TOKEN") {
		t.Errorf("namespace list with a bad TROVE_TOKEN: exit %d, stderr %q", r.code, r.stderr)
	}
	delete(user, "TROVE_TOKEN")

	// logout revokes the token and removes it from the file only.
	if r := runTrove(t, user, "", "logout", s.Host); r.code != exitOK || !strings.Contains(r.stdout, "revoked") {
		t.Fatalf("trove logout: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	stored := doc.Credentials[s.Host].Token
	data, _ = os.ReadFile(credFile)
	if strings.Contains(string(data), s.Host) || !strings.Contains(string(data), "keep-me") {
		t.Errorf("credentials file after logout:\n%s", data)
	}
	user["TROVE_TOKEN"] = stored
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitError {
		t.Errorf("the token still works after logout: exit %d, stdout %q", r.code, r.stdout)
	}
	delete(user, "TROVE_TOKEN")
	if r := runTrove(t, user, "", "logout", s.Host); r.code != exitOK || !strings.Contains(r.stdout, "nothing to do") {
		t.Errorf("second logout: exit %d, stdout %q", r.code, r.stdout)
	}

	// A token that terraform login stored for trove.localhost alone serves
	// trove too, and `trove logout trove.localhost` is the local server's.
	user["TROVE_TOKEN"] = s.AdminToken
	minted := runTrove(t, user, "", "token", "create", "--namespace", "acme", "--scope", "read")
	delete(user, "TROVE_TOKEN")
	if minted.code != exitOK {
		t.Fatalf("token create: exit %d, stderr %q", minted.code, minted.stderr)
	}
	if err := os.WriteFile(credFile, []byte(`{"credentials":{"trove.localhost":{"token":"`+strings.TrimSpace(minted.stdout)+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitOK || !strings.Contains(r.stdout, "acme") {
		t.Errorf("namespace list with the token of trove.localhost: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runTrove(t, user, "", "logout", "trove.localhost"); r.code != exitOK || !strings.Contains(r.stdout, "revoked") {
		t.Errorf("trove logout trove.localhost: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(credFile); strings.Contains(string(data), "trove.localhost") {
		t.Errorf("credentials file after logout of trove.localhost:\n%s", data)
	}

	// A token the server refuses, found in the file, is named with the file.
	if err := os.WriteFile(credFile, []byte(`{"credentials":{"`+s.Host+`":{"token":"trove_revoked"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runTrove(t, user, "", "namespace", "list"); r.code != exitError || !strings.Contains(r.stderr, credFile) {
		t.Errorf("namespace list with a refused stored token: exit %d, stderr %q; want it to name %s", r.code, r.stderr, credFile)
	}
}

func TestLoginCallback(t *testing.T) {
	results := make(chan loginResult, 1)
	h := callbackHandler("the-state", results)
	get := func(q string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login?"+q, nil))
		return rec.Code
	}
	// Another state (a page trying to inject its own code) delivers nothing.
	if code := get("code=evil&state=other"); code != http.StatusBadRequest {
		t.Errorf("wrong state answered %d", code)
	}
	select {
	case r := <-results:
		t.Fatalf("a wrong state delivered %+v", r)
	default:
	}
	if code := get("error=access_denied&error_description=the+user+denied+the+request&state=the-state"); code != http.StatusOK {
		t.Errorf("an error answer got %d", code)
	}
	if r := <-results; r.err == nil || !strings.Contains(r.err.Error(), "access_denied") {
		t.Errorf("an error answer delivered %+v", r)
	}
	if code := get("code=c0de&state=the-state"); code != http.StatusOK {
		t.Errorf("the code answered %d", code)
	}
	if r := <-results; r.code != "c0de" {
		t.Errorf("delivered %+v, want the code", r)
	}
}

func TestLoginWithoutLoginService(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"providers.v1":"/v1/providers/"}`)
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runTrove(t, map[string]string{"HOME": t.TempDir(), "TROVE_CA_FILE": caFile}, "", "login", srv.URL)
	if r.code != exitError || !strings.Contains(r.stderr, "offers no login") {
		t.Errorf("login to a registry without login.v1: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestCredentialsHostAndVariable(t *testing.T) {
	for addr, want := range map[string][2]string{
		"https://Registry.My-Corp.Example:443": {"registry.my-corp.example", "TF_TOKEN_registry_my__corp_example"},
		"localhost:8443":                       {"localhost:8443", "TF_TOKEN_localhost:8443"},
		"https://registry.internal/":           {"registry.internal", "TF_TOKEN_registry_internal"},
		"http://127.0.0.1:8080":                {"127.0.0.1:8080", "TF_TOKEN_127_0_0_1:8080"},
		"http://localhost:8080":                {"localhost:8080", "TF_TOKEN_localhost:8080"},
	} {
		h, err := credentialsHost(addr)
		if err != nil || h.ForDisplay() != want[0] || tfTokenVar(h) != want[1] {
			t.Errorf("credentialsHost(%q) = %q (%s), %v; want %q (%s)", addr, h.ForDisplay(), tfTokenVar(h), err, want[0], want[1])
		}
	}
	// A token Terraform keeps for https://registry.internal must never go
	// to http://registry.internal in the clear.
	for _, addr := range []string{"http://registry.internal", "http://10.0.0.5:8080", "ftp://registry.internal"} {
		if h, err := credentialsHost(addr); err == nil || !strings.Contains(err.Error(), "not https") {
			t.Errorf("credentialsHost(%q) = %q, %v; want it refused as not https", addr, h, err)
		}
	}
}

// TestStoredTokenNotSentOverHTTP: with TROVE_ADDR on plain http to another
// machine, neither TF_TOKEN_<host> nor the credentials file supplies a
// token, so none goes out in the clear; over https the same one does.
func TestStoredTokenNotSentOverHTTP(t *testing.T) {
	host, err := credentialsHost("https://registry.internal")
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{env: env{getenv: func(k string) string {
		if k == tfTokenVar(host) {
			return "trove_secret"
		}
		return ""
	}}}
	if tok, src, err := c.storedToken("http://registry.internal"); tok != "" || err != nil {
		t.Errorf("storedToken over plain http = %q from %q, %v; want none", tok, src, err)
	}
	if tok, _, _ := c.storedToken("https://registry.internal"); tok != "trove_secret" {
		t.Errorf("storedToken over https = %q, want the TF_TOKEN_ value", tok)
	}
}

// TestLoginUnresolvedHost: a host that does not resolve, trove.localhost
// above all, is answered with what to do instead.
func TestLoginUnresolvedHost(t *testing.T) {
	notFound := fmt.Errorf("discovery: %w", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true})
	for _, tc := range []struct {
		host string
		err  error
		want []string
	}{
		{"trove.localhost", notFound, []string{"trove.localhost does not resolve", "host block", "run `trove login` without a host", "TROVE_ADDR"}},
		{"registry.example", notFound, []string{"registry.example does not resolve", "check the host name", "run `trove login` without a host"}},
		{"trove.localhost", errors.New("connection refused"), []string{"connection refused"}},
	} {
		got := unresolvedHost(svchost.Hostname(tc.host), tc.err).Error()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s, %v: %q lacks %q", tc.host, tc.err, got, w)
			}
		}
	}
}

// TestLoginFlags: login and logout bring their own token and print text,
// so they take neither --token nor --json.
func TestLoginFlags(t *testing.T) {
	for _, name := range []string{"login", "logout"} {
		r := runTrove(t, nil, "", name, "--help")
		for _, f := range []string{"--token", "--json"} {
			if strings.Contains(r.stdout, f) {
				t.Errorf("trove %s --help lists %s", name, f)
			}
			if r := runTrove(t, map[string]string{"HOME": t.TempDir()}, "", name, f+"=x"); r.code != exitUsage || !strings.Contains(r.stderr, "unknown flag "+f) {
				t.Errorf("trove %s %s=x: exit %d %q, want unknown flag", name, f, r.code, r.stderr)
			}
		}
		if r := runTrove(t, nil, "", name, "--help"); !strings.Contains(r.stdout, "--addr") || !strings.Contains(r.stdout, "--ca-file") {
			t.Errorf("trove %s --help lacks --addr or --ca-file:\n%s", name, r.stdout)
		}
	}
}

// TestTroveLocalhostTokenOnlyForThisMachine: the token of trove.localhost
// (the name the clients give a local Trove) serves a loopback address
// without a token of its own, and never another machine's address, with
// or without a dot.
func TestTroveLocalhostTokenOnlyForThisMachine(t *testing.T) {
	c := &cli{env: env{getenv: func(k string) string {
		if k == "TF_TOKEN_trove_localhost" {
			return "trove_local"
		}
		return ""
	}}}
	for addr, want := range map[string]string{
		"https://localhost:8443":      "trove_local",
		"https://127.0.0.1:8443":      "trove_local",
		"127.0.0.2:9443":              "trove_local",
		"https://10.0.0.5":            "",
		"https://203.0.113.7:8443":    "",
		"https://registry":            "",
		"https://trove-prod:8443":     "",
		"https://registry.internal":   "",
		"https://localhost.evil.test": "",
	} {
		if tok, src, _ := c.storedToken(addr); tok != want {
			t.Errorf("storedToken(%s) = %q from %q, want %q", addr, tok, src, want)
		}
		hosts, err := credentialsHosts(addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(hosts, svchost.Hostname(localHostName)); got != (want != "") {
			t.Errorf("credentialsHosts(%s) = %v: a login there stores the token for %s %v, want %v", addr, hosts, localHostName, got, want != "")
		}
	}
}
