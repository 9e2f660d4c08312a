package e2e

import (
	"fmt"
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
