package e2e

import (
	"bytes"
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
	"testing"

	"trove.dev/trove/internal/signing/signingtest"
)

// loginPassword is the password of the test's user.
const loginPassword = "a long and secret password"

// TestPrivateNamespaceWithLogin is the story of a private provider: an
// admin publishes it into a private namespace and makes a user a reader.
// Anonymous `terraform init` is told to log in; `terraform login` (driven
// by the test, which plays the browser) obtains a token, with which
// `terraform init` installs the provider. A service token in a
// credentials block works too; a wrong one is rejected.
func TestPrivateNamespaceWithLogin(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))

	// The namespace is private: nothing is said about visibility.
	out := srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace)
	if !strings.Contains(out, "private") {
		t.Errorf("namespace create printed %q, want it to say the namespace is private", out)
	}
	key := setupKey(t, srv)
	publishToken := createToken(t, srv, "publish")
	publish(t, srv, publishToken, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	srv.mustCLIStdin(t, srv.AdminToken, loginPassword+"\n", "user", "create", "alice", "--password-stdin")
	srv.mustCLI(t, srv.AdminToken, "member", "add", namespace, "alice", "--role", "reader")
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "other")
	other := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "other", "--scope", "read"))
	forEachClient(t, func(t *testing.T, client string) {
		testPrivateInstalls(t, srv, client, key, other)
	})
}

// testPrivateInstalls is what users of TestPrivateNamespaceWithLogin's
// private provider see with client: other is a read token of another
// namespace.
func testPrivateInstalls(t *testing.T, srv *troveServer, client string, key *signingtest.Key, other string) {
	source := fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType)
	t.Run("anonymous init is told to log in", func(t *testing.T) {
		tf := newClient(t, client, srv, "")
		res := tf.run(t, writeProject(t, srv, "1.0.0", "anon"), "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "host "+srv.Host+" requires authentication credentials") {
			t.Errorf("anonymous terraform init: exit %d, want a failure saying the host requires authentication credentials:\n%s", res.Code, res.Output)
		}
	})

	t.Run("login then init", func(t *testing.T) {
		tf := newClient(t, client, srv, "")
		// With TF_CLI_CONFIG_FILE set, terraform ignores its configuration
		// directory, credentials.tfrc.json included: run it as a user does,
		// with the configuration in HOME (which holds none).
		tf.env = slices.DeleteFunc(tf.env, func(kv string) bool { return strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") })
		home := tf.home()
		// terraform login writes credentials.tfrc.json into this directory
		// but does not create it (on a workstation it exists already).
		if err := os.MkdirAll(filepath.Join(home, ".terraform.d"), 0o700); err != nil {
			t.Fatal(err)
		}
		terraformLogin(t, srv, tf, srv.Host, "alice", loginPassword)

		raw, err := os.ReadFile(filepath.Join(home, ".terraform.d", "credentials.tfrc.json"))
		if err != nil {
			t.Fatalf("terraform login stored no credentials: %v", err)
		}
		var creds struct {
			Credentials map[string]struct {
				Token string `json:"token"`
			} `json:"credentials"`
		}
		if err := json.Unmarshal(raw, &creds); err != nil || !strings.HasPrefix(creds.Credentials[srv.Host].Token, "trove_") {
			t.Fatalf("credentials.tfrc.json = %s, want a Trove token for %s", raw, srv.Host)
		}

		res := tf.mustRun(t, writeProject(t, srv, "1.0.0", "alice"), "init", "-input=false")
		if want := tf.installedLine(source, "1.0.0", key.KeyID); !strings.Contains(res.Flat, want) {
			t.Errorf("terraform init with the login token lacks %q:\n%s", want, res.Output)
		}

		// The token is alice's, read-only, listed and revocable.
		list := srv.mustCLI(t, srv.AdminToken, "token", "list", "--user", "alice")
		if !strings.Contains(list, "alice") || !strings.Contains(list, "read") || !strings.Contains(list, "active") {
			t.Errorf("trove token list --user alice:\n%s", list)
		}
		// The newest login's token: earlier clients' logins are listed too.
		tokenLine := ""
		for line := range strings.Lines(list) {
			if strings.Contains(line, "active") {
				tokenLine = line
			}
		}
		audit := srv.mustCLI(t, srv.AdminToken, "audit", "--action", "login.success")
		if !strings.Contains(audit, "user:alice") {
			t.Errorf("trove audit does not show alice's login:\n%s", audit)
		}
		if strings.Contains(srv.log(), loginPassword) || strings.Contains(srv.log(), creds.Credentials[srv.Host].Token) {
			t.Error("the server log contains the password or the token")
		}

		// Revoking the token locks terraform out again.
		id := regexp.MustCompile(`tok_[0-9a-f]+`).FindString(tokenLine)
		srv.mustCLI(t, srv.AdminToken, "token", "revoke", id)
		res = tf.run(t, writeProject(t, srv, "1.0.0", "revoked"), "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "host "+srv.Host+" rejected the given authentication credentials") {
			t.Errorf("init with a revoked token: exit %d, want the credentials to be rejected:\n%s", res.Code, res.Output)
		}
	})

	t.Run("service token in a credentials block", func(t *testing.T) {
		tf := newClient(t, client, srv, createToken(t, srv, "read"))
		res := tf.mustRun(t, writeProject(t, srv, "1.0.0", "ci"), "init", "-input=false")
		if want := tf.installedLine(source, "1.0.0", key.KeyID); !strings.Contains(res.Flat, want) {
			t.Errorf("terraform init with a service token lacks %q:\n%s", want, res.Output)
		}
	})

	t.Run("token of another namespace", func(t *testing.T) {
		tf := newClient(t, client, srv, other)
		res := tf.run(t, writeProject(t, srv, "1.0.0", "stranger"), "init", "-input=false")
		// The provider is "not found", exactly as if it did not exist.
		if res.Code == 0 || !strings.Contains(res.Flat, "provider registry "+srv.Host+" does not have a provider named "+srv.Host+"/"+namespace+"/"+providerType) {
			t.Errorf("init with another namespace's token: exit %d, want provider not found:\n%s", res.Code, res.Output)
		}
	})

	t.Run("wrong token in a credentials block", func(t *testing.T) {
		tf := newClient(t, client, srv, "trove_"+strings.Repeat("A", 43))
		res := tf.run(t, writeProject(t, srv, "1.0.0", "wrong"), "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "host "+srv.Host+" rejected the given authentication credentials") {
			t.Errorf("init with a wrong token: exit %d, want the credentials to be rejected:\n%s", res.Code, res.Output)
		}
	})
}

// setupKey registers a fresh signing key for the namespace.
func setupKey(t *testing.T, s *troveServer) *signingtest.Key {
	t.Helper()
	key := signingtest.NewKey(t, namespace)
	s.mustCLI(t, s.AdminToken, "key", "add", namespace, "--file", writeFile(t, t.TempDir(), "key.asc", []byte(key.ArmoredPublic)))
	return key
}

// mustCLIStdin runs a trove client command with stdin that must succeed.
func (s *troveServer) mustCLIStdin(t *testing.T, token, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, args...)
	cmd.Env = append(baseEnv(t.TempDir()), "TROVE_ADDR="+s.Addr, "TROVE_CA_FILE="+s.CAFile, "TROVE_TOKEN="+token)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trove %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// home returns the HOME of the terraform environment.
func (tf *terraformCLI) home() string {
	for _, kv := range tf.env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			return h
		}
	}
	return ""
}

var authorizeURL = regexp.MustCompile(`https://\S+/oauth/authorize\?\S+`)

// terraformLogin runs `terraform login <host>` (or tofu's), answers its prompt, and
// plays the browser: it opens the authorization URL terraform prints,
// submits the login form with the user's credentials and the form's CSRF
// token and cookie, and follows the redirect to terraform's local
// listener, which completes the login.
func terraformLogin(t *testing.T, s *troveServer, tf *terraformCLI, host, user, password string) {
	t.Helper()
	terraformLoginVia(t, tf, host, func(authz string) string { return playBrowser(t, s, authz, user, password) })
}

// terraformLoginVia is terraformLogin with browse playing the browser: it
// gets the authorization URL terraform prints and returns the URL of
// terraform's listener the server finally redirects to.
func terraformLoginVia(t *testing.T, tf *terraformCLI, host string, browse func(authz string) string) {
	t.Helper()
	// A browser that records the URL instead of opening it, first on the
	// PATH, so that no real browser is ever started.
	bin := t.TempDir()
	opened := filepath.Join(bin, "opened-url")
	script := "#!/bin/sh\nprintf '%s\\n' \"$1\" > " + opened + "\n"
	for _, name := range []string{"xdg-open", "x-www-browser", "www-browser"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := make([]string, 0, len(tf.env)+1)
	for _, kv := range tf.env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			kv = "PATH=" + bin + string(os.PathListSeparator) + p
		}
		env = append(env, kv)
	}
	env = append(env, "BROWSER="+filepath.Join(bin, "xdg-open"))

	ctx, cancel := context.WithTimeout(t.Context(), terraformTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tf.bin, "login", host)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader("yes\n")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	output := newLineLog(stdout)
	authz, ok := output.waitMatch(ctx, authorizeURL)
	if !ok {
		output.waitEOF(ctx)
		_ = cmd.Wait()
		t.Fatalf("terraform login printed no authorization URL:\n%s\n%s", output, stderr.String())
	}

	code := browse(authz)
	// Deliver the code to terraform's listener, as the browser would.
	callback, err := url.Parse(code)
	if err != nil {
		t.Fatal(err)
	}
	callback.Host = "127.0.0.1:" + callback.Port() // terraform listens on 127.0.0.1
	// Terraform closes its listener as soon as it has the code, possibly
	// before the answer is written: a cut connection is fine, what counts
	// is that terraform then finishes the login.
	if resp, err := http.Get(callback.String()); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("terraform's listener answered %d", resp.StatusCode)
		}
	}
	// Every line is read before Wait closes the pipe.
	output.waitEOF(ctx)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("terraform login: %v\n%s\n%s", err, output, stderr.String())
	}
	if !strings.Contains(output.String(), "Success!") {
		t.Errorf("terraform login output lacks Success!:\n%s", output.String())
	}
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// playBrowser opens the authorization URL, logs in and returns the URL the
// server redirects to (terraform's listener with the code and state).
func playBrowser(t *testing.T, s *troveServer, authz, user, password string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := s.httpClient(t)
	browser.Jar = jar
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	authzURL, err := url.Parse(authz)
	if err != nil {
		t.Fatal(err)
	}
	q := authzURL.Query()
	for _, name := range []string{"client_id", "redirect_uri", "state", "code_challenge"} {
		if q.Get(name) == "" {
			t.Fatalf("terraform's authorization URL has no %s: %s", name, authz)
		}
	}
	if q.Get("code_challenge_method") != "S256" || !strings.HasPrefix(q.Get("redirect_uri"), "http://localhost:") {
		t.Fatalf("terraform's authorization URL: %s", authz)
	}

	resp, err := browser.Get(authz)
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
	if form.Get("csrf") == "" || form.Get("state") != q.Get("state") {
		t.Fatalf("the login page's form lacks the CSRF token or the state:\n%s", page)
	}
	form.Set("username", user)
	form.Set("password", password)
	form.Set("action", "allow")
	post, err := url.Parse(authz)
	if err != nil {
		t.Fatal(err)
	}
	post.RawQuery = ""
	resp, err = browser.PostForm(post.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("submitting the login form answered %d, want 302:\n%s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Scheme+"://"+loc.Host+loc.Path != q.Get("redirect_uri") || loc.Query().Get("state") != q.Get("state") || loc.Query().Get("code") == "" {
		t.Fatalf("the login redirects to %q, want %s with a code and the state", resp.Header.Get("Location"), q.Get("redirect_uri"))
	}
	return loc.String()
}
