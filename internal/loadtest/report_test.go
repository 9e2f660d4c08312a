package loadtest

import (
	"strings"
	"testing"
	"time"
)

func TestRenderMarkdown(t *testing.T) {
	r := Report{
		Rows: []Row{
			{
				Endpoint: "versions acme/small",
				Conns:    32,
				Trove:    Result{Requests: 45000, Elapsed: 5 * time.Second, Bytes: 45000 * 100, P50: 600 * time.Microsecond, P99: 2500 * time.Microsecond, Max: 51 * time.Millisecond, CPU: 45000 * 41 * time.Microsecond},
				Baseline: Result{Requests: 50000, Elapsed: 5 * time.Second, Bytes: 50000 * 100, P50: 500 * time.Microsecond, P99: 12345 * time.Microsecond, Max: 20 * time.Millisecond, CPU: 50000 * 20500 * time.Nanosecond},
				Rounds:   3, RatioMin: 0.85, RatioMax: 0.951, Latency: true,
			},
			{
				Endpoint: "versions, mix",
				Conns:    32,
				Trove:    Result{Requests: 45000, Elapsed: 5 * time.Second, P50: 600 * time.Microsecond, P99: 4 * time.Millisecond, Max: 50 * time.Millisecond},
				Baseline: Result{Requests: 45000, Elapsed: 5 * time.Second, P50: 500 * time.Microsecond, P99: 1999 * time.Microsecond, Max: 9 * time.Millisecond},
				Latency:  true,
			},
			{
				Endpoint: "archive 50 MiB | TLS",
				Conns:    4,
				Stream:   true,
				Trove:    Result{Requests: 40, Errors: 1, Elapsed: 5 * time.Second, Bytes: 400 << 20, P50: 450 * time.Millisecond, P99: 600 * time.Millisecond},
				Baseline: Result{Requests: 50, Elapsed: 5 * time.Second, Bytes: 500 << 20, P50: 400 * time.Millisecond, P99: 500 * time.Millisecond},
			},
			{Endpoint: "archive 50 MiB, plain HTTP", Conns: 4, Stream: true, Skipped: "no --insecure-http"},
		},
		RSS:   &RSS{Current: 50 << 20, Peak: 120 << 20, Anon: 40 << 20, File: 10 << 20},
		Index: "100,000 versions",
		Setup: "3 rounds",
		Goals: DefaultGoals,
	}
	var b strings.Builder
	if err := RenderMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| endpoint | conns | Trove req/s | baseline req/s | ratio | Trove p99 | baseline p99 | Trove max | baseline max | Trove p50 | baseline p50 | Trove MiB/s | baseline MiB/s | Trove CPU/req | baseline CPU/req | errors (Trove/baseline) |",
		"| versions acme/small | 32 | 9000 | 10000 | 0.90 (0.85-0.95) | 2.50 ms | 12.3 ms | 51.0 ms | 20.0 ms | 0.60 ms | 0.50 ms | 0.86 | 0.95 | 41.0 µs | 20.5 µs | 0/0 |",
		`| archive 50 MiB \| TLS | 4 | 8.00 | 10.0 | 0.80 | 600 ms | 500 ms | - | - | 450 ms | 400 ms | 80.0 | 100 | - | - | 1/0 |`,
		"| archive 50 MiB, plain HTTP | 4 | - | - | - | - | - | - | - | - | - | - | - | - | - | skipped: no --insecure-http |",
		"  (server CPU per request: Trove 41.0 µs, baseline 20.5 µs, 2.00x)",
		"Trove memory after the run: VmRSS 50.0 MiB, VmHWM 120.0 MiB (VmRSS: 40.0 MiB anonymous, 10.0 MiB files) (index: 100,000 versions).",
		"Setup: 3 rounds.",
		"- versions acme/small: Trove at 90% of the baseline's requests/s (goal >= 90%): met",
		"  p99 2.50 ms against the baseline's 12.3 ms (goal <= 2x): met",
		"  slowest request 51.0 ms, the baseline's 20.0 ms (goal <= 50.0 ms): MISSED",
		"  requests over 50.0 ms: Trove 0 of 45,000, the baseline 0 of 50,000",
		"- versions, mix: Trove at 100% of the baseline's requests/s (goal >= 90%): met",
		"  p99 4.00 ms against the baseline's 2.00 ms (goal <= 2x): MISSED",
		"  slowest request 50.0 ms, the baseline's 9.00 ms (goal <= 50.0 ms): met",
		"- archive 50 MiB | TLS: Trove at 80% of the baseline's MiB/s (goal >= 90%): MISSED",
		"- archive 50 MiB, plain HTTP: not measured (no --insecure-http)",
		"- resident memory: VmRSS 50.0 MiB (goal < 100.0 MiB): met",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks line %q; got:\n%s", want, out)
		}
	}
}

func TestRenderMarkdownMissedMemory(t *testing.T) {
	var b strings.Builder
	err := RenderMarkdown(&b, Report{RSS: &RSS{Current: 100 << 20, Peak: 100 << 20}, Goals: DefaultGoals})
	if err != nil {
		t.Fatal(err)
	}
	if want := "- resident memory: VmRSS 100.0 MiB (goal < 100.0 MiB): MISSED\n"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q; got:\n%s", want, b.String())
	}
	b.Reset()
	if err := RenderMarkdown(&b, Report{Goals: DefaultGoals}); err != nil {
		t.Fatal(err)
	}
	if want := "- resident memory: not measured (goal < 100.0 MiB)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q; got:\n%s", want, b.String())
	}
}

func TestRowRatio(t *testing.T) {
	sec := time.Second
	tests := map[string]struct {
		row  Row
		want float64
	}{
		"requests":          {Row{Trove: Result{Requests: 50, Elapsed: sec}, Baseline: Result{Requests: 100, Elapsed: sec}}, 0.5},
		"different windows": {Row{Trove: Result{Requests: 100, Elapsed: 2 * sec}, Baseline: Result{Requests: 100, Elapsed: sec}}, 0.5},
		"stream uses bytes": {Row{Stream: true, Trove: Result{Requests: 1, Bytes: 300, Elapsed: sec}, Baseline: Result{Requests: 1, Bytes: 200, Elapsed: sec}}, 1.5},
		"empty baseline":    {Row{Trove: Result{Requests: 10, Elapsed: sec}}, 0},
	}
	for name, tc := range tests {
		if got := tc.row.Ratio(); got != tc.want {
			t.Errorf("%s: Ratio = %v, want %v", name, got, tc.want)
		}
	}
}

func TestParseProcStatus(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    RSS
		wantErr bool
	}{
		"real": {in: "Name:\ttrove\nVmPeak:\t 1285040 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   45678 kB\nThreads:\t9\n",
			want: RSS{Current: 45678 << 10, Peak: 81234 << 10}},
		"split": {in: "VmHWM:\t 9 kB\nVmRSS:\t 8 kB\nRssAnon:\t 6 kB\nRssFile:\t 2 kB\nRssShmem:\t 0 kB\n",
			want: RSS{Current: 8 << 10, Peak: 9 << 10, Anon: 6 << 10, File: 2 << 10}},
		"missing hwm":   {in: "VmRSS:\t 1 kB\n", wantErr: true},
		"kernel thread": {in: "Name:\tkthreadd\nState:\tS\n", wantErr: true},
		"bad unit":      {in: "VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n", wantErr: true},
		"bad number":    {in: "VmRSS:\t x kB\nVmHWM:\t 1 kB\n", wantErr: true},
		"negative":      {in: "VmRSS:\t -1 kB\nVmHWM:\t 1 kB\n", wantErr: true},
	}
	for name, tc := range tests {
		got, err := ParseProcStatus(strings.NewReader(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", name, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", name, got, tc.want)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		"real":         {in: "2372046287 113716470 5523\n", want: 2372046287},
		"zero":         {in: "0 0 0", want: 0},
		"two fields":   {in: "1 2", wantErr: true},
		"not a number": {in: "x 1 2", wantErr: true},
		"negative":     {in: "-5 1 2", wantErr: true},
		"empty":        {in: "", wantErr: true},
	}
	for name, tc := range tests {
		got, err := ParseSchedstat(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v, error %v", name, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestResultAdd(t *testing.T) {
	r := Result{Requests: 10, Errors: 1, Bytes: 100, Elapsed: time.Second, CPU: time.Millisecond}
	r.add(Result{Requests: 30, Errors: 2, Bytes: 300, Elapsed: time.Second, CPU: 3 * time.Millisecond, FirstError: "boom"})
	want := Result{Requests: 40, Errors: 3, Bytes: 400, Elapsed: 2 * time.Second, CPU: 4 * time.Millisecond, FirstError: "boom"}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	if r.ReqPerSec() != 20 || r.CPUPerRequest() != 100*time.Microsecond {
		t.Errorf("ReqPerSec %v, CPUPerRequest %v; want 20 and 100µs", r.ReqPerSec(), r.CPUPerRequest())
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 30: "30", 100000: "100,000", 1234567: "1,234,567", -2500: "-2,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRenderMarkdownReferencesAndStorage(t *testing.T) {
	cold := Result{Requests: 30000, Elapsed: 5 * time.Second, Bytes: 30000 * 100, P50: 4 * time.Millisecond, P99: 12 * time.Millisecond,
		CPU: 30000 * 120 * time.Microsecond, BackendCPU: 30000 * 95 * time.Microsecond}
	r := Report{
		Rows: []Row{
			{Endpoint: "download, cold", Conns: 32, Backend: "PostgreSQL", Trove: cold,
				Baseline: Result{Requests: 120000, Elapsed: 5 * time.Second, Bytes: 120000 * 100, P50: time.Millisecond, P99: 5 * time.Millisecond, CPU: 120000 * 30 * time.Microsecond},
				Notes:    []string{"restarted before each round"}},
			{Endpoint: "archive, redirect", Reference: "direct S3 GET", Conns: 4, Stream: true, Backend: "S3 server",
				Trove:    Result{Requests: 50, Elapsed: 5 * time.Second, Bytes: 500 << 20, P50: 60 * time.Millisecond, P99: 90 * time.Millisecond},
				Baseline: Result{Requests: 50, Elapsed: 5 * time.Second, Bytes: 500 << 20, P50: 58 * time.Millisecond, P99: 89 * time.Millisecond}},
			{Endpoint: "archive, proxy", Conns: 4, Stream: true, Skipped: "no S3"},
		},
		Goals: DefaultGoals,
	}
	var b strings.Builder
	if err := RenderMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| endpoint | conns | Trove req/s | baseline req/s | ratio | Trove p99 | baseline p99 | Trove max | baseline max | Trove p50 | baseline p50 | Trove MiB/s | baseline MiB/s | Trove CPU/req | baseline CPU/req | storage CPU/req behind Trove | errors (Trove/baseline) |",
		"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
		"| download, cold | 32 | 6000 | 24000 | 0.25 | 12.0 ms | 5.00 ms | - | - | 4.00 ms | 1.00 ms | 0.57 | 2.29 | 120.0 µs | 30.0 µs | 95.0 µs (PostgreSQL) | 0/0 |",
		"| archive, redirect vs direct S3 GET | 4 | 10.0 | 10.0 | 1.00 | 90.0 ms | 89.0 ms | - | - | 60.0 ms | 58.0 ms | 100 | 100 | - | - | - | 0/0 |",
		"| archive, proxy | 4 | - | - | - | - | - | - | - | - | - | - | - | - | - | - | skipped: no S3 |",
		"- download, cold: Trove at 25% of the baseline's requests/s (goal >= 90%): MISSED",
		"  (PostgreSQL behind Trove: 95.0 µs CPU per request)",
		"  (restarted before each round)",
		"- archive, redirect vs direct S3 GET: Trove at 100% of direct S3 GET's MiB/s (goal >= 90%): met",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks line %q; got:\n%s", want, out)
		}
	}
}

func TestRenderMarkdownP99Goal(t *testing.T) {
	r := Report{Goals: DefaultGoals, Rows: []Row{
		{
			Endpoint: "UI pages, mix", Conns: 32, P99Goal: UIPageP99Goal,
			Trove:    Result{Requests: 10000, Elapsed: 5 * time.Second, P99: 19 * time.Millisecond, Max: 60 * time.Millisecond, Slow: 3},
			Baseline: Result{Requests: 40000, Elapsed: 5 * time.Second, P99: 4 * time.Millisecond, Max: 9 * time.Millisecond},
		},
		{
			Endpoint: "UI search, mix", Conns: 32, P99Goal: UISearchP99Goal,
			Trove:    Result{Requests: 10000, Elapsed: 5 * time.Second, P99: 50 * time.Millisecond},
			Baseline: Result{Requests: 10000, Elapsed: 5 * time.Second, P99: 4 * time.Millisecond},
		},
	}}
	var b strings.Builder
	if err := RenderMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"- UI pages, mix: p99 19.0 ms (goal < 20.0 ms): met",
		"  Trove at 25% of the baseline's requests/s, p99 19.0 ms against 4.00 ms (no goal: no static server renders a page)",
		"  slowest request 60.0 ms, the baseline's 9.00 ms; requests over 50.0 ms: Trove 3 of 10,000, the baseline 0 of 40,000",
		"- UI search, mix: p99 50.0 ms (goal < 50.0 ms): MISSED",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks line %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "goal >= 90%") || strings.Contains(out, "goal <= 2x") {
		t.Errorf("a UI row is held to the protocol goals:\n%s", out)
	}
}

func TestRenderMarkdownFailedRow(t *testing.T) {
	r := Report{
		Rows: []Row{
			{Endpoint: "UI pages, mix", Conns: 32, P99Goal: 20 * time.Millisecond,
				Trove:    Result{Requests: 9000, Elapsed: time.Second, P99: 15 * time.Millisecond},
				Baseline: Result{Requests: 10000, Elapsed: time.Second, P99: 9 * time.Millisecond}},
			{Endpoint: "UI search, mix", Conns: 32, P99Goal: 50 * time.Millisecond, Failed: "load run interrupted: context deadline exceeded"},
		},
		Goals: DefaultGoals,
	}
	var b strings.Builder
	if err := RenderMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| UI pages, mix | 32 | 9000 | 10000 | 0.90 | 15.0 ms | 9.00 ms | - | - | - | - | 0.00 | 0.00 | - | - | 0/0 |",
		"| UI search, mix | 32 | - | - | - | - | - | - | - | - | - | - | - | - | - | FAILED: load run interrupted: context deadline exceeded |",
		"- UI pages, mix: p99 15.0 ms (goal < 20.0 ms): met",
		"- UI search, mix: FAILED (load run interrupted: context deadline exceeded); the run stopped here",
		"- resident memory: not measured (goal < 100.0 MiB)",
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("output lacks line %q; got:\n%s", want, b.String())
		}
	}
}
