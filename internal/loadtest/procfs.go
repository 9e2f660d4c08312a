package loadtest

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// A storage server Trove uses (PostgreSQL, an S3 server) is not a child
// of the harness, but when it runs on this machine its CPU time can still
// be read: the process listening on its port is found through
// /proc/net/tcp{,6} and /proc/<pid>/fd, and the CPU time of that process
// and all its descendants (PostgreSQL forks one backend per connection)
// is summed from /proc.

// ListenerPID returns the process that listens on TCP port on this
// machine: of the processes holding the listening socket, the one whose
// parent does not hold it too (PostgreSQL's postmaster rather than a
// backend that inherited the socket). It fails with NotFound when no
// visible process listens there (another machine, or another user's
// process without the rights to see it).
func ListenerPID(port int) (int, error) {
	var inodes []uint64
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, registry.Wrap(registry.Unavailable, err, "reading the TCP sockets of this machine")
		}
		found, err := ParseListenInodes(f, port)
		f.Close()
		if err != nil {
			return 0, err
		}
		inodes = append(inodes, found...)
	}
	if len(inodes) == 0 {
		return 0, registry.Errorf(registry.NotFound, "nothing on this machine listens on TCP port %d", port)
	}
	want := make(map[string]bool, len(inodes))
	for _, in := range inodes {
		want["socket:["+strconv.FormatUint(in, 10)+"]"] = true
	}
	holders := map[int]bool{}
	for _, pid := range listPIDs() {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or not ours to see
		}
		for _, fd := range fds {
			if target, err := os.Readlink(dir + "/" + fd.Name()); err == nil && want[target] {
				holders[pid] = true
				break
			}
		}
	}
	for pid := range holders {
		if ppid, err := readPPID(pid); err == nil && !holders[ppid] {
			return pid, nil
		}
	}
	return 0, registry.Errorf(registry.NotFound, "no visible process holds the socket listening on TCP port %d", port)
}

// ParseListenInodes returns the inodes of the sockets listening on port
// in the text of /proc/net/tcp or /proc/net/tcp6.
func ParseListenInodes(r io.Reader, port int) ([]uint64, error) {
	const listen = "0A" // TCP_LISTEN
	var inodes []uint64
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if first && len(fields) > 0 && fields[0] == "sl" {
			continue // the header
		}
		if len(fields) < 10 {
			return nil, registry.Errorf(registry.Invalid, "unexpected line in /proc/net/tcp: %q", sc.Text())
		}
		_, portHex, ok := strings.Cut(fields[1], ":")
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "unexpected local address %q in /proc/net/tcp", fields[1])
		}
		p, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "unexpected port %q in /proc/net/tcp", portHex)
		}
		if int(p) != port || fields[3] != listen {
			continue
		}
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "unexpected inode %q in /proc/net/tcp", fields[9])
		}
		if inode != 0 {
			inodes = append(inodes, inode)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, registry.Wrap(registry.Internal, err, "reading /proc/net/tcp")
	}
	return inodes, nil
}

// ParseStatPPID returns the parent process ID from the text of a
// /proc/<pid>/stat file. The command name in parentheses may itself hold
// spaces and parentheses, so the fields are counted from the last ')'.
func ParseStatPPID(s string) (int, error) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, registry.Errorf(registry.Invalid, "unexpected /proc stat %.80q: no command name", s)
	}
	fields := strings.Fields(s[end+1:]) // state, ppid, ...
	if len(fields) < 2 {
		return 0, registry.Errorf(registry.Invalid, "unexpected /proc stat %.80q: no parent", s)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid < 0 {
		return 0, registry.Errorf(registry.Invalid, "unexpected parent %q in /proc stat", fields[1])
	}
	return ppid, nil
}

// ReadTreeCPUTime returns the CPU time that process root and its living
// descendants have used so far. A descendant that exited is no longer
// counted, one that started is counted whole: over a measured window that
// is exact for long-lived processes such as database backends of a
// connection pool.
func ReadTreeCPUTime(root int) (time.Duration, error) {
	children := map[int][]int{}
	for _, pid := range listPIDs() {
		if ppid, err := readPPID(pid); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	total, err := ReadCPUTime(root)
	if err != nil {
		return 0, err
	}
	queue := append([]int(nil), children[root]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		queue = append(queue, children[pid]...)
		d, err := ReadCPUTime(pid)
		if err != nil {
			continue // exited meanwhile
		}
		total += d
	}
	return total, nil
}

// listPIDs returns the processes visible in /proc.
func listPIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readPPID(pid int) (int, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return ParseStatPPID(string(data))
}

// ParseMetricValues returns the values of the unlabelled samples called
// names in a Prometheus text exposition (what /metrics answers); names
// without such a sample are absent from the map.
func ParseMetricValues(r io.Reader, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	values := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || !want[fields[0]] {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "metric %s has the value %q, not a number", fields[0], fields[1])
		}
		values[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "reading the metrics")
	}
	return values, nil
}
