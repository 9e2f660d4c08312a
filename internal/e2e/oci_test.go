package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestOCIMirrorWithTofu: OpenTofu installs a provider that Trove mirrors
// from an upstream registry (a second Trove) through an oci_mirror
// installation method from Trove's OCI API, under the repository layout
// <trove host>/<upstream host>/<namespace>/<type> (docs/oci.md): the
// first request of the version makes the mirror fetch and verify it and
// its packages as the network mirror does; the lock file's zh: is the
// upstream package's SHA-256; the mirror, not public, needs credentials
// (a Trove token, through the token endpoint's OCI tokens). A version
// the upstream published whose package it changed afterwards is tagged,
// but its package is never served.
func TestOCIMirrorWithTofu(t *testing.T) {
	requireTofu(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, up, publishToken, rel)
	// A second upstream version whose package the upstream swapped after
	// publishing: the mirror refuses it (its SHA256SUMS are signed), so
	// the OCI API never serves its bytes; and tofu cannot install it.
	rel2 := packageRelease(t, key, releaseSpec{Version: "1.1.0"})
	publish(t, up, publishToken, rel2)
	blob := findBlob(t, up.DataDir, rel2.zipDigest(t, hostPlatform))
	if blob == "" {
		t.Fatal("the upstream holds no package of 1.1.0")
	}
	if err := os.Chmod(blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, []byte("PK not the package that was signed"), 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := startMirror(t, up)
	token := strings.TrimSpace(mirror.mustCLI(t, mirror.AdminToken, "token", "create", "--scope", "read", "--description", "installs through OCI"))
	source := upstreamHost + "/" + namespace + "/" + providerType

	newTofu := func(t *testing.T, withCredentials bool) *terraformCLI {
		tf := newClient(t, clientTofu, mirror, "")
		appendCLIConfig(t, tf, fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%[1]s/${hostname}/${namespace}/${type}"
    include             = ["%[2]s/*/*"]
  }
}
`, mirror.Host, upstreamHost))
		if withCredentials {
			appendCLIConfig(t, tf, fmt.Sprintf("\noci_credentials %q {\n  username = \"tofu\"\n  password = %q\n}\n", mirror.Host, token))
		}
		return tf
	}

	t.Run("the mirror needs credentials", func(t *testing.T) {
		tf := newTofu(t, false)
		dir := writeMirrorProject(t, "1.0.0", "oci-mirrored")
		if res := tf.run(t, dir, "init", "-input=false"); res.Code == 0 {
			t.Fatalf("tofu init through a mirror that is not public succeeded without credentials:\n%s", res.Output)
		}
	})

	t.Run("install through oci_mirror", func(t *testing.T) {
		tf := newTofu(t, true)
		dir := writeMirrorProject(t, "1.0.0", "oci-mirrored")
		res := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(res.Flat, "Installed "+source+" v1.0.0") {
			t.Errorf("tofu init output lacks the installation:\n%s", res.Output)
		}
		zh := "zh:" + rel.zipDigest(t, hostPlatform)
		lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(lock), `provider "`+source+`"`) || !strings.Contains(string(lock), `version     = "1.0.0"`) || !strings.Contains(string(lock), `"`+zh+`"`) {
			t.Errorf("lock file lacks %s 1.0.0 with %s (the upstream package's SHA-256):\n%s", source, zh, lock)
		}
		applyAndCheck(t, tf, dir, "oci-mirrored")
		for _, p := range rel.Platforms {
			if findBlob(t, mirror.DataDir, rel.zipDigest(t, p)) == "" {
				t.Errorf("the mirror holds no package of %s after the install", p)
			}
		}
	})

	t.Run("a package removed from the store is streamed from the upstream again", func(t *testing.T) {
		digest := rel.zipDigest(t, hostPlatform)
		stored := findBlob(t, mirror.DataDir, digest)
		if stored == "" {
			t.Fatal("the mirror holds no package to remove")
		}
		if err := os.Remove(stored); err != nil {
			t.Fatal(err)
		}
		hdr := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+token))}}
		r := mirror.do(t, "GET", "https://"+mirror.Host+"/v2/"+source+"/blobs/sha256:"+digest, hdr)
		want, err := os.ReadFile(rel.path(rel.zipName(hostPlatform)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 200 || !bytes.Equal(r.Body, want) {
			t.Fatalf("GET the removed blob = %d, %d bytes, want 200 and the package (%d bytes)", r.Status, len(r.Body), len(want))
		}
		// The mirror stores the package once it verified it, which may be
		// after the last byte reached the client: wait for the store (the
		// deadline is generous; nothing is timed).
		deadline := time.Now().Add(time.Minute)
		for findBlob(t, mirror.DataDir, digest) == "" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if findBlob(t, mirror.DataDir, digest) == "" {
			t.Error("the mirror did not store the package it fetched again")
		}
	})

	t.Run("a tampered upstream package is never served", func(t *testing.T) {
		tf := newTofu(t, true)
		dir := writeMirrorProject(t, "1.1.0", "tampered")
		if res := tf.run(t, dir, "init", "-input=false"); res.Code == 0 {
			t.Fatalf("tofu init installed a tampered package:\n%s", res.Output)
		}
		if findBlob(t, mirror.DataDir, rel2.zipDigest(t, hostPlatform)) != "" {
			t.Error("the mirror stored a blob under the digest of the tampered package")
		}
		hdr := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+token))}}
		r := mirror.do(t, "GET", "https://"+mirror.Host+"/v2/"+source+"/tags/list", hdr)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"1.1.0"`) {
			t.Errorf("tags list = %d %s, want 1.0.0 and 1.1.0", r.Status, r.Body)
		}
		r = mirror.do(t, "GET", "https://"+mirror.Host+"/v2/"+source+"/manifests/1.1.0", hdr)
		if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "UNKNOWN") {
			t.Errorf("manifest of the tampered version = %d %s, want 502 (the upstream's package does not match its signed SHA256SUMS)", r.Status, r.Body)
		}
	})
}
