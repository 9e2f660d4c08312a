package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/signing/signingtest"
)

// TestPackageWithoutGoreleaser is a first release with no other tool than
// go build, gpg and trove: the example provider, built by go build for two
// platforms (TestMain), is packaged by `trove provider package` (signed in
// Go with --key-file for one version, by gpg with --gpg-key for the next),
// published unchanged by `trove publish`, and installed and run by
// terraform and tofu, which check the signature.
func TestPackageWithoutGoreleaser(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Fatalf("gpg is not on the PATH (%v): this test signs a release with it; install GnuPG", err)
	}
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)

	// The provider's project directory, with the manifest HashiCorp's
	// template keeps there; `trove provider package` runs in it.
	project := t.TempDir()
	writeFile(t, project, "terraform-registry-manifest.json", []byte(manifestJSON))

	// 1.0.0: --binary per platform, signed in Go with the exported private key.
	keyFile := writeFile(t, t.TempDir(), "release-key.asc", []byte(key.ArmoredPrivate))
	dist10 := filepath.Join(t.TempDir(), "dist")
	out := runPackage(t, project, nil, "--version", "1.0.0",
		"--binary", hostPlatform+"="+providerBins[hostPlatform],
		"--binary", otherPlatform+"="+providerBins[otherPlatform],
		"--key-file", keyFile, "--out", dist10)
	for _, want := range []string{"Signed by key " + key.KeyID, "protocols 5.0, from terraform-registry-manifest.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("trove provider package printed no %q:\n%s", want, out)
		}
	}
	checkPackagedDist(t, dist10, "1.0.0")
	if out := srv.mustCLI(t, publishToken, "publish", "--namespace", namespace, dist10); !strings.Contains(out, "Published") {
		t.Errorf("trove publish printed %q, want it to report the published version", out)
	}

	// 1.1.0: the go build -o build/<os>_<arch>/ layout, signed by gpg
	// from a throwaway keyring holding the namespace's key.
	gnupg := gnupgHome(t, key)
	build := t.TempDir()
	for _, p := range []string{hostPlatform, otherPlatform} {
		if err := os.Mkdir(filepath.Join(build, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(providerBins[p], filepath.Join(build, p, "terraform-provider-example")); err != nil {
			t.Fatal(err)
		}
	}
	dist11 := filepath.Join(t.TempDir(), "dist")
	out = runPackage(t, project, []string{"GNUPGHOME=" + gnupg}, "--version", "1.1.0",
		"--binaries", build, "--gpg-key", key.Fingerprint, "--out", dist11)
	if !strings.Contains(out, "Signed by key "+key.KeyID) {
		t.Errorf("trove provider package --gpg-key printed no signing key %s:\n%s", key.KeyID, out)
	}
	checkPackagedDist(t, dist11, "1.1.0")
	srv.mustCLI(t, publishToken, "publish", "--namespace", namespace, dist11)

	source := fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType)
	forEachClient(t, func(t *testing.T, client string) {
		for _, version := range []string{"1.0.0", "1.1.0"} {
			tf := newClient(t, client, srv, "")
			name := "packaged-" + strings.ReplaceAll(version, ".", "-")
			dir := writeProject(t, srv, version, name)
			res := tf.mustRun(t, dir, "init", "-input=false")
			if want := tf.installedLine(source, version, key.KeyID); !strings.Contains(res.Flat, want) {
				t.Errorf("%s init output lacks %q:\n%s", client, want, res.Output)
			}
			applyAndCheck(t, tf, dir, name)
		}
	})
}

// runPackage runs `trove provider package` in dir with the extra
// environment and returns its standard output; it must succeed.
func runPackage(t *testing.T, dir string, extraEnv []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, append([]string{"provider", "package"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(t.TempDir()), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("trove provider package %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// checkPackagedDist checks that dir holds exactly goreleaser's files for
// version, with SHA256SUMS listing the zips and the manifest as
// packageRelease (goreleaser's layout) would.
func checkPackagedDist(t *testing.T, dir, version string) {
	t.Helper()
	d := &dist{Dir: dir, Version: version, Platforms: []string{hostPlatform, otherPlatform}}
	want := map[string]bool{d.sumsName(): true, d.sigName(): true, d.manifestName(): true,
		d.zipName(hostPlatform): true, d.zipName(otherPlatform): true}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("%s holds %s, which goreleaser's layout has not", dir, e.Name())
		}
		delete(want, e.Name())
	}
	for name := range want {
		t.Errorf("%s lacks %s", dir, name)
	}
	if got, want := string(d.sums(t)), string(d.computeSums(t)); got != want {
		t.Errorf("SHA256SUMS =\n%s\nwant\n%s", got, want)
	}
	if got := string(d.read(t, d.manifestName())); got != manifestJSON {
		t.Errorf("manifest = %q, want the project's %q", got, manifestJSON)
	}
}

// gnupgHome returns a new GNUPGHOME holding key's secret key, whose
// gpg-agent is stopped when the test ends. Its path is short: gpg-agent's
// socket lives in it.
func gnupgHome(t *testing.T, key *signingtest.Key) string {
	t.Helper()
	home, err := os.MkdirTemp("", "gnupg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(t.TempDir()), "GNUPGHOME="+home)
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "gpg-agent")
		kill.Env = env
		_ = kill.Run()
		os.RemoveAll(home)
	})
	imp := exec.Command("gpg", "--batch", "--import")
	imp.Env = env
	imp.Stdin = strings.NewReader(key.ArmoredPrivate)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	return home
}
