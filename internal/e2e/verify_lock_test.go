package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestVerifyLockFromClients checks `trove verify --lock` on the lock files
// terraform and tofu write, not on one a test writes: a provider of a
// namespace with a Trove-managed key (so its versions carry provenance) is
// installed by each client, under both names the clients know this Trove
// by (its host with the port, and trove.localhost through the host block
// `trove serve` prints); verify passes on each lock file, checking the
// signed SHA256SUMS, every zh: hash and the provenance, and fails (exit 1,
// a FAIL line) once one zh: hash of the file is changed.
func TestVerifyLockFromClients(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	var key apispec.SigningKey
	if out := srv.mustCLI(t, srv.AdminToken, "key", "generate", namespace, "--json"); json.Unmarshal([]byte(out), &key) != nil || !key.Managed {
		t.Fatalf("trove key generate --json printed %q", out)
	}
	rel := packageRelease(t, signingtest.NewKey(t, "nobody"), releaseSpec{Version: "1.0.0"})
	if err := os.Remove(rel.path(rel.sigName())); err != nil { // signed by the managed key at publish
		t.Fatal(err)
	}
	publish(t, srv, createToken(t, srv, "publish"), rel)
	reader := createToken(t, srv, "read") // the API, provenance included, takes tokens only
	var envelope map[string]any
	srv.getJSON(t, "/api/v1/namespaces/"+namespace+"/providers/"+providerType+"/versions/1.0.0/provenance", reader, &envelope)
	if envelope["payloadType"] != "application/vnd.in-toto+json" {
		t.Fatalf("the version's provenance is %v, want a DSSE envelope", envelope)
	}

	// The clients lock a zh: hash of every file SHA256SUMS lists: the
	// archives and the manifest.
	sums, err := os.ReadFile(rel.path(rel.sumsName()))
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Count(strings.TrimSpace(string(sums)), "\n") + 1
	zh := regexp.MustCompile(`"zh:([0-9a-f]{64})"`)
	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		addModuleHost(t, tf, srv)
		for _, host := range []string{srv.Host, moduleHost} {
			source := host + "/" + namespace + "/" + providerType
			dir := writeProjectFor(t, source, "1.0.0", "verify-"+client)
			tf.mustRun(t, dir, "init", "-input=false")
			lock := filepath.Join(dir, ".terraform.lock.hcl")
			src, err := os.ReadFile(lock)
			if err != nil {
				t.Fatal(err)
			}
			hashes := zh.FindAllStringSubmatch(string(src), -1)
			if !strings.Contains(string(src), fmt.Sprintf("provider %q", source)) || len(hashes) != listed {
				t.Fatalf("%s wrote a lock file without %s or with %d zh: hashes (want %d):\n%s", client, source, len(hashes), listed, src)
			}

			r := srv.cli(t, reader, "verify", "--lock", lock)
			if r.Code != 0 || strings.Contains(r.Stdout, "FAIL") || strings.Contains(r.Stdout, "SKIP") {
				t.Fatalf("trove verify --lock of the lock file %s wrote for %s: exit %d\n%s%s\n(lock file:\n%s)", client, source, r.Code, r.Stdout, r.Stderr, src)
			}
			for _, want := range []string{
				"OK   " + source + " 1.0.0: SHA256SUMS signed by key " + key.KeyID,
				"OK   " + source + " 1.0.0: provenance signed by key " + key.KeyID,
			} {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("trove verify --lock (%s, %s) lacks %q:\n%s", client, source, want, r.Stdout)
				}
			}
			for _, h := range hashes {
				if want := "zh:" + h[1][:16]; !strings.Contains(r.Stdout, want) {
					t.Errorf("trove verify --lock (%s, %s) does not report %s:\n%s", client, source, want, r.Stdout)
				}
			}
			if n := strings.Count(r.Stdout, "matches the provenance"); n != len(rel.Platforms) {
				t.Errorf("trove verify --lock (%s, %s) matched %d archives against the provenance, want %d:\n%s", client, source, n, len(rel.Platforms), r.Stdout)
			}

			// One zh: hash changed (its last digit): the file no longer
			// matches what was signed.
			old := hashes[0][1]
			forged := old[:63] + map[bool]string{true: "1", false: "0"}[old[63] == '0']
			writeFile(t, dir, ".terraform.lock.hcl", []byte(strings.Replace(string(src), old, forged, 1)))
			r = srv.cli(t, reader, "verify", "--lock", lock)
			if r.Code != 1 || !strings.Contains(r.Stdout, "FAIL "+source+" 1.0.0: zh:"+forged[:16]) || !strings.Contains(r.Stdout, "is not listed in the signed SHA256SUMS") ||
				!strings.Contains(r.Stderr, "1 check(s) failed") {
				t.Errorf("trove verify --lock of a tampered lock file (%s, %s): exit %d, want 1 with a FAIL line for the changed hash\n%s%s", client, source, r.Code, r.Stdout, r.Stderr)
			}
		}
	})
}
