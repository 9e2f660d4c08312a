package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAdminTokenWhileServing is the recovery path when every admin token
// is lost: `trove admin token` writes a new one into the index of the
// running server, which accepts it at once.
func TestAdminTokenWhileServing(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)

	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, "admin", "token", "--data-dir", dataDir, "--description", "recovery", "--expires", "24h")
	cmd.Env = baseEnv(t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trove admin token: %v\n%s", err, stderr.String())
	}
	minted := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(minted, "trove_") {
		t.Fatalf("trove admin token printed %q", stdout.String())
	}

	// The running server takes the token at once, for the API and for the
	// protocol (a private namespace's versions).
	srv.mustCLI(t, minted, "namespace", "create", namespace)
	versions := srv.Addr + "/v1/providers/" + namespace + "/" + providerType + "/versions"
	if res := srv.do(t, http.MethodGet, versions, http.Header{"Authorization": {"Bearer " + minted}}); res.Status != http.StatusNotFound {
		t.Errorf("versions of a missing provider with the minted token answered %d, want 404 (not 401)", res.Status)
	}
	audit := srv.mustCLI(t, minted, "audit", "--action", "token.create")
	if !strings.Contains(audit, "local-admin") {
		t.Errorf("trove audit does not show the token minted by local-admin:\n%s", audit)
	}
	if list := srv.mustCLI(t, minted, "token", "list"); !strings.Contains(list, "recovery") {
		t.Errorf("trove token list lacks the minted token:\n%s", list)
	}
	if strings.Contains(srv.log(), minted) {
		t.Error("the server log shows the minted token")
	}
}

// TestTroveLoginSharesCredentials: a user with a password runs `trove
// login` (the test plays the browser), which stores the token where
// terraform and tofu look for it; trove's own commands and the clients'
// installs of a private provider then work without TROVE_TOKEN.
func TestTroveLoginSharesCredentials(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace)
	key := setupKey(t, srv)
	publish(t, srv, createToken(t, srv, "publish"), packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	srv.mustCLIStdin(t, srv.AdminToken, loginPassword+"\n", "user", "create", "alice", "--password-stdin")
	srv.mustCLI(t, srv.AdminToken, "member", "add", namespace, "alice", "--role", "reader")
	source := srv.Host + "/" + namespace + "/" + providerType

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		// The clients read credentials.tfrc.json from HOME only without a
		// TF_CLI_CONFIG_FILE.
		tf.env = slices.DeleteFunc(tf.env, func(kv string) bool { return strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") })
		home := tf.home()

		troveLogin(t, srv, home, "alice", loginPassword)

		// trove uses the stored token: the private namespace is listed.
		res, err := srv.runCLI(t.Context(), home, "", "namespace", "list")
		if err != nil || res.Code != 0 || !strings.Contains(res.Stdout, namespace) {
			t.Fatalf("trove namespace list after trove login: %v, exit %d\n%s\n%s", err, res.Code, res.Stdout, res.Stderr)
		}
		// So does the client.
		out := tf.mustRun(t, writeProject(t, srv, "1.0.0", "alice-"+client), "init", "-input=false")
		if want := tf.installedLine(source, "1.0.0", key.KeyID); !strings.Contains(out.Flat, want) {
			t.Errorf("%s init with the token of trove login lacks %q:\n%s", client, want, out.Output)
		}

		// And through trove.localhost, the name the banner gives the
		// clients, with its host block copied as the README says: the
		// same login stored the token under that name too.
		configDir := filepath.Join(home, ".terraform.d")
		block, err := os.ReadFile(srv.hostBlockFile(t))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, configDir, filepath.Base(srv.hostBlockFile(t)), block)
		localSource := moduleHost + "/" + namespace + "/" + providerType
		localProject := func() string {
			dir := t.TempDir()
			writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("terraform {\n  required_providers {\n    example = {\n      source  = %q\n      version = \"1.0.0\"\n    }\n  }\n}\n", localSource)))
			return dir
		}
		out = tf.mustRun(t, localProject(), "init", "-input=false")
		if want := tf.installedLine(localSource, "1.0.0", key.KeyID); !strings.Contains(out.Flat, want) {
			t.Errorf("%s init through %s with the token of trove login lacks %q:\n%s", client, moduleHost, want, out.Output)
		}

		// trove logout revokes it: the client is locked out again, by
		// either name.
		res, err = srv.runCLI(t.Context(), home, "", "logout", srv.Host)
		if err != nil || res.Code != 0 {
			t.Fatalf("trove logout: %v, exit %d\n%s", err, res.Code, res.Stderr)
		}
		if out := tf.run(t, writeProject(t, srv, "1.0.0", "after-logout-"+client), "init", "-input=false"); out.Code == 0 {
			t.Errorf("%s init after trove logout succeeded:\n%s", client, out.Output)
		}
		if out := tf.run(t, localProject(), "init", "-input=false"); out.Code == 0 {
			t.Errorf("%s init through %s after trove logout succeeded:\n%s", client, moduleHost, out.Output)
		}
	})
}

// troveLogin runs `trove login HOST` with HOME=home, plays the browser for
// the URL it prints, and waits for it to store the token.
func troveLogin(t *testing.T, srv *troveServer, home, user, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, "login", srv.Host)
	cmd.Env = append(baseEnv(home), "TROVE_CA_FILE="+srv.CAFile) // no BROWSER: trove only prints the URL
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	output := newLineLog(stderr)
	authz, ok := output.waitMatch(ctx, authorizeURL)
	if !ok {
		output.waitEOF(ctx)
		_ = cmd.Wait()
		t.Fatalf("trove login printed no authorization URL:\n%s", output)
	}
	back, err := url.Parse(playBrowser(t, srv, authz, user, password))
	if err != nil {
		t.Fatal(err)
	}
	back.Host = "127.0.0.1:" + back.Port()
	resp, err := http.Get(back.String())
	if err != nil {
		t.Fatalf("delivering the code to trove login: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("trove login's listener answered %d", resp.StatusCode)
	}
	// Every line is read before Wait closes the pipe.
	output.waitEOF(ctx)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("trove login: %v\n%s\n%s", err, stdout.String(), output)
	}
	if !strings.Contains(stdout.String(), "Logged in to "+srv.Host+" as "+user) {
		t.Errorf("trove login printed %q", stdout.String())
	}
}
