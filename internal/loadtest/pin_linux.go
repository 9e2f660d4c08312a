package loadtest

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"trove.dev/trove/internal/registry"
)

// pinning splits the CPUs the harness may use between the servers it
// measures (the first) and its own load generator (the others), as a
// measurement that pins each side to its own core does: the server's Go
// runtime then runs with GOMAXPROCS 1, and the load never takes its
// processor time.
type pinning struct {
	server, load unix.CPUSet
	loadCPUs     int
	first        int // the server's CPU, for the report
}

// newPinning reads the harness's CPU affinity; it needs two CPUs or more.
func newPinning() (*pinning, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, registry.Wrap(registry.Internal, err, "reading the CPU affinity")
	}
	if all.Count() < 2 {
		return nil, registry.Errorf(registry.Invalid, "pinning needs two CPUs or more (one for the server, the others for the load), this process may use %d", all.Count())
	}
	p := &pinning{first: -1}
	for cpu := 0; cpu < len(all)*64; cpu++ {
		if !all.IsSet(cpu) {
			continue
		}
		if p.first < 0 {
			p.first = cpu
			p.server.Set(cpu)
			continue
		}
		p.load.Set(cpu)
		p.loadCPUs++
	}
	return p, nil
}

// pinHarness moves every thread of the harness to the load generator's
// CPUs (threads started later inherit it) and sizes GOMAXPROCS to them.
func (p *pinning) pinHarness() error {
	runtime.GOMAXPROCS(p.loadCPUs)
	return pinThreads(&p.load)
}

// pinThreads sets the CPU affinity of every thread of this process.
func pinThreads(set *unix.CPUSet) error {
	// A thread can start while the list is read: go over it until a pass
	// finds every thread pinned already.
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return registry.Wrap(registry.Internal, err, "listing the harness's threads")
		}
		moved := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &cur); err != nil {
				continue // the thread has exited
			}
			if cur == *set {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); errors.Is(err, unix.ESRCH) {
				continue // the thread has exited since
			} else if err != nil {
				return registry.Wrap(registry.Internal, err, "pinning the harness's thread "+t.Name())
			}
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
	return registry.Errorf(registry.Internal, "the harness's threads kept changing while they were pinned")
}

// start starts cmd on the server's CPU, with GOMAXPROCS 1 whatever the
// environment says. A new process inherits the CPU affinity of the thread
// that forks it, so the fork runs on a goroutine of its own, locked to
// its thread, which is pinned there for the fork and then given back to
// the load. If it cannot be given back, the goroutine ends locked and the
// runtime ends the thread with it: no harness thread stays on the
// server's CPU.
func (p *pinning) start(cmd *exec.Cmd) error {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
	cmd.Env = append(env, "GOMAXPROCS=1")
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.SchedSetaffinity(0, &p.server); err != nil {
			errc <- registry.Wrap(registry.Internal, err, "pinning the server's CPU")
			return
		}
		err := cmd.Start()
		if rerr := unix.SchedSetaffinity(0, &p.load); rerr != nil {
			if err == nil {
				// The measurement would not be what it says.
				cmd.Process.Kill()
				cmd.Wait()
			}
			errc <- errors.Join(err, registry.Wrap(registry.Internal, rerr, "giving the forking thread back to the load"))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// describe says how the CPUs are split, for the report's set-up line.
func (p *pinning) describe() string {
	return "Trove and the baseline pinned to CPU " + strconv.Itoa(p.first) + " (GOMAXPROCS 1), the load generator to the other " + strconv.Itoa(p.loadCPUs) + " (CPUs as the kernel counts them: two may be hyperthreads of one core)"
}
