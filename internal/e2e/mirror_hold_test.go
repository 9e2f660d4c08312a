package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMirrorQuarantine: a mirror whose rule holds new versions back for 7
// days serves, to terraform and tofu, only the version an admin approved;
// once that version is denied, init finds nothing to install.
func TestMirrorQuarantine(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		publish(t, up, publishToken, packageRelease(t, key, releaseSpec{Version: v}))
	}
	mirror := startTrove(t, filepath.Join(t.TempDir(), "mirror"))
	mirror.mustCLI(t, mirror.AdminToken, "mirror", "upstream", "set", upstreamHost,
		"--service-url", up.Addr+"/v1/providers/", "--upstream-ca-file", up.CAFile, "--allow", namespace+"/*", "--min-age", "7d")
	source := fmt.Sprintf("%s/%s/%s", upstreamHost, namespace, providerType)
	mirror.mustCLI(t, mirror.AdminToken, "mirror", "hold", "approve", source, "1.0.0", "--reason", "reviewed")
	out := mirror.mustCLI(t, mirror.AdminToken, "mirror", "hold", "list", source)
	if !strings.Contains(out, "1.1.0") || !strings.Contains(out, "held") {
		t.Errorf("hold list:\n%s", out)
	}

	t.Run("held version skipped", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newMirrorClient(t, client, mirror)
			dir := writeMirrorProject(t, ">= 1.0.0", "held")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, "Installed "+source+" v1.0.0") {
				t.Errorf("init with 1.1.0 held did not install the approved 1.0.0:\n%s", res.Output)
			}
		})
	})

	mirror.mustCLI(t, mirror.AdminToken, "mirror", "hold", "deny", source, "1.0.0", "--reason", "compromised")
	t.Run("denied version gone", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := newMirrorClient(t, client, mirror)
			dir := writeMirrorProject(t, ">= 1.0.0", "denied")
			if res := tf.run(t, dir, "init", "-input=false"); res.Code == 0 || strings.Contains(res.Flat, "Installed "+source) {
				t.Errorf("init with 1.0.0 denied and 1.1.0 held: exit %d\n%s", res.Code, res.Output)
			}
		})
	})
}

// TestLockUpdatesInitLockFile: the lock file terraform or tofu init wrote
// through the mirror on this machine, for a configuration that required
// 1.0.0 exactly, is updated by `trove lock` after the constraint was
// loosened: the pinned version stays although 1.1.0 is allowed, the other
// platform's hash is added, and init accepts the file read-only;
// --upgrade then moves it to 1.1.0, which init installs from the file.
func TestLockUpdatesInitLockFile(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, up, publishToken, rel)
	publish(t, up, publishToken, packageRelease(t, key, releaseSpec{Version: "1.1.0"}))
	mirror := startMirror(t, up)
	source := fmt.Sprintf("%s/%s/%s", upstreamHost, namespace, providerType)

	forEachClient(t, func(t *testing.T, client string) {
		tf := newMirrorClient(t, client, mirror)
		first := writeMirrorProject(t, "1.0.0", "locked")
		tf.mustRun(t, first, "init", "-input=false")
		initLock, err := os.ReadFile(filepath.Join(first, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		// The same lock file beside a configuration that now allows 1.1.0.
		dir := writeMirrorProject(t, ">= 1.0.0", "locked")
		writeFile(t, dir, ".terraform.lock.hcl", initLock)
		out := mirror.mustCLI(t, mirror.AdminToken, "lock", dir)
		if !strings.Contains(out, "Kept "+source+" 1.0.0, as the lock file pins it") {
			t.Errorf("trove lock over init's lock file printed %q", out)
		}
		lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{hostPlatform, otherPlatform} {
			if h1 := packageH1(t, rel, p); !strings.Contains(string(lock), h1) {
				t.Errorf("the updated lock file lacks the h1 %s of the %s package:\n%s", h1, p, lock)
			}
		}
		if res := tf.mustRun(t, dir, "init", "-input=false", "-lockfile=readonly"); !strings.Contains(res.Flat, "v1.0.0") {
			t.Errorf("init from the updated lock file did not install 1.0.0:\n%s", res.Output)
		}
		if out := mirror.mustCLI(t, mirror.AdminToken, "lock", dir, "--upgrade"); !strings.Contains(out, "Upgraded "+source+" 1.0.0 -> 1.1.0") {
			t.Errorf("trove lock --upgrade printed %q", out)
		}
		upgraded, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		fresh := writeMirrorProject(t, ">= 1.0.0", "locked")
		writeFile(t, fresh, ".terraform.lock.hcl", upgraded)
		if res := tf.mustRun(t, fresh, "init", "-input=false", "-lockfile=readonly"); !strings.Contains(res.Flat, "v1.1.0") {
			t.Errorf("init from the upgraded lock file did not install 1.1.0:\n%s", res.Output)
		}
	})
}
