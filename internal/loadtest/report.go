package loadtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// Result is what one load run against one server measured.
type Result struct {
	Requests int           // requests that completed with a 2xx status in the measured window
	Errors   int           // transport errors and non-2xx answers in the measured window
	Bytes    int64         // response body bytes read in the measured window
	Elapsed  time.Duration // length of the measured window
	P50, P99 time.Duration // latency percentiles of the successful requests
	Max      time.Duration // the slowest successful request
	// Slow counts the successful requests slower than SlowLatency.
	Slow int
	// CPU is the CPU time the server used in the window (0: not measured).
	CPU time.Duration
	// BackendCPU is the CPU time the storage servers behind it (PostgreSQL,
	// the S3 server) used in the window (0: not measured).
	BackendCPU time.Duration
	// LoadCPU is the CPU time the load generator itself used in the
	// window (0: not measured).
	LoadCPU time.Duration
	// FirstError describes the first error counted, for diagnostics.
	FirstError string
}

// CPUPerRequest returns the server's CPU time per successful request, or
// 0 when either is unknown.
func (r Result) CPUPerRequest() time.Duration {
	if r.Requests == 0 || r.CPU <= 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Requests)
}

// BackendCPUPerRequest returns the storage servers' CPU time per
// successful request, or 0 when either is unknown.
func (r Result) BackendCPUPerRequest() time.Duration {
	if r.Requests == 0 || r.BackendCPU <= 0 {
		return 0
	}
	return r.BackendCPU / time.Duration(r.Requests)
}

// add accumulates o (another round of the same measurement) into r; the
// caller sets the percentiles from the merged latencies.
func (r *Result) add(o Result) {
	r.Requests += o.Requests
	r.Errors += o.Errors
	r.Bytes += o.Bytes
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.BackendCPU += o.BackendCPU
	r.LoadCPU += o.LoadCPU
	r.Max = max(r.Max, o.Max)
	r.Slow += o.Slow
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

// ReqPerSec returns the successful requests per second.
func (r Result) ReqPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// MiBPerSec returns the body bytes read per second, in MiB.
func (r Result) MiBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds()
}

// Row compares Trove and the baseline on one endpoint.
type Row struct {
	Endpoint string // human description, e.g. "versions acme/large (2,000 versions)"
	Conns    int    // concurrent connections used for both servers
	// Stream marks a large-file endpoint: its ratio compares MiB/s
	// instead of requests per second.
	Stream   bool
	Trove    Result
	Baseline Result
	// Rounds is how many times each server was measured, alternately;
	// with more than one, RatioMin and RatioMax are the extremes of the
	// per-round ratios.
	Rounds             int
	RatioMin, RatioMax float64
	// Skipped, when not empty, says why the endpoint was not measured.
	Skipped string
	// Failed, when not empty, says why its measurement failed: the run
	// stopped there, and the rows before it are what it measured.
	Failed string
	// Reference names what the Baseline columns measured when it is not
	// the static baseline server, e.g. "direct S3 GET".
	Reference string
	// Backend names the storage servers whose CPU Trove.BackendCPU holds,
	// e.g. "PostgreSQL"; empty when there are none to measure.
	Backend string
	// Latency marks a row whose latency goals are checked (the JSON
	// documents): p99 within Goals.MaxP99Factor of the baseline's and no
	// request above Goals.MaxLatency.
	Latency bool
	// P99Goal, when set, is the row's goal instead: a p99 latency below
	// it, whatever the baseline does (the web UI's pages, which no static
	// server renders); its throughput ratio is shown without a goal.
	P99Goal time.Duration
	// Notes say how the row was measured where the table cannot.
	Notes []string
}

// label returns the endpoint with the reference it was compared with.
func (r Row) label() string {
	if r.Reference == "" {
		return r.Endpoint
	}
	return r.Endpoint + " vs " + r.Reference
}

// reference names the other side of the comparison in sentences.
func (r Row) reference() string {
	if r.Reference == "" {
		return "the baseline"
	}
	return r.Reference
}

// Ratio returns Trove's throughput divided by the baseline's (bytes per
// second for streams, requests per second otherwise), or 0 when the
// baseline measured nothing.
func (r Row) Ratio() float64 {
	t, b := r.Trove.ReqPerSec(), r.Baseline.ReqPerSec()
	if r.Stream {
		t, b = r.Trove.MiBPerSec(), r.Baseline.MiBPerSec()
	}
	if b == 0 {
		return 0
	}
	return t / b
}

// RSS is the resident memory of a process as /proc/<pid>/status reports it.
type RSS struct {
	Current int64 // VmRSS, bytes
	Peak    int64 // VmHWM, bytes
	// Anon and File split VmRSS into anonymous memory (the Go heap, stacks,
	// SQLite's caches) and mapped files (the executable); 0 when the kernel
	// does not report them.
	Anon, File int64
}

// Goals are the targets the report checks.
type Goals struct {
	MinRatio float64 // Trove throughput / baseline throughput, per endpoint
	MaxRSS   int64   // bytes of VmRSS
	// MaxP99Factor bounds Trove's p99 latency as a multiple of the
	// baseline's, and MaxLatency its slowest request, on rows with Latency.
	MaxP99Factor float64
	MaxLatency   time.Duration
}

// SlowLatency is the latency above which Result.Slow counts a request:
// DefaultGoals.MaxLatency, so that a row shows whether its slowest
// requests were a few (the machine) or many (a stall).
const SlowLatency = 50 * time.Millisecond

// DefaultGoals are Trove's performance targets: at least 90% of a static
// file server's throughput, on the JSON documents a p99 latency within 2x
// of its and no request above 50 ms, and less than 100 MiB resident.
var DefaultGoals = Goals{MinRatio: 0.90, MaxRSS: 100 << 20, MaxP99Factor: 2, MaxLatency: SlowLatency}

// Report is everything a run prints.
type Report struct {
	Rows  []Row
	RSS   *RSS   // nil when it could not be read
	Index string // what the index held, e.g. "100,000 versions"
	// Setup describes how the numbers were taken (printed under the table).
	Setup string
	// Memory says when RSS was read (e.g. after a sweep that filled the
	// document cache), printed after it.
	Memory string
	Goals  Goals
}

// RenderMarkdown writes the report as a Markdown table followed by the
// memory line and the goals, each marked met or MISSED. When a row
// measured the storage servers behind Trove, the table has a column for
// their CPU per request.
func RenderMarkdown(w io.Writer, r Report) error {
	backend := false
	for _, row := range r.Rows {
		backend = backend || row.Backend != ""
	}
	var b strings.Builder
	b.WriteString("| endpoint | conns | Trove req/s | baseline req/s | ratio | Trove p99 | baseline p99 | Trove max | baseline max | Trove p50 | baseline p50 | Trove MiB/s | baseline MiB/s | Trove CPU/req | baseline CPU/req |")
	if backend {
		b.WriteString(" storage CPU/req behind Trove |")
	}
	b.WriteString(" errors (Trove/baseline) |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	if backend {
		b.WriteString("--:|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		if row.Skipped != "" || row.Failed != "" {
			dashes := "- | - | - | - | - | - | - | - | - | - | - | - | - |"
			if backend {
				dashes += " - |"
			}
			what := "skipped: " + row.Skipped
			if row.Failed != "" {
				what = "FAILED: " + row.Failed
			}
			fmt.Fprintf(&b, "| %s | %d | %s %s |\n", cell(row.label()), row.Conns, dashes, cell(what))
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
			cell(row.label()), row.Conns,
			formatRate(row.Trove.ReqPerSec()), formatRate(row.Baseline.ReqPerSec()),
			formatRatio(row), formatLatency(row.Trove.P99), formatLatency(row.Baseline.P99),
			formatLatency(row.Trove.Max), formatLatency(row.Baseline.Max),
			formatLatency(row.Trove.P50), formatLatency(row.Baseline.P50),
			formatRate(row.Trove.MiBPerSec()), formatRate(row.Baseline.MiBPerSec()),
			formatCPU(row.Trove.CPUPerRequest()), formatCPU(row.Baseline.CPUPerRequest()))
		if backend {
			storage := "-"
			if row.Backend != "" {
				storage = formatCPU(row.Trove.BackendCPUPerRequest())
				if storage != "-" {
					storage += " (" + row.Backend + ")"
				}
			}
			fmt.Fprintf(&b, " %s |", cell(storage))
		}
		fmt.Fprintf(&b, " %d/%d |\n", row.Trove.Errors, row.Baseline.Errors)
	}
	b.WriteString("\n")
	if r.RSS != nil {
		fmt.Fprintf(&b, "Trove memory after the run: VmRSS %s, VmHWM %s", formatMiB(r.RSS.Current), formatMiB(r.RSS.Peak))
		if r.RSS.Anon > 0 || r.RSS.File > 0 {
			fmt.Fprintf(&b, " (VmRSS: %s anonymous, %s files)", formatMiB(r.RSS.Anon), formatMiB(r.RSS.File))
		}
		if r.Memory != "" {
			fmt.Fprintf(&b, ", %s", r.Memory)
		}
	} else {
		b.WriteString("Trove memory after the run: not available")
	}
	if r.Index != "" {
		fmt.Fprintf(&b, " (index: %s)", r.Index)
	}
	b.WriteString(".\n")
	if r.Setup != "" {
		fmt.Fprintf(&b, "Setup: %s.\n", r.Setup)
	}
	b.WriteString("\nGoals:\n")
	for _, row := range r.Rows {
		if row.Failed != "" {
			fmt.Fprintf(&b, "- %s: FAILED (%s); the run stopped here\n", row.label(), row.Failed)
			continue
		}
		if row.Skipped != "" {
			fmt.Fprintf(&b, "- %s: not measured (%s)\n", row.label(), row.Skipped)
			continue
		}
		unit := "requests/s"
		if row.Stream {
			unit = "MiB/s"
		}
		if row.P99Goal > 0 {
			fmt.Fprintf(&b, "- %s: p99 %s (goal < %s): %s\n", row.label(), formatLatency(row.Trove.P99), formatLatency(row.P99Goal),
				verdict(row.Trove.P99 < row.P99Goal && row.Trove.Errors == 0))
			fmt.Fprintf(&b, "  Trove at %.0f%% of %s's %s, p99 %s against %s (no goal: no static server renders a page)\n",
				100*row.Ratio(), row.reference(), unit, formatLatency(row.Trove.P99), formatLatency(row.Baseline.P99))
			fmt.Fprintf(&b, "  slowest request %s, %s's %s; requests over %s: Trove %s of %s, %s %s of %s\n",
				formatLatency(row.Trove.Max), row.reference(), formatLatency(row.Baseline.Max), formatLatency(SlowLatency),
				thousands(row.Trove.Slow), thousands(row.Trove.Requests), row.reference(), thousands(row.Baseline.Slow), thousands(row.Baseline.Requests))
		} else {
			fmt.Fprintf(&b, "- %s: Trove at %.0f%% of %s's %s (goal >= %.0f%%): %s\n",
				row.label(), 100*row.Ratio(), row.reference(), unit, 100*r.Goals.MinRatio, verdict(row.Ratio() >= r.Goals.MinRatio && row.Trove.Errors == 0))
		}
		if row.Latency && r.Goals.MaxP99Factor > 0 {
			fmt.Fprintf(&b, "  p99 %s against %s's %s (goal <= %gx): %s\n", formatLatency(row.Trove.P99), row.reference(), formatLatency(row.Baseline.P99),
				r.Goals.MaxP99Factor, verdict(float64(row.Trove.P99) <= r.Goals.MaxP99Factor*float64(row.Baseline.P99)))
		}
		if row.Latency && r.Goals.MaxLatency > 0 {
			fmt.Fprintf(&b, "  slowest request %s, %s's %s (goal <= %s): %s\n", formatLatency(row.Trove.Max), row.reference(), formatLatency(row.Baseline.Max),
				formatLatency(r.Goals.MaxLatency), verdict(row.Trove.Max <= r.Goals.MaxLatency))
			fmt.Fprintf(&b, "  requests over %s: Trove %s of %s, %s %s of %s\n", formatLatency(SlowLatency),
				thousands(row.Trove.Slow), thousands(row.Trove.Requests), row.reference(), thousands(row.Baseline.Slow), thousands(row.Baseline.Requests))
		}
		if t, bl := row.Trove.CPUPerRequest(), row.Baseline.CPUPerRequest(); t > 0 && bl > 0 {
			name := "baseline"
			if row.Reference != "" {
				name = row.Reference
			}
			fmt.Fprintf(&b, "  (server CPU per request: Trove %s, %s %s, %.2fx)\n", formatCPU(t), name, formatCPU(bl), float64(t)/float64(bl))
		}
		if s := row.Trove.BackendCPUPerRequest(); s > 0 {
			fmt.Fprintf(&b, "  (%s behind Trove: %s CPU per request)\n", row.Backend, formatCPU(s))
		}
		for _, note := range row.Notes {
			fmt.Fprintf(&b, "  (%s)\n", note)
		}
	}
	if r.RSS != nil {
		fmt.Fprintf(&b, "- resident memory: VmRSS %s (goal < %s): %s\n", formatMiB(r.RSS.Current), formatMiB(r.Goals.MaxRSS), verdict(r.RSS.Current < r.Goals.MaxRSS))
	} else {
		fmt.Fprintf(&b, "- resident memory: not measured (goal < %s)\n", formatMiB(r.Goals.MaxRSS))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// cell escapes the characters that would break a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func formatRatio(r Row) string {
	if r.Baseline.ReqPerSec() == 0 && r.Baseline.MiBPerSec() == 0 {
		return "-"
	}
	s := strconv.FormatFloat(r.Ratio(), 'f', 2, 64)
	if r.Rounds > 1 {
		s += " (" + strconv.FormatFloat(r.RatioMin, 'f', 2, 64) + "-" + strconv.FormatFloat(r.RatioMax, 'f', 2, 64) + ")"
	}
	return s
}

// formatCPU prints a CPU time per request in microseconds, or in
// milliseconds from 1 ms on.
func formatCPU(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Millisecond:
		return formatLatency(d)
	default:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64) + " µs"
	}
}

// formatRate prints a rate with fewer decimals the larger it is.
func formatRate(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// formatLatency prints a duration in milliseconds with three significant
// digits or so.
func formatLatency(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "-"
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	}
}

func formatMiB(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// ReadCPUTime returns the CPU time process pid has used so far: the sum
// of the on-CPU times of its threads from /proc/<pid>/task/*/schedstat
// (nanosecond resolution; threads that already exited are not counted,
// which for a Go server are none).
func ReadCPUTime(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, registry.Wrap(registry.Unavailable, err, "cannot list the threads of process "+strconv.Itoa(pid))
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // the thread ended meanwhile
			}
			return 0, registry.Wrap(registry.Unavailable, err, "reading the CPU time of process "+strconv.Itoa(pid))
		}
		d, err := ParseSchedstat(string(data))
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// ParseSchedstat returns the on-CPU time from the text of a
// /proc/.../schedstat file: its first field, in nanoseconds.
func ParseSchedstat(s string) (time.Duration, error) {
	fields := strings.Fields(s)
	if len(fields) != 3 {
		return 0, registry.Errorf(registry.Invalid, "unexpected schedstat %q: want three numbers", s)
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil || ns < 0 {
		return 0, registry.Errorf(registry.Invalid, "unexpected schedstat CPU time %q", fields[0])
	}
	return time.Duration(ns), nil
}

// ReadRSS reads the resident memory of process pid from /proc.
func ReadRSS(pid int) (RSS, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return RSS{}, registry.Wrap(registry.Unavailable, err, "cannot read the memory of process "+strconv.Itoa(pid)+" (is /proc mounted?)")
	}
	defer f.Close()
	return ParseProcStatus(f)
}

// ParseProcStatus reads VmRSS and VmHWM from the text of a
// /proc/<pid>/status file, and RssAnon and RssFile if present. VmRSS and
// VmHWM must be present; all are in kB.
func ParseProcStatus(r io.Reader) (RSS, error) {
	var rss RSS
	var seenRSS, seenHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM" && name != "RssAnon" && name != "RssFile") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return RSS{}, registry.Errorf(registry.Invalid, "unexpected %s line in /proc status: %q", name, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<40 {
			return RSS{}, registry.Errorf(registry.Invalid, "unexpected %s value in /proc status: %q", name, fields[0])
		}
		switch name {
		case "VmRSS":
			rss.Current, seenRSS = kb<<10, true
		case "VmHWM":
			rss.Peak, seenHWM = kb<<10, true
		case "RssAnon":
			rss.Anon = kb << 10
		case "RssFile":
			rss.File = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return RSS{}, registry.Wrap(registry.Internal, err, "reading /proc status")
	}
	if !seenRSS || !seenHWM {
		return RSS{}, registry.Errorf(registry.Invalid, "/proc status has no VmRSS or VmHWM line (a kernel thread or a zombie?)")
	}
	return rss, nil
}
