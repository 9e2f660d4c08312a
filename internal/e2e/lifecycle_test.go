package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// Texts the lifecycle tests deprecate and revoke with.
const (
	lifecycleReason = "CVE-2025-0001 in the TLS code: upgrade to 1.1"
	lifecycleLink   = "https://example.com/advisories/0001"
)

// TestLifecycleProviders is the story of a provider author who deprecates
// and then revokes versions, and of users running terraform and tofu:
// deprecations are printed by every init that queries the provider; a
// revoked version is no longer chosen, and a lock file pinning it stops
// installing (both clients require the locked version in the version
// list, see docs/lifecycle.md) until the version is restored or the lock
// is upgraded.
func TestLifecycleProviders(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		publish(t, srv, publishToken, packageRelease(t, key, releaseSpec{Version: v}))
	}
	source := fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType)

	// Each client initialises a project before anything changes: its lock
	// file pins 1.1.0.
	locked := map[string]string{}
	type cachedProject struct {
		tf  *terraformCLI
		dir string
	}
	withCache := map[string]cachedProject{}
	top := t // the projects outlive the subtests that create them
	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		dir := writeProject(top, srv, "~> 1.0", "locked")
		res := tf.mustRun(t, dir, "init", "-input=false")
		if strings.Contains(res.Flat, "Additional provider information from registry") {
			t.Errorf("init printed registry warnings before any deprecation:\n%s", res.Output)
		}
		if lock := readLock(t, srv, dir); lock.Version != "1.1.0" {
			t.Fatalf("locked %q, want 1.1.0", lock.Version)
		}
		locked[client] = dir

		// The same with a global plugin cache, which then holds 1.1.0.
		cached := newClient(top, client, srv, "")
		appendCLIConfig(t, cached, fmt.Sprintf("plugin_cache_dir = %q\n", top.TempDir()))
		cdir := writeProject(top, srv, "~> 1.0", "cached")
		cached.mustRun(t, cdir, "init", "-input=false")
		withCache[client] = cachedProject{cached, cdir}
	})

	out := srv.mustCLI(t, publishToken, "provider", "deprecate", namespace+"/"+providerType, "1.0.0", "--reason", lifecycleReason, "--link", lifecycleLink)
	if !strings.Contains(out, "deprecated ("+lifecycleReason) {
		t.Errorf("trove provider deprecate printed %q", out)
	}
	warning := fmt.Sprintf("Version 1.0.0 of %s/%s is deprecated: %s (more: %s)", namespace, providerType, lifecycleReason, lifecycleLink)

	t.Run("init prints the deprecation", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			dir := writeProject(t, srv, "1.0.0", "deprecated")
			res := tf.mustRun(t, dir, "init", "-input=false")
			for _, want := range []string{
				"Warning: Additional provider information from registry",
				"The remote registry returned warnings for " + source + ": - " + warning,
				tf.installedLine(source, "1.0.0", key.KeyID),
			} {
				if !strings.Contains(res.Flat, want) {
					t.Errorf("%s init output lacks %q:\n%s", client, want, res.Output)
				}
			}
			// Every init that queries the provider prints it, also for a
			// configuration on another version: the clients read one
			// list of warnings per provider.
			res = tf.mustRun(t, locked[client], "init", "-input=false")
			if !strings.Contains(res.Flat, warning) || !strings.Contains(res.Flat, "- Using previously-installed "+source+" v1.1.0") {
				t.Errorf("%s init of the project locked to 1.1.0:\n%s", client, res.Output)
			}
		})
	})

	// The API and the protocol show the state too.
	var v struct {
		Deprecation *struct {
			Reason string `json:"reason"`
			Link   string `json:"link"`
		} `json:"deprecation"`
	}
	srv.getJSON(t, fmt.Sprintf("/api/v1/namespaces/%s/providers/%s/versions/1.0.0", namespace, providerType), srv.AdminToken, &v)
	if v.Deprecation == nil || v.Deprecation.Reason != lifecycleReason || v.Deprecation.Link != lifecycleLink {
		t.Errorf("API version document: deprecation %+v", v.Deprecation)
	}

	srv.mustCLI(t, srv.AdminToken, "provider", "revoke", namespace+"/"+providerType, "1.1.0", "--reason", "packages built from the wrong commit")
	if r := srv.cli(t, publishToken, "provider", "restore", namespace+"/"+providerType, "1.1.0"); r.Code == 0 || !strings.Contains(r.Stderr, "admin") {
		t.Errorf("restore with a publish token: exit %d %s, want a refusal naming the admin scope", r.Code, r.Stderr)
	}

	t.Run("a revoked version is not chosen", func(t *testing.T) {
		if doc := getVersions(t, srv); len(doc.Versions) != 1 || doc.Versions[0].Version != "1.0.0" {
			t.Errorf("versions document after revoking 1.1.0: %+v", doc)
		}
		if r := srv.get(t, downloadURL(t, srv, "1.1.0", hostPlatform)); r.Status != http.StatusOK {
			t.Errorf("download document of the revoked version: %d %s, want 200", r.Status, r.Body)
		}
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			dir := writeProject(t, srv, "~> 1.0", "fresh")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, tf.installedLine(source, "1.0.0", key.KeyID)) {
				t.Errorf("%s init with ~> 1.0 after revoking 1.1.0:\n%s", client, res.Output)
			}
			if lock := readLock(t, srv, dir); lock.Version != "1.0.0" {
				t.Errorf("locked %q, want 1.0.0", lock.Version)
			}
		})
	})

	t.Run("a lock file pinning a revoked version", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			dir := locked[client]
			// Both clients look the locked version up in the version list
			// and refuse when it is missing (providercache's
			// ensureProviderVersions): revocation breaks such lock files.
			res := tf.run(t, dir, "init", "-input=false")
			if res.Code == 0 || !strings.Contains(res.Flat, "the previously-selected version 1.1.0 is no longer available") {
				t.Errorf("%s init with a lock file pinning the revoked 1.1.0: exit %d\n%s", client, res.Code, res.Output)
			}
			// What the error asks for: -upgrade moves the lock to 1.0.0.
			res = tf.mustRun(t, dir, "init", "-input=false", "-upgrade")
			if lock := readLock(t, srv, dir); lock.Version != "1.0.0" {
				t.Errorf("%s init -upgrade locked %q, want 1.0.0:\n%s", client, lock.Version, res.Output)
			}
		})
	})

	t.Run("a lock file pinning a revoked version, with a plugin cache", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			p := withCache[client]
			res := p.tf.run(t, p.dir, "init", "-input=false")
			switch client {
			case clientTofu:
				// OpenTofu installs a locked version its global plugin cache
				// holds without asking the registry.
				if res.Code != 0 {
					t.Errorf("tofu init with the locked revoked version in its plugin cache: exit %d\n%s", res.Code, res.Output)
				}
			default:
				// Terraform asks the registry first, cache or not.
				if res.Code == 0 || !strings.Contains(res.Flat, "the previously-selected version 1.1.0 is no longer available") {
					t.Errorf("terraform init with a plugin cache and the revoked 1.1.0 locked: exit %d\n%s", res.Code, res.Output)
				}
			}
		})
	})

	t.Run("a restored version installs again", func(t *testing.T) {
		srv.mustCLI(t, srv.AdminToken, "provider", "restore", namespace+"/"+providerType, "1.1.0")
		srv.mustCLI(t, publishToken, "provider", "undeprecate", namespace+"/"+providerType, "1.0.0")
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			dir := writeProject(t, srv, "~> 1.0", "restored")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, tf.installedLine(source, "1.1.0", key.KeyID)) || strings.Contains(res.Flat, "deprecated") {
				t.Errorf("%s init after restore and undeprecate:\n%s", client, res.Output)
			}
		})
	})
}

// writeLabelsRoot writes a root configuration calling the labels module
// with constraint.
func writeLabelsRoot(t *testing.T, constraint string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "main.tf", []byte(fmt.Sprintf(`module "labels" {
  source  = "%s/%s/labels/null"
  version = %q
}

output "text" {
  value = module.labels.text
}
`, moduleHost, namespace, constraint)))
	return dir
}

// TestLifecycleModules deprecates and revokes module versions. Neither
// Terraform (up to 1.13) nor OpenTofu (1.12) reads a deprecation from the
// modules.v1 versions answer, so init prints nothing about it (asserted,
// so that a client that starts printing it is noticed); Trove serves it
// there, in the API and in the UI. A revoked version is not chosen, a
// working directory that has it installed keeps it, and a fresh init of
// a configuration pinning it exactly fails.
func TestLifecycleModules(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	token := createToken(t, srv, "publish")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		srv.mustCLI(t, token, "module", "publish", namespace+"/labels/null", v, writeModuleDir(t, "labels", v, ""))
	}
	installed := map[string]string{}
	top := t // the working directories outlive the subtests that create them
	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		addModuleHost(t, tf, srv)
		dir := writeLabelsRoot(top, "1.1.0")
		tf.mustRun(t, dir, "init", "-input=false")
		installed[client] = dir
	})

	srv.mustCLI(t, token, "module", "deprecate", namespace+"/labels/null", "1.0.0", "--reason", lifecycleReason, "--link", lifecycleLink)
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version     string `json:"version"`
				Deprecation *struct {
					Reason string `json:"reason"`
					Link   string `json:"link"`
				} `json:"deprecation"`
			} `json:"versions"`
		} `json:"modules"`
	}
	r := srv.get(t, "/v1/modules/acme/labels/null/versions")
	if err := json.Unmarshal(r.Body, &doc); err != nil || len(doc.Modules) != 1 || len(doc.Modules[0].Versions) != 2 {
		t.Fatalf("versions answer %d %s: %v", r.Status, r.Body, err)
	}
	if d := doc.Modules[0].Versions[1].Deprecation; doc.Modules[0].Versions[1].Version != "1.0.0" || d == nil || d.Reason != lifecycleReason || d.Link != lifecycleLink {
		t.Errorf("versions answer after deprecating 1.0.0: %s", r.Body)
	}

	t.Run("init of a deprecated module version", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			addModuleHost(t, tf, srv)
			dir := writeLabelsRoot(t, "1.0.0")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, "Downloading "+moduleHost+"/acme/labels/null 1.0.0 for labels...") {
				t.Errorf("%s init output lacks the download of 1.0.0:\n%s", client, res.Output)
			}
			// What the released clients do today: nothing.
			if strings.Contains(res.Flat, "CVE-2025-0001") || strings.Contains(strings.ToLower(res.Flat), "deprecat") {
				t.Errorf("%s now prints module deprecations: update docs/lifecycle.md and this test:\n%s", client, res.Output)
			}
		})
	})

	srv.mustCLI(t, srv.AdminToken, "module", "revoke", namespace+"/labels/null", "1.1.0", "--reason", "broken")

	t.Run("a revoked module version", func(t *testing.T) {
		if r := srv.get(t, "/v1/modules/acme/labels/null/1.1.0/download"); r.Status != http.StatusNoContent || r.Header.Get("X-Terraform-Get") == "" {
			t.Errorf("download of the revoked version: %d %v, want 204 with X-Terraform-Get", r.Status, r.Header)
		}
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			addModuleHost(t, tf, srv)
			res := tf.mustRun(t, writeLabelsRoot(t, "~> 1.0"), "init", "-input=false")
			if !strings.Contains(res.Flat, "Downloading "+moduleHost+"/acme/labels/null 1.0.0 for labels...") {
				t.Errorf("%s init with ~> 1.0 after revoking 1.1.0:\n%s", client, res.Output)
			}
			// A working directory that has 1.1.0 installed keeps it: the
			// clients do not ask the registry again for an installed
			// module that satisfies its constraint.
			res = tf.mustRun(t, installed[client], "init", "-input=false")
			if got := readModulesManifest(t, installed[client])["labels"]; got != "1.1.0" {
				t.Errorf("%s re-init of a directory with 1.1.0 installed has %q:\n%s", client, got, res.Output)
			}
			// A fresh init of a configuration pinning it exactly fails.
			res = tf.run(t, writeLabelsRoot(t, "1.1.0"), "init", "-input=false")
			if res.Code == 0 || !strings.Contains(res.Flat, "Unresolvable module version constraint") || !strings.Contains(res.Flat, "The newest available version is 1.0.0") {
				t.Errorf("%s fresh init pinning the revoked 1.1.0: exit %d\n%s", client, res.Code, res.Output)
			}
		})
	})
}
