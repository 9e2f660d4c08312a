package loadtest

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinningSplitsTheCPUs checks that a pinned harness runs every thread
// on the load's CPUs and starts a server on the first CPU alone.
func TestPinningSplitsTheCPUs(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		if _, err := newPinning(); err == nil {
			t.Fatal("pinning on one CPU: no error")
		}
		t.Skip("one CPU: nothing to split")
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		if err := pinThreads(&all); err != nil {
			t.Error(err)
		}
	})
	p, err := newPinning()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.server.Count() + p.load.Count(); got != all.Count() || p.server.Count() != 1 || !p.server.IsSet(p.first) || p.load.IsSet(p.first) {
		t.Fatalf("split of %d CPUs: server %d CPU(s) (first %d), load %d", all.Count(), p.server.Count(), p.first, p.load.Count())
	}
	if err := p.pinHarness(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != p.loadCPUs {
		t.Errorf("GOMAXPROCS %d, want the load's %d CPUs", got, p.loadCPUs)
	}

	var out bytes.Buffer
	cmd := exec.Command("cat", "/proc/self/status")
	cmd.Stdout = &out
	if err := p.start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := statusField(t, out.String(), "Cpus_allowed_list"); got != strconv.Itoa(p.first) {
		t.Errorf("the server's CPUs: %q, want %d", got, p.first)
	}

	// Every thread is back on the load's CPUs, the forking one included.
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			continue // exited since
		}
		if cur != p.load {
			t.Errorf("thread %d runs on %d CPU(s), server's included: %t", tid, cur.Count(), cur.IsSet(p.first))
		}
	}
}

func statusField(t *testing.T, status, name string) string {
	t.Helper()
	for line := range strings.SplitSeq(status, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in %q", name, status)
	return ""
}
