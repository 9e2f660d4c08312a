package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets Run start this test binary as its baseline server, as the
// real harness starts itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "baseline" {
		fs := flag.NewFlagSet("baseline", flag.ExitOnError)
		cfg := fs.String("config", "", "")
		_ = fs.Parse(os.Args[2:])
		if err := RunBaseline(context.Background(), *cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if builtTrove.dir != "" {
		os.RemoveAll(builtTrove.dir)
	}
	os.Exit(code)
}

// builtTrove is the trove binary the tests of this package start, built
// once from this module.
var builtTrove struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// troveBin returns the path of a trove binary built from this module.
func troveBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts trove; skipped with -short")
	}
	builtTrove.once.Do(func() {
		dir, err := os.MkdirTemp("", "loadtest-trove-")
		if err != nil {
			builtTrove.err = err
			return
		}
		builtTrove.dir, builtTrove.bin = dir, filepath.Join(dir, "trove")
		out, err := exec.Command("go", "build", "-o", builtTrove.bin, "trove.dev/trove/cmd/trove").CombinedOutput()
		if err != nil {
			builtTrove.err = fmt.Errorf("go build ./cmd/trove: %v\n%s", err, out)
		}
	})
	if builtTrove.err != nil {
		t.Fatal(builtTrove.err)
	}
	return builtTrove.bin
}

// smallRun returns the options of a short run of every row against bin.
// Its windows are a second long: long enough that every row completes
// requests even on a machine busy with other tests (a request counts
// only when it starts and ends within the window).
func smallRun(bin string) Options {
	opt := DefaultOptions()
	opt.TroveBinary = bin
	opt.Conns, opt.StreamConns = 4, 2
	opt.Warmup, opt.Duration, opt.Rounds = 100*time.Millisecond, time.Second, 2
	opt.Spec.Providers = []ProviderSpec{{Type: "small", Versions: 30}, {Type: "large", Versions: 120}}
	opt.Spec.TotalVersions = 400
	opt.Spec.ArchiveBytes = 2 << 20
	opt.Spec.Modules = opt.Spec.Modules[:6]
	opt.MixDocs, opt.MixDuration, opt.MixRounds = 5, time.Second, 1
	opt.UIDocs = 20
	opt.FillDocs = 200
	return opt
}

// smallRunRows returns the endpoints of the rows of a smallRun in the
// order Run measures them; with single, the one-document rows too.
func smallRunRows(single bool) []string {
	rows := []string{
		"versions, mix of 4 providers (30 to 200 versions)",
		"download, mix of 5 documents (random provider, version and platform)",
		"module versions, mix of 5 modules",
		"module download, mix of 5 module versions",
		"mirror index.json, mix of 4 providers",
		"mirror version.json, mix of 5 versions (every platform)",
		"mirrored module versions, mix of 5 modules",
		"mirrored module download, mix of 5 module versions",
		"OCI tag list, mix of 4 provider repositories (30 to 200 tags; at most 1,000 a page)",
		"OCI provider index by tag, mix of 5 versions (4 platforms each)",
		"OCI module manifest by tag, mix of 5 module versions",
		"one document (hot loop): versions acme/small (30 versions)",
		"one document (hot loop): versions acme/large (120 versions)",
		"one document (hot loop): download acme/small 0.2.9 linux_amd64",
		"one document (hot loop): module versions acme/network/aws (30 versions)",
		"one document (hot loop): module download acme/network/aws 0.2.9",
		"archive 2.0 MiB, HTTPS",
		"UI pages, mix of 20 pages",
		"UI search, mix of 20 queries",
		"archive 2.0 MiB, plain HTTP",
	}
	if !single {
		rows = slices.DeleteFunc(rows, func(r string) bool { return strings.HasPrefix(r, "one document (hot loop): ") })
	}
	return rows
}

// TestRunAgainstRealTrove runs the whole harness briefly against a real
// trove binary built from this module.
func TestRunAgainstRealTrove(t *testing.T) {
	opt := smallRun(troveBin(t))
	opt.Single = true
	var progress strings.Builder
	opt.Progress = &progress

	report, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	wantRows := smallRunRows(true)
	wantRounds := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 2}
	if len(report.Rows) != len(wantRows) {
		t.Fatalf("got %d rows, want %d: %+v", len(report.Rows), len(wantRows), report.Rows)
	}
	for i, row := range report.Rows {
		if row.Endpoint != wantRows[i] {
			t.Errorf("row %d is %q, want %q", i, row.Endpoint, wantRows[i])
		}
		if row.Skipped != "" {
			t.Errorf("%s skipped: %s", row.Endpoint, row.Skipped)
			continue
		}
		for name, res := range map[string]Result{"trove": row.Trove, "baseline": row.Baseline} {
			if res.Requests == 0 || res.Errors != 0 || res.CPU <= 0 {
				t.Errorf("%s on %s: %d requests, %d errors (first: %s), CPU %v", row.Endpoint, name, res.Requests, res.Errors, res.FirstError, res.CPU)
			}
			// Every answer but a module download's 204 has a body.
			if !strings.Contains(row.Endpoint, "module download") && res.Bytes == 0 {
				t.Errorf("%s on %s: %d requests and no body bytes", row.Endpoint, name, res.Requests)
			}
		}
		if res := row.Trove; res.Max < res.P99 || res.P99 < res.P50 {
			t.Errorf("%s: Trove p50 %v, p99 %v, max %v", row.Endpoint, res.P50, res.P99, res.Max)
		}
		ui := strings.HasPrefix(row.Endpoint, "UI ")
		if row.Latency != (!row.Stream && !ui) || (row.P99Goal > 0) != ui {
			t.Errorf("%s: latency goals %v, p99 goal %v", row.Endpoint, row.Latency, row.P99Goal)
		}
		if notes := strings.Join(row.Notes, "\n"); ui && (!strings.Contains(notes, "Accept: text/html") || !strings.Contains(notes, "Trove VmRSS after this row")) {
			t.Errorf("%s: notes %q", row.Endpoint, notes)
		}
		if notes := strings.Join(row.Notes, "\n"); strings.HasPrefix(row.Endpoint, "mirrored module") &&
			(!strings.Contains(notes, "--module-mirror mirrored=127.0.0.1:") || strings.Contains(notes, "(0 since Trove started)")) {
			t.Errorf("%s: the notes do not show the upstream was asked: %q", row.Endpoint, notes)
		}
		if row.Rounds != wantRounds[i] || row.RatioMin > row.RatioMax {
			t.Errorf("%s: rounds %d, ratio range %v-%v", row.Endpoint, row.Rounds, row.RatioMin, row.RatioMax)
		}
	}
	// Every window the options plan was measured, and no other: what the
	// default timeout is made of (Budget).
	var measured time.Duration
	for _, row := range report.Rows {
		measured += time.Duration(row.Rounds) * 2 * (opt.Warmup + opt.Duration) // Duration == MixDuration here
	}
	if planned, err := opt.Planned(); err != nil || planned != measured {
		t.Errorf("Planned() = %v, %v; the rows measured %v", planned, err, measured)
	}
	if report.RSS == nil || report.RSS.Current <= 0 || report.RSS.Peak < report.RSS.Current {
		t.Errorf("RSS %+v", report.RSS)
	}
	if !strings.Contains(report.Memory, "asked for 200 download documents") {
		t.Errorf("Memory = %q, want it read after the sweep", report.Memory)
	}
	if report.Index != "400 versions of 4 providers, 1,600 packages, 80 module versions of 6 modules, and the same 80 module versions again in a module mirror's namespace" {
		t.Errorf("Index = %q", report.Index)
	}
}

// TestRunUIOnly runs the web UI rows alone (-ui-only): exactly the two
// UI rows, every window planned measured, the memory read before them.
func TestRunUIOnly(t *testing.T) {
	opt := smallRun(troveBin(t))
	opt.UIOnly = true
	var progress strings.Builder
	opt.Progress = &progress
	report, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var names []string
	var measured time.Duration
	for _, row := range report.Rows {
		names = append(names, row.Endpoint)
		measured += time.Duration(row.Rounds) * 2 * (opt.Warmup + opt.MixDuration)
		if row.Trove.Requests == 0 || row.Trove.Errors != 0 || row.Baseline.Requests == 0 || row.Baseline.Errors != 0 {
			t.Errorf("%s: Trove %+v, baseline %+v", row.Endpoint, row.Trove, row.Baseline)
		}
	}
	if want := []string{"UI pages, mix of 20 pages", "UI search, mix of 20 queries"}; !slices.Equal(names, want) {
		t.Errorf("rows %q, want %q", names, want)
	}
	if planned, err := opt.Planned(); err != nil || planned != measured {
		t.Errorf("Planned() = %v, %v; the rows measured %v", planned, err, measured)
	}
	if report.RSS == nil || !strings.Contains(report.Memory, "UI rows only") || !strings.Contains(report.Setup, "web UI rows only") {
		t.Errorf("RSS %+v, Memory %q, Setup %q", report.RSS, report.Memory, report.Setup)
	}
}

// TestRunPlainHTTP runs the realistic-mix rows alone over plain HTTP
// (-plain): every mix row, answered by both servers without errors,
// every window planned measured, and the setup says plain HTTP.
func TestRunPlainHTTP(t *testing.T) {
	opt := smallRun(troveBin(t))
	opt.PlainHTTP = true
	var progress strings.Builder
	opt.Progress = &progress
	report, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	want := slices.DeleteFunc(smallRunRows(false), func(r string) bool { return strings.HasPrefix(r, "UI ") || strings.HasPrefix(r, "archive ") })
	var names []string
	var measured time.Duration
	for _, row := range report.Rows {
		names = append(names, row.Endpoint)
		measured += time.Duration(row.Rounds) * 2 * (opt.Warmup + opt.MixDuration)
		for name, res := range map[string]Result{"trove": row.Trove, "baseline": row.Baseline} {
			if res.Requests == 0 || res.Errors != 0 {
				t.Errorf("%s on %s: %d requests, %d errors (first: %s)", row.Endpoint, name, res.Requests, res.Errors, res.FirstError)
			}
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("rows %q, want %q", names, want)
	}
	if planned, err := opt.Planned(); err != nil || planned != measured {
		t.Errorf("Planned() = %v, %v; the rows measured %v", planned, err, measured)
	}
	if !strings.Contains(progress.String(), "trove serve --insecure-http on http://") || !strings.Contains(report.Setup, "over plain HTTP") {
		t.Errorf("Setup %q; progress:\n%s", report.Setup, progress.String())
	}
	if report.RSS == nil || !strings.Contains(report.Memory, "plain HTTP") {
		t.Errorf("RSS %+v, Memory %q", report.RSS, report.Memory)
	}
}

// TestRunReportsWhatItMeasuredBeforeAFailure stops a run while it
// measures the UI search row, as an expiring -timeout did, and expects
// the error with the rows measured until then and the failed row last.
func TestRunReportsWhatItMeasuredBeforeAFailure(t *testing.T) {
	opt := smallRun(troveBin(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var progress strings.Builder
	opt.Progress = writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), "UI search, mix of 20 queries: trove, round 1/1") {
			cancel()
		}
		return progress.Write(p)
	})

	report, err := Run(ctx, opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want the cancellation\nprogress:\n%s", err, progress.String())
	}
	const failed = "UI search, mix of 20 queries"
	measured := slices.Index(smallRunRows(false), failed) // the rows before it
	if n := len(report.Rows); measured < 0 || n != measured+1 {
		t.Fatalf("got %d rows, want the %d measured and the failed one: %+v", n, measured, report.Rows)
	}
	for _, row := range report.Rows[:measured] {
		if row.Failed != "" || row.Trove.Requests == 0 || row.Baseline.Requests == 0 {
			t.Errorf("%s: failed %q, %d and %d requests", row.Endpoint, row.Failed, row.Trove.Requests, row.Baseline.Requests)
		}
	}
	last := report.Rows[measured]
	if last.Endpoint != failed || !strings.Contains(last.Failed, "load run interrupted") {
		t.Errorf("last row %q, failed %q", last.Endpoint, last.Failed)
	}
	if report.RSS == nil || !strings.Contains(report.Memory, "asked for 200 download documents") {
		t.Errorf("RSS %+v, Memory %q: read before the failure, want them reported", report.RSS, report.Memory)
	}
	var b strings.Builder
	if err := RenderMarkdown(&b, report); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| UI pages, mix of 20 pages | 4 | ", "| UI search, mix of 20 queries | 4 | - |", "FAILED: load run interrupted"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
