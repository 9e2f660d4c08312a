package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestMirrorSync is the story of a team that warms the mirror before the
// upstream registry goes out of reach: `trove mirror sync` on their
// configuration makes the mirror fetch every platform's package of the
// version it requires, without any client installing it; with the
// upstream stopped, terraform init and tofu init (no lock file) install
// it from the mirror, and a second sync reports everything held.
func TestMirrorSync(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, up, publishToken, rel)
	mirror := startMirror(t, up)
	source := fmt.Sprintf("%s/%s/%s", upstreamHost, namespace, providerType)

	dir := writeMirrorProject(t, "~> 1.0", "synced")
	out := mirror.mustCLI(t, mirror.AdminToken, "mirror", "sync", dir)
	for _, p := range rel.Platforms {
		if line := "Fetched " + source + " 1.0.0 " + p + "\n"; !strings.Contains(out, line) {
			t.Errorf("trove mirror sync did not print %q:\n%s", line, out)
		}
		if digest := rel.zipDigest(t, p); findBlob(t, mirror.DataDir, digest) == "" {
			t.Errorf("after the sync the mirror holds no blob %s (%s)", digest, p)
		}
	}
	if want := fmt.Sprintf("Synced %d package(s): 0 held already, %d fetched now.\n", len(rel.Platforms), len(rel.Platforms)); !strings.HasSuffix(out, want) {
		t.Errorf("trove mirror sync ended with %q, want %q", out, want)
	}

	up.stop(t)
	out = mirror.mustCLI(t, mirror.AdminToken, "mirror", "sync", dir)
	if want := fmt.Sprintf("Synced %d package(s): %d held already, 0 fetched now.\n", len(rel.Platforms), len(rel.Platforms)); !strings.HasSuffix(out, want) {
		t.Errorf("the second sync, with the upstream down, ended with %q, want %q", out, want)
	}
	forEachClient(t, func(t *testing.T, client string) {
		tf := newMirrorClient(t, client, mirror)
		dir := writeMirrorProject(t, "~> 1.0", "offline")
		res := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(res.Flat, "Installed "+source+" v1.0.0") {
			t.Errorf("init with the upstream down did not install the synced 1.0.0:\n%s", res.Output)
		}
		applyAndCheck(t, tf, dir, "offline")
	})
}
