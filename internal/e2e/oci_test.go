package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOCIInstallWithTofu: OpenTofu installs a provider Trove published
// through an oci_mirror installation method and modules through oci://
// sources (by tag and by digest) from Trove's OCI API (docs/oci.md); the
// lock file's zh: hash is the OCI layer digest (the stored zip's
// SHA-256); a module of a private namespace needs credentials, given as
// an oci_credentials block with a Trove token as the password.
func TestOCIInstallWithTofu(t *testing.T) {
	requireTofu(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, srv, publishToken, rel)
	srv.mustCLI(t, publishToken, "module", "publish", namespace+"/labels/null", "1.0.0", writeModuleDir(t, "labels", "1.0.0", ""))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "vault")
	srv.mustCLI(t, srv.AdminToken, "module", "publish", "vault/secrets/aws", "1.0.0", writeModuleDir(t, "secrets", "1.0.0", ""))
	vaultToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "vault", "--scope", "read"))

	newTofu := func(t *testing.T) *terraformCLI {
		tf := newClient(t, clientTofu, srv, "")
		appendCLIConfig(t, tf, fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%[1]s/${namespace}/${type}"
    include             = ["%[1]s/*/*"]
  }
}
`, srv.Host))
		return tf
	}

	t.Run("provider through oci_mirror", func(t *testing.T) {
		tf := newTofu(t)
		dir := writeProject(t, srv, "1.0.0", "from-oci")
		res := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(res.Flat, "Installed "+srv.Host+"/"+namespace+"/"+providerType+" v1.0.0") {
			t.Errorf("tofu init output lacks the installation:\n%s", res.Output)
		}
		zip, err := os.ReadFile(rel.path(rel.zipName(hostPlatform)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(zip)
		zh := "zh:" + hex.EncodeToString(sum[:])
		lock := readLock(t, srv, dir)
		if lock.Version != "1.0.0" || !slices.Contains(lock.Hashes, zh) {
			t.Errorf("lock file = %+v, want version 1.0.0 with %s (the layer digest)", lock, zh)
		}
		applyAndCheck(t, tf, dir, "from-oci")
	})

	moduleDir := func(t *testing.T, source string) string {
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"m\" {\n  source = %q\n}\n\noutput \"text\" {\n  value = module.m.text\n}\n", source)))
		return dir
	}
	t.Run("module by tag and by digest", func(t *testing.T) {
		tf := newTofu(t)
		repo := srv.Host + "/" + namespace + "/modules/labels/null"
		dir := moduleDir(t, "oci://"+repo+"?tag=1.0.0")
		tf.mustRun(t, dir, "init", "-input=false")
		out := tf.mustRun(t, dir, "apply", "-auto-approve", "-input=false")
		if !strings.Contains(out.Flat, `text = "labels 1.0.0"`) {
			t.Errorf("apply output lacks the module's output:\n%s", out.Output)
		}
		r := srv.do(t, "HEAD", "https://"+srv.Host+"/v2/"+namespace+"/modules/labels/null/manifests/1.0.0", nil)
		digest := r.Header.Get("Docker-Content-Digest")
		if digest == "" {
			t.Fatalf("HEAD manifest: no digest (status %d)", r.Status)
		}
		dir = moduleDir(t, "oci://"+repo+"?digest="+digest)
		tf.mustRun(t, dir, "init", "-input=false")
		out = tf.mustRun(t, dir, "apply", "-auto-approve", "-input=false")
		if !strings.Contains(out.Flat, `text = "labels 1.0.0"`) {
			t.Errorf("apply output (by digest) lacks the module's output:\n%s", out.Output)
		}
	})

	t.Run("a private module needs credentials", func(t *testing.T) {
		tf := newTofu(t)
		dir := moduleDir(t, "oci://"+srv.Host+"/vault/modules/secrets/aws?tag=1.0.0")
		if res := tf.run(t, dir, "init", "-input=false"); res.Code == 0 {
			t.Fatalf("tofu init of a private module without credentials succeeded:\n%s", res.Output)
		}
		appendCLIConfig(t, tf, fmt.Sprintf("\noci_credentials %q {\n  username = \"tofu\"\n  password = %q\n}\n", srv.Host, vaultToken))
		tf.mustRun(t, dir, "init", "-input=false")
		out := tf.mustRun(t, dir, "apply", "-auto-approve", "-input=false")
		if !strings.Contains(out.Flat, `text = "secrets 1.0.0"`) {
			t.Errorf("apply output lacks the private module's output:\n%s", out.Output)
		}
	})
}
