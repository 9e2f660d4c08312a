package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"

	"gopkg.in/yaml.v3"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// The release of terraform-provider-trove, relative to the module root:
// its main package, the goreleaser configuration that builds and packages
// it and the manifest that configuration lists in SHA256SUMS.
const (
	troveProviderPkg      = "./terraform-provider-trove"
	troveGoreleaserConfig = "terraform-provider-trove/.goreleaser.yml"
	troveProviderManifest = "terraform-provider-trove/terraform-registry-manifest.json"
)

// TestDogfood is Trove serving its own Terraform provider: the provider is
// built for two platforms, packaged and signed as goreleaser does (with the
// build settings, names and manifest of its .goreleaser.yml), and published
// with `trove publish` into the namespace "trove" of a running Trove. The
// real `terraform init` then installs <host>/trove/trove from that same
// Trove, `terraform apply` creates a namespace, a signing key and
// a token through it, and `terraform destroy` removes them again; the API
// is the witness of both.
func TestDogfood(t *testing.T) {
	requireTerraform(t)
	const version = "0.1.0"
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	rel := loadTroveRelease(t)
	bins := buildTroveProvider(t, rel, version)

	// The release, as its maintainers publish it.
	releaseKey := signingtest.NewKey(t, "trove")
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "trove", "--description", "Trove's own provider")
	srv.mustCLI(t, srv.AdminToken, "key", "add", "trove", "--file", writeFile(t, t.TempDir(), "trove.asc", []byte(releaseKey.ArmoredPublic)))
	publishToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "trove", "--scope", "publish"))
	dist := packageTroveProvider(t, rel, releaseKey, version, bins)
	if out := srv.mustCLI(t, publishToken, "publish", "--namespace", "trove", dist); !strings.Contains(out, "Published trove/trove "+version) {
		t.Errorf("trove publish printed %q, want it to report trove/trove %s as published", out, version)
	}

	// terraform and tofu install with a read token of the namespace
	// "trove", which works whether the namespace is public or private.
	readToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "trove", "--scope", "read"))
	forEachClient(t, func(t *testing.T, client string) {
		testDogfoodTeam(t, srv, client, readToken, version, releaseKey)
	})
}

// testDogfoodTeam is a team's configuration that manages Trove with the
// provider TestDogfood published, run with client: init, apply, plan and
// destroy, with the API as the witness.
func testDogfoodTeam(t *testing.T, srv *troveServer, client, readToken, version string, releaseKey *signingtest.Key) {
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

	tf := newClient(t, client, srv, readToken)
	tf.env = append(tf.env, "TROVE_TOKEN="+srv.AdminToken)

	res := tf.mustRun(t, dir, "init", "-input=false")
	want := tf.installedLine(srv.Host+"/trove/trove", version, releaseKey.KeyID)
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

// TestDogfoodReleaseConfig checks that terraform-provider-trove's
// goreleaser configuration and committed manifest make a release Trove and
// Terraform accept: the names TestDogfood derives from them must be the
// ones Trove parses, the signature binary and the manifest that of a
// protocol 5 provider.
func TestDogfoodReleaseConfig(t *testing.T) {
	rel := loadTroveRelease(t)
	const version = "1.2.3"
	for name, want := range map[string]string{
		rel.executable(t, version, "linux_amd64"):   "terraform-provider-trove_v1.2.3",
		rel.executable(t, version, "windows_amd64"): "terraform-provider-trove_v1.2.3.exe",
		rel.zipName(t, version, "linux_arm64"):      "terraform-provider-trove_1.2.3_linux_arm64.zip",
		rel.manifestName(t, version):                "terraform-provider-trove_1.2.3_manifest.json",
		rel.sumsName(t, version):                    "terraform-provider-trove_1.2.3_SHA256SUMS",
		rel.sigName(t, version):                     "terraform-provider-trove_1.2.3_SHA256SUMS.sig",
	} {
		if name != want {
			t.Errorf("%s names a release file %s; Trove expects %s", troveGoreleaserConfig, name, want)
		}
	}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64", hostPlatform, otherPlatform} {
		if !rel.builds(p) {
			t.Errorf("%s does not build for %s", troveGoreleaserConfig, p)
		}
	}
	if rel.Builds[0].Main != troveProviderPkg {
		t.Errorf("%s builds main package %q, want %q", troveGoreleaserConfig, rel.Builds[0].Main, troveProviderPkg)
	}
	if !slices.Contains(rel.Builds[0].Env, "CGO_ENABLED=0") {
		t.Errorf("%s builds with env %q, want CGO_ENABLED=0 (Terraform runs providers on hosts of any C library)", troveGoreleaserConfig, rel.Builds[0].Env)
	}
	if got := rel.ldflags(t, version); !strings.Contains(got, "-X main.version="+version) {
		t.Errorf("%s links with %q, want -X main.version=<version> (the provider's User-Agent)", troveGoreleaserConfig, got)
	}

	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(rel.manifest, &m); err != nil {
		t.Fatalf("%s: %v", troveProviderManifest, err)
	}
	// terraform-plugin-sdk/v2 serves plugin protocol 5 only.
	if m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"5.0"}) {
		t.Errorf("%s declares version %d, protocols %q; want version 1 and protocol 5.0, which the SDKv2 provider speaks", troveProviderManifest, m.Version, m.Metadata.ProtocolVersions)
	}
}

// goreleaserRelease is what the dogfood tests take from
// terraform-provider-trove/.goreleaser.yml, with the committed manifest.
// Only the parts that shape the files of a release are read; the methods
// render their names with goreleaser's template fields and defaults.
type goreleaserRelease struct {
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ignore  []struct {
			Goos   string `yaml:"goos"`
			Goarch string `yaml:"goarch"`
		} `yaml:"ignore"`
	} `yaml:"builds"`
	Archives []struct {
		Formats         []string `yaml:"formats"`
		NameTemplate    string   `yaml:"name_template"`
		Files           []string `yaml:"files"`
		WrapInDirectory any      `yaml:"wrap_in_directory"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
		ExtraFiles   []struct {
			Glob         string `yaml:"glob"`
			NameTemplate string `yaml:"name_template"`
		} `yaml:"extra_files"`
	} `yaml:"checksum"`
	Signs []struct {
		Artifacts string   `yaml:"artifacts"`
		Signature string   `yaml:"signature"`
		Args      []string `yaml:"args"`
	} `yaml:"signs"`

	root     string // the module root the configuration's paths are relative to
	manifest []byte // the committed manifest, which goes into every release
}

// loadTroveRelease reads the goreleaser configuration and the committed
// manifest, and fails the test where the configuration takes a shape the
// dogfood tests cannot reproduce or Trove does not accept: one build and
// one zip archive of its executable at the root, SHA256SUMS with the
// committed manifest as its one extra file, signed by a binary detached
// signature.
func loadTroveRelease(t *testing.T) *goreleaserRelease {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, troveGoreleaserConfig))
	if err != nil {
		t.Fatal(err)
	}
	rel := &goreleaserRelease{root: root}
	if err := yaml.Unmarshal(raw, rel); err != nil {
		t.Fatalf("%s: %v", troveGoreleaserConfig, err)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{troveGoreleaserConfig}, args...)...)
	}
	if len(rel.Builds) != 1 {
		fail("%d builds, want one", len(rel.Builds))
	}
	if len(rel.Archives) != 1 || !slices.Equal(rel.Archives[0].Formats, []string{"zip"}) {
		fail("want one archive of formats [zip], the only format Terraform installs")
	}
	if w := rel.Archives[0].WrapInDirectory; w != nil && w != false {
		fail("archives wrap_in_directory is %v: Terraform and Trove want the executable at the root of the zip", w)
	}
	if rel.Checksum.Algorithm != "" && rel.Checksum.Algorithm != "sha256" {
		fail("checksum algorithm %q: Terraform verifies SHA256SUMS", rel.Checksum.Algorithm)
	}
	if n := len(rel.Checksum.ExtraFiles); n != 1 || rel.Checksum.ExtraFiles[0].Glob != troveProviderManifest {
		fail("checksum extra_files: want exactly the committed %s", troveProviderManifest)
	}
	if len(rel.Signs) != 1 || rel.Signs[0].Artifacts != "checksum" {
		fail("want one signs entry for artifacts: checksum (Trove verifies the signature of SHA256SUMS)")
	}
	args := rel.Signs[0].Args
	if !slices.Contains(args, "--detach-sign") || slices.Contains(args, "--armor") || slices.Contains(args, "-a") ||
		slices.Index(args, "--output") < 0 || slices.Index(args, "--output")+1 >= len(args) ||
		args[slices.Index(args, "--output")+1] != "${signature}" || args[len(args)-1] != "${artifact}" {
		fail("signs args %q: want gpg writing a binary (not armored) --detach-sign signature of ${artifact} to --output ${signature}", args)
	}
	rel.manifest, err = os.ReadFile(filepath.Join(root, troveProviderManifest))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// render executes one of the configuration's name templates with the
// fields goreleaser offers there; a field the dogfood tests do not know
// fails the test.
func (r *goreleaserRelease) render(t *testing.T, what, text, version, platform string) string {
	t.Helper()
	goos, goarch, _ := strings.Cut(platform, "_")
	tmpl, err := template.New(what).Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("%s: %s: %v", troveGoreleaserConfig, what, err)
	}
	var b strings.Builder
	fields := struct{ ProjectName, Version, Os, Arch string }{r.ProjectName, version, goos, goarch}
	if err := tmpl.Execute(&b, fields); err != nil {
		t.Fatalf("%s: %s: %v", troveGoreleaserConfig, what, err)
	}
	return b.String()
}

// builds reports whether the build covers the platform.
func (r *goreleaserRelease) builds(platform string) bool {
	b := r.Builds[0]
	goos, goarch, _ := strings.Cut(platform, "_")
	for _, ig := range b.Ignore {
		if ig.Goos == goos && ig.Goarch == goarch {
			return false
		}
	}
	return slices.Contains(b.Goos, goos) && slices.Contains(b.Goarch, goarch)
}

func (r *goreleaserRelease) ldflags(t *testing.T, version string) string {
	return r.render(t, "builds ldflags", strings.Join(r.Builds[0].Ldflags, " "), version, "")
}

// executable is the executable's name in the zip of platform; goreleaser
// appends .exe for Windows.
func (r *goreleaserRelease) executable(t *testing.T, version, platform string) string {
	name := r.render(t, "builds binary", r.Builds[0].Binary, version, platform)
	if strings.HasPrefix(platform, "windows_") {
		name += ".exe"
	}
	return name
}

func (r *goreleaserRelease) zipName(t *testing.T, version, platform string) string {
	return r.render(t, "archives name_template", r.Archives[0].NameTemplate, version, platform) + ".zip"
}

func (r *goreleaserRelease) manifestName(t *testing.T, version string) string {
	return r.render(t, "checksum extra_files name_template", r.Checksum.ExtraFiles[0].NameTemplate, version, "")
}

func (r *goreleaserRelease) sumsName(t *testing.T, version string) string {
	return r.render(t, "checksum name_template", r.Checksum.NameTemplate, version, "")
}

// sigName is the signature's name: signs signature, by default
// ${artifact}.sig.
func (r *goreleaserRelease) sigName(t *testing.T, version string) string {
	sig := r.Signs[0].Signature
	if sig == "" {
		sig = "${artifact}.sig"
	}
	return strings.ReplaceAll(sig, "${artifact}", r.sumsName(t, version))
}

// archiveExtras returns the files goreleaser adds to every zip besides the
// executable, by their paths: the archive's files, by default the
// repository's license, readme and changelog.
func (r *goreleaserRelease) archiveExtras(t *testing.T) []string {
	t.Helper()
	globs := r.Archives[0].Files
	if globs == nil {
		globs = []string{"license*", "LICENSE*", "readme*", "README*", "changelog*", "CHANGELOG*"}
	}
	var paths []string
	for _, g := range globs {
		matches, err := filepath.Glob(filepath.Join(r.root, g))
		if err != nil {
			t.Fatalf("%s: archives files %q: %v", troveGoreleaserConfig, g, err)
		}
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && !slices.Contains(paths, m) {
				paths = append(paths, m)
			}
		}
	}
	return paths
}

// buildTroveProvider builds terraform-provider-trove at version for
// hostPlatform and otherPlatform, concurrently, as the release build does
// (its main package, environment, flags and ldflags), and returns the
// executables by platform.
func buildTroveProvider(t *testing.T, rel *goreleaserRelease, version string) map[string]string {
	t.Helper()
	build := rel.Builds[0]
	args := append([]string{"build"}, build.Flags...)
	args = slices.Clip(append(args, "-ldflags", rel.ldflags(t, version))) // each goroutine appends its own -o
	platforms := []string{hostPlatform, otherPlatform}
	bins := map[string]string{}
	errs := make([]error, len(platforms))
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i, p := range platforms {
		if !rel.builds(p) {
			t.Fatalf("%s does not build for %s", troveGoreleaserConfig, p)
		}
		bin := filepath.Join(dir, p, "terraform-provider-trove")
		bins[p] = bin
		wg.Go(func() {
			goos, goarch, _ := strings.Cut(p, "_")
			cmd := exec.CommandContext(t.Context(), "go", append(args, "-o", bin, build.Main)...)
			cmd.Dir = rel.root
			cmd.Env = append(append(os.Environ(), build.Env...), "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("go build %s for %s: %v\n%s", build.Main, p, err, out.String())
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

// packageTroveProvider writes the dist folder goreleaser and the copy of
// the manifest in terraform-provider-trove/.goreleaser.yml make, with the
// names rel renders: one zip per platform holding the executable (and
// goreleaser's extra files), SHA256SUMS over them and the committed
// manifest, and its binary detached signature by key. As goreleaser does,
// it lists the manifest in SHA256SUMS without copying it into dist/: it
// stays in the project root, dist's parent, where trove publish finds it.
// It returns the dist folder.
func packageTroveProvider(t *testing.T, rel *goreleaserRelease, key *signingtest.Key, version string, bins map[string]string) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "terraform-registry-manifest.json", rel.manifest)
	dir := filepath.Join(root, "dist")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	var extras []zipEntry
	for _, path := range rel.archiveExtras(t) {
		name, err := filepath.Rel(rel.root, path)
		if err != nil {
			t.Fatal(err)
		}
		extras = append(extras, zipEntry{Name: filepath.ToSlash(name), File: path})
	}
	for platform, exe := range bins {
		name := rel.zipName(t, version, platform)
		entries := append([]zipEntry{{Name: rel.executable(t, version, platform), Mode: 0o755, File: exe}}, extras...)
		writeZip(t, filepath.Join(dir, name), fixedZipTime, entries)
		names = append(names, name)
	}
	digests := map[string]string{rel.manifestName(t, version): sha256File(t, filepath.Join(root, "terraform-registry-manifest.json"))}
	for _, n := range names {
		digests[n] = sha256File(t, filepath.Join(dir, n))
	}
	var sums strings.Builder
	for _, n := range slices.Sorted(maps.Keys(digests)) {
		fmt.Fprintf(&sums, "%s  %s\n", digests[n], n)
	}
	writeFile(t, dir, rel.sumsName(t, version), []byte(sums.String()))
	writeFile(t, dir, rel.sigName(t, version), key.Sign([]byte(sums.String())))
	return dir
}
