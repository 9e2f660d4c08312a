package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/trovetest/testarchive"
)

// moduleHost is the dotted host name of module sources in these tests.
// Module source hosts must contain a dot ("localhost:PORT/acme/x/y" reads
// as a namespace), and nothing resolves trove.localhost: the CLI
// configuration file that `trove serve` writes into its data directory
// (and tells users to copy into ~/.terraform.d) maps it to the server's
// absolute service URLs with a host block, which replaces service
// discovery for that name.
const moduleHost = "trove.localhost"

// hostBlockFile returns the CLI configuration file for moduleHost that the
// banner of s tells users to copy ("mkdir -p ~/.terraform.d && cp FILE
// ~/.terraform.d/").
func (s *troveServer) hostBlockFile(t *testing.T) string {
	t.Helper()
	const prefix = "mkdir -p ~/.terraform.d && cp "
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	line, ok := s.stdout.wait(ctx, prefix)
	if !ok {
		t.Fatalf("trove serve printed no %q line:\n%s", prefix, s.stdout)
	}
	file, dest, ok := strings.Cut(strings.TrimPrefix(line, prefix), " ")
	if !ok || dest != "~/.terraform.d/" {
		t.Fatalf("trove serve printed %q, want %sFILE ~/.terraform.d/", line, prefix)
	}
	block, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(block), fmt.Sprintf("host %q", moduleHost)) {
		t.Fatalf("the CLI configuration trove serve wrote has no host block for %s:\n%s", moduleHost, block)
	}
	return file
}

// addModuleHost appends the CLI configuration `trove serve` wrote for
// moduleHost to the CLI configuration file of tf.
func addModuleHost(t *testing.T, tf *terraformCLI, s *troveServer) {
	t.Helper()
	block, err := os.ReadFile(s.hostBlockFile(t))
	if err != nil {
		t.Fatal(err)
	}
	appendCLIConfig(t, tf, string(block))
}

// appendCLIConfig appends text to the CLI configuration file of tf.
func appendCLIConfig(t *testing.T, tf *terraformCLI, text string) {
	t.Helper()
	var configFile string
	for _, kv := range tf.env {
		if v, ok := strings.CutPrefix(kv, "TF_CLI_CONFIG_FILE="); ok {
			configFile = v
		}
	}
	if configFile == "" {
		t.Fatal("the terraform environment has no TF_CLI_CONFIG_FILE")
	}
	f, err := os.OpenFile(configFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// writeModuleDir writes a module whose output names its version; with
// labelsConstraint it also calls the labels module from the registry and
// includes its output.
func writeModuleDir(t *testing.T, name, version, labelsConstraint string) string {
	t.Helper()
	dir := t.TempDir()
	main := fmt.Sprintf("output \"text\" {\n  value = %q\n}\n", name+" "+version)
	if labelsConstraint != "" {
		main = fmt.Sprintf(`module "labels" {
  source  = "%s/%s/labels/null"
  version = %q
}

output "text" {
  value = "%s %s and ${module.labels.text}"
}
`, moduleHost, namespace, labelsConstraint, name, version)
	}
	writeFile(t, dir, "main.tf", []byte(main))
	writeFile(t, dir, "README.md", []byte("# "+name+"\n\nThe "+name+" module, version "+version+".\n"))
	// Left out by the packer: local state and Terraform's working directory.
	writeFile(t, dir, "terraform.tfstate", []byte(`{"secret": "must not be published"}`))
	if err := os.MkdirAll(filepath.Join(dir, ".terraform"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".terraform"), "junk", []byte("x"))
	return dir
}

// writeRootConfig writes a root configuration calling the network module.
func writeRootConfig(t *testing.T, constraint string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "main.tf", []byte(fmt.Sprintf(`module "network" {
  source  = "%s/%s/network/aws"
  version = %q
}

output "greeting" {
  value = module.network.text
}
`, moduleHost, namespace, constraint)))
	return dir
}

// TestModulesFromTrove is the story of a module author and a user: the
// author publishes versions of two modules with `trove module publish`,
// one calling the other through the registry, and terraform installs the
// versions the constraints select and plans with them.
func TestModulesFromTrove(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	token := createToken(t, srv, "publish")

	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		out := srv.mustCLI(t, token, "module", "publish", namespace+"/labels/null", v, writeModuleDir(t, "labels", v, ""))
		if !strings.HasPrefix(out, "Published acme/labels/null "+v) {
			t.Fatalf("module publish printed %q", out)
		}
	}
	for _, v := range []string{"1.0.0", "1.2.0", "1.3.0-beta.1", "2.0.0"} {
		srv.mustCLI(t, token, "module", "publish", namespace+"/network/aws", v, writeModuleDir(t, "network", v, "~> 1.0"))
	}

	// Published before the clients run: a zipped module, and a module in a
	// private namespace with a read token for it.
	zipPath := filepath.Join(t.TempDir(), "zipped.zip")
	zipped := testarchive.Zip(t, map[string]string{"main.tf": "output \"text\" {\n  value = \"zipped\"\n}\n"})
	if err := os.WriteFile(zipPath, zipped, 0o644); err != nil {
		t.Fatal(err)
	}
	srv.mustCLI(t, token, "module", "publish", namespace+"/zipped/aws", "0.1.0", zipPath)
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "vault")
	srv.mustCLI(t, srv.AdminToken, "module", "publish", "vault/secrets/aws", "1.0.0", writeModuleDir(t, "secrets", "1.0.0", ""))
	vaultToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "vault", "--scope", "read"))

	forEachClient(t, func(t *testing.T, client string) {
		testModuleInstalls(t, srv, client, vaultToken)
	})

	t.Run("a deleted version is no longer installed", func(t *testing.T) {
		// terraform and tofu installed 1.2.0 above: the delete says who
		// and deletes nothing until told it is meant.
		r := srv.cli(t, srv.AdminToken, "module", "delete", namespace+"/network/aws", "1.2.0", "--confirm")
		if r.Code != 1 || !strings.Contains(r.Stderr, "consumers downloaded "+namespace+"/network/aws 1.2.0") || !strings.Contains(r.Stderr, "--in-use") {
			t.Errorf("delete of a module version terraform and tofu installed: exit %d\n%s", r.Code, r.Stderr)
		}
		srv.mustCLI(t, srv.AdminToken, "module", "delete", namespace+"/network/aws", "1.2.0", "--confirm", "--in-use")
		forEachClient(t, func(t *testing.T, client string) {
			tf := newClient(t, client, srv, "")
			addModuleHost(t, tf, srv)
			dir := writeRootConfig(t, "~> 1.0")
			tf.mustRun(t, dir, "init", "-input=false")
			if got := readModulesManifest(t, dir)["network"]; got != "1.0.0" {
				t.Errorf("installed network %q after deleting 1.2.0, want 1.0.0", got)
			}
		})
	})
}

// testModuleInstalls is what a user of the modules TestModulesFromTrove
// publishes sees with client.
func testModuleInstalls(t *testing.T, srv *troveServer, client, vaultToken string) {
	tf := newClient(t, client, srv, "")
	addModuleHost(t, tf, srv)

	t.Run("init installs the selected versions and plan uses them", func(t *testing.T) {
		dir := writeRootConfig(t, "~> 1.0")
		res := tf.mustRun(t, dir, "init", "-input=false")
		for _, want := range []string{
			"Downloading " + moduleHost + "/acme/network/aws 1.2.0 for network...",
			"Downloading " + moduleHost + "/acme/labels/null 1.1.0 for network.labels...",
		} {
			if !strings.Contains(res.Flat, want) {
				t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
			}
		}
		installed := readModulesManifest(t, dir)
		if installed["network"] != "1.2.0" || installed["network.labels"] != "1.1.0" {
			t.Errorf("installed modules = %v, want network 1.2.0 and network.labels 1.1.0", installed)
		}
		// The packer left local state and .terraform out of the archive.
		if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", "network", "terraform.tfstate")); !os.IsNotExist(err) {
			t.Errorf("the installed module holds terraform.tfstate (%v): the packer must leave state out", err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", "network", "README.md")); err != nil {
			t.Errorf("the installed module lacks its README.md: %v", err)
		}

		res = tf.mustRun(t, dir, "plan", "-input=false")
		if want := `greeting = "network 1.2.0 and labels 1.1.0"`; !strings.Contains(res.Flat, want) {
			t.Errorf("terraform plan output lacks %q:\n%s", want, res.Output)
		}
	})

	t.Run("an exact pre-release is installable", func(t *testing.T) {
		dir := writeRootConfig(t, "1.3.0-beta.1")
		tf.mustRun(t, dir, "init", "-input=false")
		if got := readModulesManifest(t, dir)["network"]; got != "1.3.0-beta.1" {
			t.Errorf("installed network %q, want 1.3.0-beta.1", got)
		}
	})

	t.Run("a newer major version after publish", func(t *testing.T) {
		dir := writeRootConfig(t, ">= 2.0.0")
		tf.mustRun(t, dir, "init", "-input=false")
		if got := readModulesManifest(t, dir)["network"]; got != "2.0.0" {
			t.Errorf("installed network %q, want 2.0.0", got)
		}
		res := tf.mustRun(t, dir, "plan", "-input=false")
		if want := `greeting = "network 2.0.0 and labels 1.1.0"`; !strings.Contains(res.Flat, want) {
			t.Errorf("terraform plan output lacks %q:\n%s", want, res.Output)
		}
	})

	t.Run("no matching version", func(t *testing.T) {
		res := tf.run(t, writeRootConfig(t, ">= 3.0"), "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "Unresolvable module version constraint") || !strings.Contains(res.Flat, "The newest available version is 2.0.0") {
			t.Errorf("init with an unsatisfiable constraint: exit %d\n%s", res.Code, res.Output)
		}
	})

	t.Run("a module uploaded as a zip", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"z\" {\n  source  = \"%s/acme/zipped/aws\"\n  version = \"0.1.0\"\n}\n\noutput \"z\" {\n  value = module.z.text\n}\n", moduleHost)))
		tf.mustRun(t, dir, "init", "-input=false")
		if res := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `z = "zipped"`) {
			t.Errorf("terraform plan of the zipped module:\n%s", res.Output)
		}
	})

	t.Run("unknown module", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"x\" {\n  source  = \"%s/acme/nope/aws\"\n  version = \"1.0.0\"\n}\n", moduleHost)))
		res := tf.run(t, dir, "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "Module not found") {
			t.Errorf("init of an unknown module: exit %d\n%s", res.Code, res.Output)
		}
	})

	t.Run("a private namespace needs credentials for the module host", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"s\" {\n  source  = \"%s/vault/secrets/aws\"\n  version = \"~> 1.0\"\n}\n\noutput \"s\" {\n  value = module.s.text\n}\n", moduleHost)))

		res := tf.run(t, dir, "init", "-input=false")
		if res.Code == 0 || !strings.Contains(res.Flat, "error looking up module versions: 401 Unauthorized") {
			t.Fatalf("init of a private module without credentials: exit %d, want a 401 refusal:\n%s", res.Code, res.Output)
		}
		// With a read token of the namespace for the module host: the
		// CLI looks credentials up by the source's host name.
		private := newClient(t, client, srv, "")
		addModuleHost(t, private, srv)
		appendCLIConfig(t, private, fmt.Sprintf("credentials %q {\n  token = %q\n}\n", moduleHost, vaultToken))
		private.mustRun(t, dir, "init", "-input=false")
		if res := private.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `s = "secrets 1.0.0"`) {
			t.Errorf("terraform plan of the private module:\n%s", res.Output)
		}
	})
}

// readModulesManifest returns the installed module versions by key from
// .terraform/modules/modules.json.
func readModulesManifest(t *testing.T, dir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
	if err != nil {
		t.Fatalf("reading the modules manifest: %v", err)
	}
	var manifest struct {
		Modules []struct {
			Key     string `json:"Key"`
			Source  string `json:"Source"`
			Version string `json:"Version"`
		} `json:"Modules"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	out := map[string]string{}
	for _, m := range manifest.Modules {
		if m.Key != "" {
			out[m.Key] = m.Version
			if !strings.HasPrefix(m.Source, moduleHost+"/") {
				t.Errorf("module %s has source %q, want it from %s", m.Key, m.Source, moduleHost)
			}
		}
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k+"="+out[k])
	}
	slices.Sort(keys)
	t.Logf("installed modules: %s", strings.Join(keys, ", "))
	return out
}
