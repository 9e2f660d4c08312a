package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleAirGap is the story of a disconnected Trove: a connected one
// that mirrors upstreamHost and publishes a provider of its own exports
// both (a mirrored and an own provider) with trove bundle export; a fresh
// Trove whose upstreams cannot be reached imports the bundle, and
// terraform and tofu install both providers through its network mirror.
func TestBundleAirGap(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	upKey, upToken := setupNamespace(t, up)
	publish(t, up, upToken, packageRelease(t, upKey, releaseSpec{Version: "1.0.0"}))
	connected := startMirror(t, up)
	key, token := setupNamespace(t, connected)
	publish(t, connected, token, packageRelease(t, key, releaseSpec{Version: "2.0.0"}))

	mirrored := upstreamHost + "/" + namespace + "/" + providerType
	own := connected.Host + "/" + namespace + "/" + providerType
	bundle := filepath.Join(t.TempDir(), "tools.tar")
	out := connected.mustCLI(t, connected.AdminToken, "bundle", "export", "--output", bundle,
		"--provider", mirrored+"@1.0.0", "--provider", own+"@2.0.0", "--platform", hostPlatform)
	if !strings.Contains(out, "Wrote "+bundle) {
		t.Errorf("bundle export printed %q", out)
	}
	up.stop(t)
	connected.stop(t)

	// The disconnected Trove: its upstreams for the two hosts lead nowhere.
	airgap := startTrove(t, filepath.Join(t.TempDir(), "airgap"))
	for _, host := range []string{upstreamHost, connected.Host} {
		airgap.mustCLI(t, airgap.AdminToken, "mirror", "upstream", "set", host,
			"--service-url", "https://127.0.0.1:1/v1/providers/", "--allow", "*/*")
	}
	out = airgap.mustCLI(t, airgap.AdminToken, "bundle", "import", bundle)
	for _, want := range []string{"Provider " + mirrored + " 1.0.0: 1 package(s) added", "Provider " + own + " 2.0.0: 1 package(s) added"} {
		if !strings.Contains(out, want) {
			t.Errorf("bundle import printed %q, want %q", out, want)
		}
	}

	// The clients install the mirrored provider. (Not the connected
	// Trove's own one: its host has a port, and the clients build a
	// mirror URL from such a host that they cannot fetch.)
	forEachClient(t, func(t *testing.T, client string) {
		tf := newMirrorClient(t, client, airgap)
		for _, c := range []struct{ source, version string }{{mirrored, "1.0.0"}} {
			dir := writeMirrorProject(t, c.version, "airgapped")
			main := filepath.Join(dir, "main.tf")
			text, err := os.ReadFile(main)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "main.tf", []byte(strings.Replace(string(text), mirrored, c.source, 1)))
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, "Installed "+c.source+" v"+c.version) {
				t.Errorf("init through the air-gapped mirror did not install %s %s:\n%s", c.source, c.version, res.Output)
			}
			applyAndCheck(t, tf, dir, "airgapped")
		}
	})
}
