package loadtest

import (
	"bufio"
	"fmt"
	"io"
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
	// FirstError describes the first error counted, for diagnostics.
	FirstError string
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
	// Skipped, when not empty, says why the endpoint was not measured.
	Skipped string
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
}

// Goals are the targets the report checks.
type Goals struct {
	MinRatio float64 // Trove throughput / baseline throughput, per endpoint
	MaxRSS   int64   // bytes of VmRSS
}

// DefaultGoals are Trove's performance targets: at least 90% of a static
// file server's throughput and less than 100 MiB resident.
var DefaultGoals = Goals{MinRatio: 0.90, MaxRSS: 100 << 20}

// Report is everything a run prints.
type Report struct {
	Rows  []Row
	RSS   *RSS   // nil when it could not be read
	Index string // what the index held, e.g. "100,000 versions"
	Goals Goals
}

// RenderMarkdown writes the report as a Markdown table followed by the
// memory line and the goals, each marked met or MISSED.
func RenderMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	b.WriteString("| endpoint | conns | Trove req/s | baseline req/s | ratio | Trove p99 | baseline p99 | Trove p50 | baseline p50 | Trove MiB/s | baseline MiB/s | errors (Trove/baseline) |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Rows {
		if row.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %d | - | - | - | - | - | - | - | - | - | skipped: %s |\n", cell(row.Endpoint), row.Conns, cell(row.Skipped))
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d |\n",
			cell(row.Endpoint), row.Conns,
			formatRate(row.Trove.ReqPerSec()), formatRate(row.Baseline.ReqPerSec()),
			formatRatio(row), formatLatency(row.Trove.P99), formatLatency(row.Baseline.P99),
			formatLatency(row.Trove.P50), formatLatency(row.Baseline.P50),
			formatRate(row.Trove.MiBPerSec()), formatRate(row.Baseline.MiBPerSec()),
			row.Trove.Errors, row.Baseline.Errors)
	}
	b.WriteString("\n")
	if r.RSS != nil {
		fmt.Fprintf(&b, "Trove memory after the run: VmRSS %s, VmHWM %s", formatMiB(r.RSS.Current), formatMiB(r.RSS.Peak))
	} else {
		b.WriteString("Trove memory after the run: not available")
	}
	if r.Index != "" {
		fmt.Fprintf(&b, " (index: %s)", r.Index)
	}
	b.WriteString(".\n\nGoals:\n")
	for _, row := range r.Rows {
		if row.Skipped != "" {
			fmt.Fprintf(&b, "- %s: not measured (%s)\n", row.Endpoint, row.Skipped)
			continue
		}
		unit := "requests/s"
		if row.Stream {
			unit = "MiB/s"
		}
		fmt.Fprintf(&b, "- %s: Trove at %.0f%% of the baseline's %s (goal >= %.0f%%): %s\n",
			row.Endpoint, 100*row.Ratio(), unit, 100*r.Goals.MinRatio, verdict(row.Ratio() >= r.Goals.MinRatio && row.Trove.Errors == 0))
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
	return strconv.FormatFloat(r.Ratio(), 'f', 2, 64)
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
// /proc/<pid>/status file. Both must be present, in kB.
func ParseProcStatus(r io.Reader) (RSS, error) {
	var rss RSS
	var seenRSS, seenHWM bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
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
		if name == "VmRSS" {
			rss.Current, seenRSS = kb<<10, true
		} else {
			rss.Peak, seenHWM = kb<<10, true
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
