package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// The tests of trove provider package run it from a fresh temporary
// directory (inSandbox): its --clean deletes files, and a bug must not
// reach the package's source directory, go test's working directory.

// inSandbox makes a new temporary directory the working directory of the
// test and returns it.
func inSandbox(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// buildDir writes stand-in executables named terraform-provider-<typ>
// (.exe on Windows) in the --binaries layout, one folder per platform.
func buildDir(t *testing.T, typ string, platforms ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range platforms {
		name := "terraform-provider-" + typ
		if strings.HasPrefix(p, "windows_") {
			name += ".exe"
		}
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, name), releasetest.Executable(t, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// protectedKeyFile writes k's private key protected by passphrase.
func protectedKeyFile(t *testing.T, k *signingtest.Key, passphrase string) string {
	t.Helper()
	if err := k.Entity.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Entity.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return writeTemp(t, "key.asc", buf.Bytes())
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestProviderPackageUsageErrors(t *testing.T) {
	sandbox := inSandbox(t)
	if err := os.WriteFile(filepath.Join(sandbox, "go.mod"), []byte("module example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := buildDir(t, "example", "linux_amd64", "linux_arm64")
	amd := "linux_amd64=" + filepath.Join(build, "linux_amd64", "terraform-provider-example")
	plain := writeTemp(t, "provider", releasetest.Executable(t, "linux_amd64"))
	other := writeTemp(t, "terraform-provider-other", releasetest.Executable(t, "linux_arm64"))
	nonEmpty := filepath.Dir(writeTemp(t, "old.zip", []byte("x")))
	out := filepath.Join(t.TempDir(), "dist")

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no version", []string{"--binaries", build, "--unsigned"}, "--version is required"},
		{"no signing choice", []string{"--version", "1.0.0", "--binaries", build}, "choose exactly one of --key-file FILE, --gpg-key ID and --unsigned"},
		{"two signing choices", []string{"--version", "1.0.0", "--binaries", build, "--unsigned", "--gpg-key", "ABC"}, "choose exactly one of"},
		{"no executables", []string{"--version", "1.0.0", "--unsigned"}, "give the executables either with --binary"},
		{"both kinds of executables", []string{"--version", "1.0.0", "--unsigned", "--binaries", build, "--binary", amd}, "not both"},
		{"binary without platform", []string{"--version", "1.0.0", "--unsigned", "--binary", "build/terraform-provider-example"}, "want OS_ARCH=FILE"},
		{"binary without file", []string{"--version", "1.0.0", "--unsigned", "--binary", "linux_amd64="}, "want OS_ARCH=FILE"},
		{"leading v", []string{"--version", "v1.0.0", "--unsigned", "--binary", amd}, `drop the leading "v" (use "1.0.0")`},
		{"not semver", []string{"--version", "1.0", "--unsigned", "--binary", amd}, "want MAJOR.MINOR.PATCH"},
		{"protocols and manifest", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--protocols", "6.0", "--manifest", "m.json"}, "--protocols or --manifest, not both"},
		{"bad protocols", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--protocols", "6"}, `--protocols: protocol version "6" is not MAJOR.MINOR`},
		{"type not in the name", []string{"--version", "1.0.0", "--unsigned", "--binary", "linux_amd64=" + plain}, "cannot tell the provider type from " + plain},
		{"types differ", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--binary", "linux_arm64=" + other}, `named for different providers ("example" and "other")`},
		{"type contradicts name", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--type", "other"}, `is named for provider "example", but --type is "other"`},
		{"upper-case type", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--type", "Example"}, "lower case: example"},
		{"output not empty", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--out", nonEmpty}, "is not empty: pass --clean"},
		{"clean other files", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--out", nonEmpty, "--clean"}, "also holds old.zip: empty it yourself"},
		{"clean the current directory", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--out", ".", "--clean"}, "holds the current directory"},
		{"clean a parent directory", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--out", "..", "--clean"}, "holds the current directory"},
		{"clean the executables", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, "--out", build, "--clean"}, "which is to be packaged"},
		{"positional argument", []string{"--version", "1.0.0", "--unsigned", "--binary", amd, out}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runTrove(t, nil, "", append([]string{"provider", "package"}, tt.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, exitUsage, tt.want)
			}
			if !strings.Contains(r.stderr, "Run 'trove provider package --help'") {
				t.Errorf("stderr lacks the help hint: %q", r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused command wrote %s", out)
			}
		})
	}
	// Nothing was deleted by the refused --clean runs.
	if got := listDir(t, sandbox); !slices.Equal(got, []string{"go.mod"}) {
		t.Errorf("the working directory holds %q after the refusals, want only go.mod", got)
	}
	if got := listDir(t, nonEmpty); !slices.Equal(got, []string{"old.zip"}) {
		t.Errorf("the non-empty output holds %q after the refusals, want only old.zip", got)
	}
	if got := listDir(t, build); !slices.Equal(got, []string{"linux_amd64", "linux_arm64"}) {
		t.Errorf("the build folder holds %q after the refusals", got)
	}
}

func TestProviderPackageRefusesExecutables(t *testing.T) {
	inSandbox(t)
	build := buildDir(t, "example", "linux_amd64", "linux_arm64", "windows_amd64")
	exe := func(p string) string { return filepath.Join(build, p, "terraform-provider-example") }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"arm64 named amd64", []string{"--binary", "linux_amd64=" + exe("linux_arm64")},
			exe("linux_arm64") + " (given for linux_amd64) is an executable for linux_arm64, not linux_amd64; build it with GOOS=linux GOARCH=amd64 go build"},
		{"windows named linux", []string{"--binary", "linux_amd64=" + exe("windows_amd64") + ".exe"}, "is a Windows executable (windows_amd64), not a linux_amd64 one"},
		{"unknown platform", []string{"--binary", "linux_x86_64=" + exe("linux_amd64")}, "unknown platform linux_x86_64: Go calls it linux_amd64"},
		// A platform given twice is a usage error (TestUsageErrorStyle).
		{"missing file", []string{"--binary", "linux_amd64=" + exe("darwin_arm64")}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "dist")
			r := runTrove(t, nil, "", append([]string{"provider", "package", "--version", "1.0.0", "--unsigned", "--out", out}, tt.args...)...)
			if r.code != exitError || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, exitError, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused command wrote %s", out)
			}
		})
	}

	t.Run("binaries layout", func(t *testing.T) {
		for name, tc := range map[string]struct {
			setup func(dir string)
			want  string
		}{
			"misnamed folder":  {func(dir string) { os.Mkdir(filepath.Join(dir, "linux-amd64"), 0o755) }, "is not a folder named <os>_<arch>"},
			"unknown platform": {func(dir string) { os.Mkdir(filepath.Join(dir, "macos_arm64"), 0o755) }, "Go calls it darwin_arm64"},
			"two executables": {func(dir string) {
				os.MkdirAll(filepath.Join(dir, "linux_amd64"), 0o755)
				os.WriteFile(filepath.Join(dir, "linux_amd64", "terraform-provider-a"), nil, 0o755)
				os.WriteFile(filepath.Join(dir, "linux_amd64", "terraform-provider-b"), nil, 0o755)
			}, "holds 2 candidate executables"},
			"empty": {func(string) {}, "holds no <os>_<arch> folders"},
		} {
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				tc.setup(dir)
				r := runTrove(t, nil, "", "provider", "package", "--version", "1.0.0", "--unsigned", "--binaries", dir, "--out", filepath.Join(t.TempDir(), "dist"))
				if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, exitError, tc.want)
				}
			})
		}
	})
}

func TestProviderPackageKeyFilePassphrase(t *testing.T) {
	inSandbox(t)
	build := buildDir(t, "example", "linux_amd64")
	k := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
	keyFile := protectedKeyFile(t, k, "s3cret passphrase")
	args := func(out string) []string {
		return []string{"provider", "package", "--version", "1.0.0", "--binaries", build, "--key-file", keyFile, "--out", out}
	}

	// No passphrase and no terminal: say how to give it.
	out := filepath.Join(t.TempDir(), "dist")
	r := runTrove(t, nil, "", args(out)...)
	if r.code != exitError || !strings.Contains(r.stderr, "is protected by a passphrase: set TROVE_SIGNING_PASSPHRASE") {
		t.Errorf("without a passphrase: exit %d, stderr %q", r.code, r.stderr)
	}
	// A wrong one is refused.
	r = runTrove(t, map[string]string{passphraseEnv: "wrong"}, "", args(out)...)
	if r.code != exitError || !strings.Contains(r.stderr, "the passphrase does not unlock key "+k.KeyID) {
		t.Errorf("with a wrong passphrase: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused command wrote %s", out)
	}

	// From the environment.
	r = runTrove(t, map[string]string{passphraseEnv: "s3cret passphrase"}, "", args(out)...)
	if r.code != exitOK {
		t.Fatalf("with TROVE_SIGNING_PASSPHRASE: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Signed by key "+k.KeyID) {
		t.Errorf("stdout does not name the signing key %s:\n%s", k.KeyID, r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Error("the passphrase was printed")
	}

	// From the terminal, without echo.
	term := &fakeTerminal{answers: []string{"s3cret passphrase"}}
	term.install(t)
	out2 := filepath.Join(t.TempDir(), "dist")
	if r := runTrove(t, nil, "", args(out2)...); r.code != exitOK {
		t.Fatalf("with the passphrase typed: exit %d, stderr %q", r.code, r.stderr)
	}
	if want := []string{"Passphrase of the signing key in " + keyFile + ": "}; !slices.Equal(term.prompts, want) {
		t.Errorf("prompts %q, want %q", term.prompts, want)
	}
	// Same executables, same zips and SHA256SUMS.
	for _, name := range []string{"terraform-provider-example_1.0.0_linux_amd64.zip", "terraform-provider-example_1.0.0_SHA256SUMS"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, err := os.ReadFile(filepath.Join(out2, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs (%v)", name, err)
		}
	}
}

func TestProviderPackageManifest(t *testing.T) {
	build := buildDir(t, "example", "linux_amd64")
	project := inSandbox(t)
	projectDoc := []byte(`{"version": 1, "metadata": {"protocol_versions": ["6.0"]}}` + "\n")
	if err := os.WriteFile(filepath.Join(project, projectManifest), projectDoc, 0o644); err != nil {
		t.Fatal(err)
	}
	manifestOf := func(out string) string {
		b, err := os.ReadFile(filepath.Join(out, "terraform-provider-example_1.0.0_manifest.json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pack := func(extra ...string) (result, string) {
		out := filepath.Join(t.TempDir(), "dist")
		return runTrove(t, nil, "", append([]string{"provider", "package", "--version", "1.0.0", "--binaries", build, "--unsigned", "--out", out}, extra...)...), out
	}

	// The project's manifest is copied byte for byte, as goreleaser's checksum of it.
	r, out := pack()
	if r.code != exitOK || manifestOf(out) != string(projectDoc) {
		t.Fatalf("exit %d, stderr %q, manifest %q; want the project's %q", r.code, r.stderr, manifestOf(out), projectDoc)
	}
	if !strings.Contains(r.stdout, "protocols 6.0, from "+projectManifest) {
		t.Errorf("stdout does not say where the protocols came from:\n%s", r.stdout)
	}
	// --protocols agreeing with it are fine; contradicting it is a mistake.
	if r, _ := pack("--protocols", "6.0"); r.code != exitOK {
		t.Errorf("--protocols 6.0: exit %d, stderr %q", r.code, r.stderr)
	}
	if r, _ := pack("--protocols", "5.0"); r.code != exitUsage || !strings.Contains(r.stderr, "--protocols 5.0 contradicts ./"+projectManifest+", which declares 6.0") {
		t.Errorf("--protocols 5.0: exit %d, stderr %q", r.code, r.stderr)
	}
	// --manifest names another file.
	other := writeTemp(t, "m.json", []byte(`{"version":1,"metadata":{"protocol_versions":["5.0","6.0"]}}`))
	if r, out := pack("--manifest", other); r.code != exitOK || !strings.Contains(manifestOf(out), `"5.0","6.0"`) {
		t.Errorf("--manifest: exit %d, stderr %q", r.code, r.stderr)
	}
	broken := writeTemp(t, "m.json", []byte(`{"version":2}`))
	if r, _ := pack("--manifest", broken); r.code != exitError || !strings.Contains(r.stderr, "manifest version 2 is not supported") {
		t.Errorf("a broken --manifest: exit %d, stderr %q", r.code, r.stderr)
	}

	// Without a project manifest: --protocols, else 5.0.
	inSandbox(t)
	if r, out := pack(); r.code != exitOK || manifestOf(out) != `{"version":1,"metadata":{"protocol_versions":["5.0"]}}`+"\n" {
		t.Errorf("default: exit %d, stderr %q", r.code, r.stderr)
	}
	if r, out := pack("--protocols", "6.0, 5.0"); r.code != exitOK || manifestOf(out) != `{"version":1,"metadata":{"protocol_versions":["6.0","5.0"]}}`+"\n" {
		t.Errorf("--protocols 6.0,5.0: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestProviderPackageClean(t *testing.T) {
	inSandbox(t)
	build := buildDir(t, "example", "linux_amd64", "windows_amd64")
	out := filepath.Join(t.TempDir(), "dist")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{"terraform-provider-example_0.9.0_SHA256SUMS", "terraform-provider-example_0.9.0_linux_amd64.zip"} {
		if err := os.WriteFile(filepath.Join(out, old), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runTrove(t, nil, "", "provider", "package", "--version", "1.0.0", "--binaries", build, "--unsigned", "--out", out, "--clean")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	want := []string{
		"terraform-provider-example_1.0.0_SHA256SUMS",
		"terraform-provider-example_1.0.0_linux_amd64.zip",
		"terraform-provider-example_1.0.0_manifest.json",
		"terraform-provider-example_1.0.0_windows_amd64.zip",
	}
	if got := listDir(t, out); !slices.Equal(got, want) {
		t.Errorf("after --clean the output holds %q, want %q", got, want)
	}
	if !strings.Contains(r.stdout, "Not signed (--unsigned)") {
		t.Errorf("stdout does not say the release is unsigned:\n%s", r.stdout)
	}

	// A folder inside the output is not ours to delete.
	if err := os.Mkdir(filepath.Join(out, "terraform-provider-example_linux_amd64_v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runTrove(t, nil, "", "provider", "package", "--version", "1.0.1", "--binaries", build, "--unsigned", "--out", out, "--clean")
	if r.code != exitUsage || !strings.Contains(r.stderr, "also holds terraform-provider-example_linux_amd64_v1") {
		t.Errorf("--clean of an output with a folder: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := listDir(t, out); len(got) != len(want)+1 {
		t.Errorf("a refused --clean changed the output: %q", got)
	}
}

// TestProviderPackageThenPublish packages with --key-file and publishes
// the output unchanged with trove publish to a real server.
func TestProviderPackageThenPublish(t *testing.T) {
	inSandbox(t)
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	k := signingtest.NewKey(t, "acme")
	keyFile := writeTemp(t, "key.asc", []byte(k.ArmoredPrivate))
	pubFile := writeTemp(t, "key.pub.asc", []byte(k.ArmoredPublic))
	for _, args := range [][]string{{"namespace", "create", "acme"}, {"key", "add", "acme", "--file", pubFile}} {
		if r := runTrove(t, admin, "", args...); r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s", args, r.code, r.stderr)
		}
	}

	build := buildDir(t, "example", "linux_amd64", "darwin_arm64")
	out := filepath.Join(t.TempDir(), "dist")
	r := runTrove(t, nil, "", "provider", "package", "--version", "1.2.3", "--binaries", build, "--key-file", keyFile, "--out", out)
	if r.code != exitOK {
		t.Fatalf("provider package: exit %d\n%s", r.code, r.stderr)
	}
	for _, name := range []string{
		"terraform-provider-example_1.2.3_darwin_arm64.zip", "terraform-provider-example_1.2.3_linux_amd64.zip",
		"terraform-provider-example_1.2.3_manifest.json", "terraform-provider-example_1.2.3_SHA256SUMS",
		"terraform-provider-example_1.2.3_SHA256SUMS.sig", "Publish it with: trove publish --namespace NAMESPACE " + out,
	} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("stdout does not mention %s:\n%s", name, r.stdout)
		}
	}
	sums, _ := os.ReadFile(filepath.Join(out, "terraform-provider-example_1.2.3_SHA256SUMS"))
	sig, _ := os.ReadFile(filepath.Join(out, "terraform-provider-example_1.2.3_SHA256SUMS.sig"))
	pub, err := signing.ParsePublicKey(k.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.VerifyDetached([]registry.SigningKey{pub}, sums, sig); err != nil {
		t.Errorf("the signature does not verify: %v", err)
	}
	if _, err := release.ParseSHA256SUMS(sums); err != nil {
		t.Error(err)
	}

	r = runTrove(t, admin, "", "publish", "--namespace", "acme", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "Published acme/example 1.2.3 for darwin_arm64, linux_amd64") {
		t.Fatalf("publish: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, admin, "", "provider", "show", "acme/example", "1.2.3")
	if r.code != exitOK || !strings.Contains(r.stdout, k.KeyID) || !strings.Contains(r.stdout, "5.0") {
		t.Errorf("provider show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
