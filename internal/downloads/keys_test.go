package downloads

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"trove.dev/trove/internal/registry"
)

// sweepKeys returns the keys of a mirror-like sweep: n versions of a
// provider, four platforms each, downloaded by one consumer with one
// client on one day. Each key's strings are built apart, as a request's
// are.
func sweepKeys(n int) []registry.DownloadKey {
	var keys []registry.DownloadKey
	for v := range n {
		for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
			os, arch, _ := strings.Cut(p, "_")
			keys = append(keys, registry.DownloadKey{Kind: registry.DownloadProvider,
				Namespace: strings.Clone("hashicorp"), Name: strings.Clone("aws"),
				Version: fmt.Sprintf("5.%d.0", v), OS: strings.Clone(os), Arch: strings.Clone(arch),
				Consumer: strings.Clone("anonymous"), Client: strings.Clone("terraform"),
				ClientVersion: strings.Clone("1.9.8"), Day: strings.Clone("2026-11-28")})
		}
	}
	return keys
}

// TestKeysShareStrings: the keys a Counter holds share one copy of each
// distinct string (issue 23: the keys of a mirror-like sweep held about
// 4 MB, most of it copies of the same few strings).
func TestKeysShareStrings(t *testing.T) {
	c, err := New(Options{Store: newMemStore()})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range sweepKeys(2) {
		c.Add(k)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := map[registry.DownloadKey]*slot{}
	for _, m := range []map[registry.DownloadKey]*slot{*c.read.Load(), c.dirty} {
		for k, s := range m {
			held[k] = s
		}
	}
	if len(held) != 8 {
		t.Fatalf("%d keys held, want 8", len(held))
	}
	data := map[string]map[*byte]bool{}
	for k := range held {
		for name, s := range map[string]string{"namespace": k.Namespace, "name": k.Name, "os": k.OS,
			"consumer": k.Consumer, "client": k.Client, "day": k.Day} {
			if data[name] == nil {
				data[name] = map[*byte]bool{}
			}
			data[name][unsafe.StringData(s)] = true
		}
	}
	for name, copies := range data {
		if (name == "os" && len(copies) != 3) || (name != "os" && len(copies) != 1) {
			t.Errorf("the keys hold %d copies of their %s", len(copies), name)
		}
	}
}

// BenchmarkKeyMemory reports the heap the keys of a sweep of 16,000
// download documents take (docs/benchmarks.md) as bytes/key.
func BenchmarkKeyMemory(b *testing.B) {
	keys := sweepKeys(4000)
	var perKey float64
	for b.Loop() {
		c, err := New(Options{Store: newMemStore()})
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, k := range keys {
			c.Add(k)
		}
		c.mu.Lock()
		c.promote()
		c.mu.Unlock()
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := len(*c.read.Load())
		perKey = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
		runtime.KeepAlive(c)
	}
	runtime.KeepAlive(keys) // the requests' memory is not the Counter's
	b.ReportMetric(perKey, "bytes/key")
}
