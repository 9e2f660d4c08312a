package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoginAsTroveLocalhost is the README's "People and their tokens" on
// one machine: the user copies the host block the banner names into
// ~/.terraform.d, as the banner says, runs `terraform login
// trove.localhost` (tofu login likewise), and installs a provider of a
// private namespace through trove.localhost with the token that login
// stored. A CLI configuration file named by TF_CLI_CONFIG_FILE would make
// the clients ignore credentials.tfrc.json, which is why the banner
// points at the configuration directory instead.
func TestLoginAsTroveLocalhost(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace)
	key := setupKey(t, srv)
	publish(t, srv, createToken(t, srv, "publish"), packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	srv.mustCLIStdin(t, srv.AdminToken, loginPassword+"\n", "user", "create", "bob", "--password-stdin")
	srv.mustCLI(t, srv.AdminToken, "member", "add", namespace, "bob", "--role", "reader")
	hostBlock := srv.hostBlockFile(t)
	source := fmt.Sprintf("%s/%s/%s", moduleHost, namespace, providerType)

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		// As a user's shell has it: no TF_CLI_CONFIG_FILE, the host block
		// copied into the configuration directory.
		tf.env = slices.DeleteFunc(tf.env, func(kv string) bool { return strings.HasPrefix(kv, "TF_CLI_CONFIG_FILE=") })
		configDir := filepath.Join(tf.home(), ".terraform.d")
		if err := os.MkdirAll(configDir, 0o700); err != nil {
			t.Fatal(err)
		}
		block, err := os.ReadFile(hostBlock)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, configDir, filepath.Base(hostBlock), block)

		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf(`terraform {
  required_providers {
    example = {
      source  = %q
      version = "1.0.0"
    }
  }
}
`, source)))
		res := tf.run(t, dir, "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "host "+moduleHost+" requires authentication credentials") {
			t.Fatalf("%s init before login: exit %d, want to be told %s requires credentials:\n%s", client, res.Code, moduleHost, res.Output)
		}

		terraformLogin(t, srv, tf, moduleHost, "bob", loginPassword)
		res = tf.mustRun(t, dir, "init", "-input=false")
		if want := tf.installedLine(source, "1.0.0", key.KeyID); !strings.Contains(res.Flat, want) {
			t.Errorf("%s init after login lacks %q:\n%s", client, want, res.Output)
		}
	})
}
