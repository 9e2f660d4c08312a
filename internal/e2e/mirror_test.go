package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// upstreamHost is the origin host name of the mirrored provider in these
// tests: the mirror reaches it through its upstream's service URL, and
// the clients never resolve it (every install goes through the mirror).
const upstreamHost = "upstream.example"

// newMirrorClient is newClient for a CLI configuration that installs every
// provider through s's network mirror, exactly as users write it, with a
// read token of s (the mirror is not public by default).
func newMirrorClient(t *testing.T, client string, s *troveServer) *terraformCLI {
	t.Helper()
	token := strings.TrimSpace(s.mustCLI(t, s.AdminToken, "token", "create", "--scope", "read", "--description", "installs through the mirror"))
	tf := newClient(t, client, s, token)
	var configFile string
	for _, e := range tf.env {
		if v, ok := strings.CutPrefix(e, "TF_CLI_CONFIG_FILE="); ok {
			configFile = v
		}
	}
	block := fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", s.Addr+"/v1/mirror/")
	f, err := os.OpenFile(configFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(block); err != nil {
		t.Fatal(err)
	}
	return tf
}

// writeMirrorProject writes a configuration that requires the example
// provider from upstreamHost.
func writeMirrorProject(t *testing.T, constraint, thingName string) string {
	t.Helper()
	return writeProjectFor(t, upstreamHost+"/"+namespace+"/"+providerType, constraint, thingName)
}

// startMirror starts a Trove whose mirror fetches upstreamHost's acme
// providers from up, configured with the CLI as an operator would.
func startMirror(t *testing.T, up *troveServer) *troveServer {
	t.Helper()
	m := startTrove(t, filepath.Join(t.TempDir(), "mirror"))
	m.mustCLI(t, m.AdminToken, "mirror", "upstream", "set", upstreamHost,
		"--service-url", up.Addr+"/v1/providers/", "--upstream-ca-file", up.CAFile, "--allow", namespace+"/*")
	return m
}

// packageH1 returns the h1 hash of one package of rel.
func packageH1(t *testing.T, rel *dist, platform string) string {
	t.Helper()
	h1, err := dirhash.HashZip(rel.path(rel.zipName(platform)), dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h1
}

// TestMirrorPullThrough is the story of a company that installs every
// provider through Trove's mirror: the first init fetches the provider from
// its upstream registry, later ones (and a re-init from the lock file) are
// served by the mirror, and when the upstream goes down what the mirror
// holds keeps installing.
func TestMirrorPullThrough(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, up, publishToken, rel)
	mirror := startMirror(t, up)
	source := fmt.Sprintf("%s/%s/%s", upstreamHost, namespace, providerType)
	digest := rel.zipDigest(t, hostPlatform)

	t.Run("first install", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newMirrorClient(t, client, mirror)
			dir := writeMirrorProject(t, "1.0.0", "mirrored")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, "Installed "+source+" v1.0.0") {
				t.Errorf("init through the mirror did not install %s 1.0.0:\n%s", source, res.Output)
			}
			lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			h1 := packageH1(t, rel, hostPlatform)
			if !strings.Contains(string(lock), h1) {
				t.Errorf("the lock file lacks the h1 hash %s of the %s package:\n%s", h1, hostPlatform, lock)
			}
			applyAndCheck(t, tf, dir, "mirrored")

			// A re-init from the lock file alone, in a fresh directory.
			again := writeMirrorProject(t, "1.0.0", "mirrored")
			writeFile(t, again, ".terraform.lock.hcl", lock)
			tf.mustRun(t, again, "init", "-input=false", "-lockfile=readonly")
		})
	})
	if findBlob(t, mirror.DataDir, digest) == "" {
		t.Fatalf("the mirror holds no blob %s after installing it", digest)
	}

	// trove lock writes a lock file with the h1 of every platform's
	// package, also of the one no client downloaded (the mirror fetches
	// it to hash it), and init accepts it as it is.
	lockDir := writeMirrorProject(t, "~> 1.0", "locked")
	out := mirror.mustCLI(t, mirror.AdminToken, "lock", lockDir)
	if !strings.Contains(out, "Locked "+source+" 1.0.0") {
		t.Errorf("trove lock printed %q", out)
	}
	generated, err := os.ReadFile(filepath.Join(lockDir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hostPlatform, otherPlatform} {
		if h1 := packageH1(t, rel, p); !strings.Contains(string(generated), h1) {
			t.Errorf("the generated lock file lacks the h1 %s of the %s package:\n%s", h1, p, generated)
		}
	}
	t.Run("generated lock file", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newMirrorClient(t, client, mirror)
			dir := writeMirrorProject(t, "~> 1.0", "locked")
			writeFile(t, dir, ".terraform.lock.hcl", generated)
			tf.mustRun(t, dir, "init", "-input=false", "-lockfile=readonly")
		})
	})

	// The upstream goes away: what the mirror holds keeps installing, and
	// a version it does not hold fails with an error, not a hang.
	up.stop(t)
	t.Run("upstream down", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newMirrorClient(t, client, mirror)
			dir := writeMirrorProject(t, "~> 1.0", "offline")
			if res := tf.mustRun(t, dir, "init", "-input=false"); !strings.Contains(res.Flat, "Installed "+source+" v1.0.0") {
				t.Errorf("init with the upstream down did not install the held 1.0.0:\n%s", res.Output)
			}
			missing := writeMirrorProject(t, "2.0.0", "missing")
			res := tf.run(t, missing, "init", "-input=false")
			if res.Code == 0 || !strings.Contains(res.Flat, "2.0.0") {
				t.Errorf("init of a version the mirror does not hold, with the upstream down: exit %d\n%s", res.Code, res.Output)
			}
		})
	})
}

// TestMirrorRefusesTamperedPackage: an upstream that sends a package whose
// bytes differ from its signed SHA256SUMS is refused: the client's
// download fails, the mirror's log says why, and it stores nothing of it.
func TestMirrorRefusesTamperedPackage(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, up, publishToken, rel)
	digest := rel.zipDigest(t, hostPlatform)
	blob := findBlob(t, up.DataDir, digest)
	if blob == "" {
		t.Fatalf("upstream holds no blob %s", digest)
	}
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff // a bit flipped on the upstream's disk
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := startMirror(t, up)

	forEachClient(t, func(t *testing.T, client string) {
		tf := newMirrorClient(t, client, mirror)
		dir := writeMirrorProject(t, "1.0.0", "tampered")
		res := tf.run(t, dir, "init", "-input=false")
		if res.Code == 0 {
			t.Fatalf("init of a tampered package succeeded:\n%s", res.Output)
		}
		// The client never had the whole (changed) archive to check: the
		// mirror broke the download off before its end.
		if strings.Contains(res.Output, "incorrect checksum") {
			t.Errorf("the client received the whole tampered archive and checked it itself:\n%s", res.Output)
		}
		t.Logf("%s init through the mirror of a tampered upstream:\n%s", client, res.Output)
	})
	if !strings.Contains(mirror.log(), "signed SHA256SUMS") {
		t.Errorf("the mirror's log does not say why it refused the package:\n%s", mirror.log())
	}
	if p := findBlob(t, mirror.DataDir, digest); p != "" {
		t.Errorf("the mirror stored the tampered package at %s", p)
	}
}
