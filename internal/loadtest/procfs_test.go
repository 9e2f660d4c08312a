package loadtest

import (
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseListenInodes(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 100 0 0 10 0
   3: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 6161 1 0000000000000000 100 0 0 10 0
`
	tests := map[int][]uint64{
		0x1F90: {4242, 6161}, // listening on 8080 over IPv4 and IPv6; the established one is not
		0x50:   {5151},
		9999:   nil,
	}
	for port, want := range tests {
		got, err := ParseListenInodes(strings.NewReader(table), port)
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("port %d: inodes %v, want %v", port, got, want)
		}
	}
	for name, bad := range map[string]string{
		"short line": "   0: 0100007F:1F90 00000000:0000 0A\n",
		"bad port":   "   0: 0100007F:XYZW 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n",
		"no colon":   "   0: 0100007F 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n",
		"bad inode":  "   0: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 x 1\n",
	} {
		if _, err := ParseListenInodes(strings.NewReader(bad), 0x1F90); err == nil {
			t.Errorf("%s: accepted %q", name, bad)
		}
	}
}

func TestParseStatPPID(t *testing.T) {
	tests := map[string]int{
		"1234 (postgres) S 1 1234 1234 0 -1 4194560":             1,
		"77 (postgres: trove db 127.0.0.1(5) idle) S 60 60 60 0": 60,
		"5 (a) b) R 4 5 5": 4,
	}
	for stat, want := range tests {
		got, err := ParseStatPPID(stat)
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", stat, got, err, want)
		}
	}
	for _, bad := range []string{"", "1234 postgres S 1", "1 (x) S", "1 (x) S one"} {
		if _, err := ParseStatPPID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestListenerPIDFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pid, err := ListenerPID(ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatalf("finding the listener (the harness needs Linux /proc): %v", err)
	}
	if pid != os.Getpid() {
		t.Errorf("ListenerPID = %d, want this process %d", pid, os.Getpid())
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if _, err := ListenerPID(port); err == nil {
		t.Errorf("a closed port still has a listener")
	}
}

func TestReadTreeCPUTimeCountsChildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done") // burns CPU until killed
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh to start: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var child time.Duration
	for deadline := time.Now().Add(20 * time.Second); child < 50*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Skipf("the child got only %v of CPU in 20 s", child)
		}
		d, err := ReadCPUTime(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		child = d
	}
	own, err := ReadCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ReadTreeCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// CPU times only grow: the tree read last holds at least this
	// process's time read before it plus the child's read before that.
	if tree < own+child {
		t.Errorf("tree CPU %v < own %v + child %v: the child's time is not counted", tree, own, child)
	}
}

func TestParseMetricValues(t *testing.T) {
	const text = `# HELP trove_providers_cache_entries Rendered documents in the cache.
# TYPE trove_providers_cache_entries gauge
trove_providers_cache_entries 17065
trove_providers_cache_bytes 6.7105529e+07
go_memstats_heap_inuse_bytes{instance="x"} 1
go_memstats_next_gc_bytes 1.6060389e+08
`
	tests := map[string]struct {
		names []string
		want  map[string]float64
	}{
		"cache": {[]string{"trove_providers_cache_entries", "trove_providers_cache_bytes"},
			map[string]float64{"trove_providers_cache_entries": 17065, "trove_providers_cache_bytes": 67105529}},
		"labelled and missing": {[]string{"go_memstats_heap_inuse_bytes", "absent"}, map[string]float64{}},
		"comment name":         {[]string{"#"}, map[string]float64{}},
	}
	for name, tc := range tests {
		got, err := ParseMetricValues(strings.NewReader(text), tc.names...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if _, err := ParseMetricValues(strings.NewReader("x_total many\n"), "x_total"); err == nil {
		t.Error("a non-numeric value was accepted")
	}
}
