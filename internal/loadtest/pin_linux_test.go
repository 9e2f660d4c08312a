package loadtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	t.Cleanup(func() {
		runtime.SetDefaultGOMAXPROCS()
		if err := pinThreads(&all); err != nil {
			t.Error(err)
		}
	})
	p, err := newPinning()
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedSetaffinity(0, &all); errors.Is(err, unix.EPERM) {
		t.Skip("this process may not set its CPU affinity")
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
	cmd := exec.Command("sh", "-c", `cat /proc/self/status; echo "GOMAXPROCS: $GOMAXPROCS"`)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=4")
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
	if got := statusField(t, out.String(), "GOMAXPROCS"); got != "1" {
		t.Errorf("the server's GOMAXPROCS: %q, want 1 over the environment's 4", got)
	}
	if err := p.start(exec.Command(filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Error("starting a missing program: no error")
	}

	// Every thread is back on the load's CPUs, the forking ones included
	// (after a start that worked and one that failed).
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
