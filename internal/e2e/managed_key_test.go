package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestInstallSignedByManagedKey is the story of an author without GPG:
// the admin makes Trove generate the namespace's key (trove key
// generate), the author publishes a dist/ without .sig, and Terraform and
// OpenTofu install the release, verified with the key Trove generated.
func TestInstallSignedByManagedKey(t *testing.T) {
	requireTerraform(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")

	var key apispec.SigningKey
	out := srv.mustCLI(t, srv.AdminToken, "key", "generate", namespace, "--json")
	if err := json.Unmarshal([]byte(out), &key); err != nil {
		t.Fatalf("trove key generate --json printed %q: %v", out, err)
	}
	if !key.Managed || len(key.KeyID) != 16 || strings.Contains(out, "PRIVATE") {
		t.Fatalf("trove key generate answered %+v", key)
	}
	// The embedded default secret was made on first use, private.
	if fi, err := os.Stat(filepath.Join(dataDir, "signing-secret")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("data-dir/signing-secret: %v, %v; want a file of mode 0600", fi, err)
	}
	if list := srv.mustCLI(t, srv.AdminToken, "key", "list", namespace); !strings.Contains(list, key.KeyID) || !strings.Contains(list, "managed") {
		t.Errorf("trove key list shows:\n%s\nwant %s as managed", list, key.KeyID)
	}

	// A release as `trove provider package --unsigned` leaves it: no .sig.
	rel := packageRelease(t, signingtest.NewKey(t, "nobody"), releaseSpec{Version: "1.0.0"})
	if err := os.Remove(rel.path(rel.sigName())); err != nil {
		t.Fatal(err)
	}
	if out := publish(t, srv, createToken(t, srv, "publish"), rel); !strings.Contains(out, "Published") {
		t.Errorf("trove publish of an unsigned release printed %q", out)
	}

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		dir := writeProject(t, srv, "1.0.0", "managed-"+client)
		res := tf.mustRun(t, dir, "init", "-input=false")
		want := tf.installedLine(fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType), "1.0.0", key.KeyID)
		if !strings.Contains(res.Flat, want) {
			t.Errorf("%s init output lacks %q:\n%s", client, want, res.Output)
		}
	})
}
