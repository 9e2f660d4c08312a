package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"trove.dev/trove/internal/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// troveProviderPkg is terraform-provider-trove's main package, relative to
// the module root.
const troveProviderPkg = "./terraform-provider-trove"

// TestDogfood is Trove serving its own Terraform provider: the provider is
// built for two platforms, packaged and signed as goreleaser does, and
// published with `trove publish` into the namespace "trove" of a running
// Trove. The real `terraform init` then installs <host>/trove/trove from
// that same Trove, `terraform apply` creates a namespace, a signing key and
// a token through it, and `terraform destroy` removes them again; the API
// is the witness of both.
func TestDogfood(t *testing.T) {
	requireTerraform(t)
	const version = "0.1.0"
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	bins := buildTroveProvider(t, version)

	// The release, as its maintainers publish it.
	releaseKey := signingtest.NewKey(t, "trove")
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "trove", "--description", "Trove's own provider")
	srv.mustCLI(t, srv.AdminToken, "key", "add", "trove", "--file", writeFile(t, t.TempDir(), "trove.asc", []byte(releaseKey.ArmoredPublic)))
	publishToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "trove", "--scope", "publish"))
	dist := packageTroveProvider(t, releaseKey, version, bins)
	if out := srv.mustCLI(t, publishToken, "publish", "--namespace", "trove", dist); !strings.Contains(out, "Published trove/trove "+version) {
		t.Errorf("trove publish printed %q, want it to report trove/trove %s as published", out, version)
	}

	// A team's configuration that manages Trove with it.
	teamKey := signingtest.NewKey(t, "team")
	dir := t.TempDir()
	writeFile(t, dir, "team.asc", []byte(teamKey.ArmoredPublic))
	writeFile(t, dir, "main.tf", []byte(fmt.Sprintf(`terraform {
  required_providers {
    trove = {
      source  = "%s/trove/trove"
      version = %q
    }
  }
}

# The token comes from TROVE_TOKEN.
provider "trove" {
  address      = %q
  ca_cert_file = %q
}

resource "trove_namespace" "team" {
  name        = "team"
  description = "managed by terraform"
}

resource "trove_signing_key" "team" {
  namespace   = trove_namespace.team.name
  ascii_armor = file("${path.module}/team.asc")
}

resource "trove_token" "ci" {
  namespace   = trove_namespace.team.name
  scopes      = ["publish"]
  description = "team CI"
}

output "token_id" {
  value = trove_token.ci.id
}

output "token" {
  value     = trove_token.ci.token
  sensitive = true
}
`, srv.Host, version, srv.Addr, srv.CAFile)))

	// terraform installs with a read token of the namespace "trove", which
	// works whether the namespace is public or private.
	readToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "trove", "--scope", "read"))
	tf := newTerraform(t, srv, readToken)
	tf.env = append(tf.env, "TROVE_TOKEN="+srv.AdminToken)

	res := tf.mustRun(t, dir, "init", "-input=false")
	want := fmt.Sprintf("Installed %s/trove/trove v%s (self-signed, key ID %s)", srv.Host, version, releaseKey.KeyID)
	if !strings.Contains(res.Flat, want) {
		t.Fatalf("terraform init output lacks %q:\n%s", want, res.Output)
	}

	res = tf.mustRun(t, dir, "apply", "-auto-approve", "-input=false")
	if !strings.Contains(res.Flat, "Apply complete! Resources: 3 added, 0 changed, 0 destroyed.") {
		t.Errorf("terraform apply did not report 3 resources added:\n%s", res.Output)
	}
	tokenID := strings.TrimSpace(tf.mustRun(t, dir, "output", "-raw", "token_id").Output)
	secret := strings.TrimSpace(tf.mustRun(t, dir, "output", "-raw", "token").Output)

	var ns apispec.Namespace
	srv.getJSON(t, "/api/v1/namespaces/team", srv.AdminToken, &ns)
	if ns.Description != "managed by terraform" {
		t.Errorf("namespace team has description %q in Trove, want %q", ns.Description, "managed by terraform")
	}
	var key apispec.SigningKey
	srv.getJSON(t, "/api/v1/namespaces/team/keys/"+teamKey.KeyID, srv.AdminToken, &key)
	if key.Fingerprint != teamKey.Fingerprint {
		t.Errorf("key %s of namespace team has fingerprint %s in Trove, want %s", teamKey.KeyID, key.Fingerprint, teamKey.Fingerprint)
	}
	var who apispec.Token
	srv.getJSON(t, "/api/v1/whoami", secret, &who)
	if who.ID != tokenID || who.Namespace != "team" || !slices.Equal(who.Scopes, []string{"publish"}) || who.Description != "team CI" {
		t.Errorf("the secret terraform created authenticates as %+v; want token %s of namespace team with scope publish", who, tokenID)
	}

	if res := tf.run(t, dir, "plan", "-detailed-exitcode", "-input=false"); res.Code != 0 {
		t.Errorf("terraform plan right after apply: exit %d, want 0 (no changes):\n%s", res.Code, res.Output)
	}

	res = tf.mustRun(t, dir, "destroy", "-auto-approve", "-input=false")
	if !strings.Contains(res.Flat, "Destroy complete! Resources: 3 destroyed.") {
		t.Errorf("terraform destroy did not report 3 resources destroyed:\n%s", res.Output)
	}
	for _, path := range []string{
		"/api/v1/namespaces/team",
		"/api/v1/namespaces/team/keys/" + teamKey.KeyID,
		"/api/v1/tokens/" + tokenID,
	} {
		r := srv.do(t, http.MethodGet, path, http.Header{"Authorization": {"Bearer " + srv.AdminToken}})
		if r.Status != http.StatusNotFound {
			t.Errorf("GET %s after terraform destroy: status %d, want 404: %s", path, r.Status, r.Body)
		}
	}
	if r := srv.do(t, http.MethodGet, "/api/v1/whoami", http.Header{"Authorization": {"Bearer " + secret}}); r.Status != http.StatusUnauthorized {
		t.Errorf("the destroyed token still authenticates: GET /api/v1/whoami answered %d, want 401", r.Status)
	}
}

// buildTroveProvider builds terraform-provider-trove at version for
// hostPlatform and otherPlatform, concurrently, as the release build does
// (static, trimmed paths, version stamped), and returns the executables by
// platform.
func buildTroveProvider(t *testing.T, version string) map[string]string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	platforms := []string{hostPlatform, otherPlatform}
	bins := map[string]string{}
	errs := make([]error, len(platforms))
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i, p := range platforms {
		bin := filepath.Join(dir, p, "terraform-provider-trove")
		bins[p] = bin
		wg.Go(func() {
			goos, goarch, _ := strings.Cut(p, "_")
			cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, troveProviderPkg)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go build %s for %s: %v\n%s", troveProviderPkg, p, err, out.String())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return bins
}

// packageTroveProvider writes a goreleaser-style dist folder of
// terraform-provider-trove (see terraform-provider-trove/.goreleaser.yml):
// one zip per platform holding terraform-provider-trove_v<version>, the
// manifest, SHA256SUMS over them and its binary detached signature by key.
// It returns the folder.
func packageTroveProvider(t *testing.T, key *signingtest.Key, version string, bins map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := "terraform-provider-trove_" + version
	names := []string{base + "_manifest.json"}
	writeFile(t, dir, names[0], []byte(manifestJSON))
	for platform, exe := range bins {
		name := base + "_" + platform + ".zip"
		writeZip(t, filepath.Join(dir, name), fixedZipTime, []zipEntry{{Name: "terraform-provider-trove_v" + version, Mode: 0o755, File: exe}})
		names = append(names, name)
	}
	slices.Sort(names)
	var sums strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sums, "%s  %s\n", sha256File(t, filepath.Join(dir, n)), n)
	}
	writeFile(t, dir, base+"_SHA256SUMS", []byte(sums.String()))
	writeFile(t, dir, base+"_SHA256SUMS.sig", key.Sign([]byte(sums.String())))
	return dir
}
