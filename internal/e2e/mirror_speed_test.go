package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mirrorSpeedPayload makes the provider package of the install timings
// large enough that moving it dominates (incompressible, stored).
const mirrorSpeedPayload = 64 << 20

// wanBandwidth and wanLatency make the upstream of the WAN scenario look
// like a public registry reached over a company's internet link.
const (
	wanBandwidth = 200e6 / 8 // 200 Mbit/s
	wanLatency   = 10 * time.Millisecond
)

// TestMirrorInstallSpeed is a benchmark, not a test: it runs only with
// TROVE_BENCH=1 (make bench-mirror) and asserts no timing. It measures
// terraform init of a provider with a 64 MiB package three ways, each in
// rounds on fresh directories: straight from the upstream registry (a
// Trove, over providers.v1), through a cold mirror (a fresh Trove mirror
// that fetches the package from that upstream during the init), and
// through the warm mirror (the package held). It does so twice: with the
// upstream on loopback, as fast as the mirror, and with the upstream
// behind a proxy that gives it 200 Mbit/s and 10 ms per connection, as a
// public registry is reached (the mirror stays on loopback, as it is on
// the company's network). It logs the median and maximum of each and the
// cold/direct ratio (goal: at most 1.2); docs/benchmarks.md records the
// results.
func TestMirrorInstallSpeed(t *testing.T) {
	if os.Getenv("TROVE_BENCH") != "1" {
		t.Skip("a benchmark: run it with TROVE_BENCH=1 (make bench-mirror)")
	}
	requireTerraform(t)
	for _, scenario := range []struct {
		name  string
		front func(t *testing.T) func(int) int
	}{
		{"upstream on loopback", func(*testing.T) func(int) int { return nil }},
		{"upstream over a 200 Mbit/s link", func(t *testing.T) func(int) int {
			return func(port int) int { return startWANProxy(t, port, wanBandwidth, wanLatency) }
		}},
	} {
		t.Run(scenario.name, func(t *testing.T) { timeMirrorInstalls(t, scenario.name, scenario.front(t)) })
	}
}

func timeMirrorInstalls(t *testing.T, scenario string, front func(int) int) {
	const rounds = 5
	dir := filepath.Join(t.TempDir(), "upstream")
	var up *troveServer
	if front == nil {
		up = startTrove(t, dir)
	} else {
		up = startTroveBehind(t, dir, front)
	}
	key, publishToken := setupNamespace(t, up)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0", Platforms: []string{hostPlatform},
		Extra: []zipEntry{{Name: "payload.bin", Random: mirrorSpeedPayload}}})
	publish(t, up, publishToken, rel)

	timeInit := func(tf *terraformCLI, dir string) time.Duration {
		t.Helper()
		start := time.Now()
		tf.mustRun(t, dir, "init", "-input=false", "-backend=false")
		return time.Since(start)
	}
	var direct, cold, warm []time.Duration
	for range rounds {
		tf := newTerraform(t, up, "")
		direct = append(direct, timeInit(tf, writeProject(t, up, "1.0.0", "direct")))

		m := startMirror(t, up)
		mtf := newMirrorClient(t, clientTerraform, m)
		cold = append(cold, timeInit(mtf, writeMirrorProject(t, "1.0.0", "cold")))
		warm = append(warm, timeInit(mtf, writeMirrorProject(t, "1.0.0", "warm")))
		m.stop(t)
	}
	report := func(name string, ds []time.Duration) time.Duration {
		slices.Sort(ds)
		med := ds[len(ds)/2]
		var all []string
		for _, d := range ds {
			all = append(all, d.Round(time.Millisecond).String())
		}
		t.Logf("%-28s median %8s  max %8s  (%s)", name, med.Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), strings.Join(all, " "))
		return med
	}
	d := report("straight from the upstream", direct)
	c := report("through a cold mirror", cold)
	w := report("through the warm mirror", warm)
	fmt.Fprintf(os.Stderr, "mirror install, %s (%d MiB package, %d rounds, medians): direct %s, cold mirror %s (%.2fx), warm mirror %s (%.2fx)\n",
		scenario, mirrorSpeedPayload>>20, rounds, d.Round(time.Millisecond), c.Round(time.Millisecond), float64(c)/float64(d), w.Round(time.Millisecond), float64(w)/float64(d))
}
