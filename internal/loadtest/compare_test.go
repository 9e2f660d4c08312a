package loadtest

import (
	"strings"
	"testing"
	"time"
)

func TestCompareSchedule(t *testing.T) {
	for _, tc := range []struct {
		rounds int
		want   string
	}{
		{0, ""}, {-3, ""}, {1, "AB"}, {2, "ABBA"}, {3, "ABBAAB"}, {4, "ABBAABBA"},
	} {
		var b strings.Builder
		for _, s := range CompareSchedule(tc.rounds) {
			b.WriteString(s.String())
		}
		if b.String() != tc.want {
			t.Errorf("CompareSchedule(%d) = %q, want %q", tc.rounds, b.String(), tc.want)
		}
	}
	// Every even number of rounds gives both sides the same sum of positions.
	for rounds := 2; rounds <= 10; rounds += 2 {
		var sum [2]int
		for i, s := range CompareSchedule(rounds) {
			sum[s] += i
		}
		if sum[SideA] != sum[SideB] {
			t.Errorf("rounds %d: positions A %d, B %d: one side is favoured", rounds, sum[SideA], sum[SideB])
		}
	}
}

// mixReport returns a report with one row whose Trove and baseline
// measured troveReqs and baseReqs requests in one second.
func mixReport(endpoint string, troveReqs, baseReqs int, p99, maxLat time.Duration) Report {
	return Report{Rows: []Row{{
		Endpoint: endpoint,
		Trove:    Result{Requests: troveReqs, Elapsed: time.Second, P99: p99, Max: maxLat},
		Baseline: Result{Requests: baseReqs, Elapsed: time.Second},
	}}}
}

func TestCompareReports(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name        string
		a, b        []Report
		wantChange  float64
		wantVerdict string // substring; "" means no verdict
	}{
		{
			name:       "same speed, machine load halves both",
			a:          []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms), mixReport("versions", 450, 500, 3*ms, 10*ms)},
			b:          []Report{mixReport("versions", 445, 500, 3*ms, 10*ms), mixReport("versions", 905, 1000, 3*ms, 10*ms)},
			wantChange: (0.89 + 0.905) / 2 / 0.9,
		},
		{
			name:        "B ten percent slower",
			a:           []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms)},
			b:           []Report{mixReport("versions", 810, 1000, 3*ms, 10*ms)},
			wantChange:  0.9,
			wantVerdict: "B WORSE?: throughput -10%",
		},
		{
			name:        "B ten percent slower, two steady runs each",
			a:           []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms), mixReport("versions", 450, 500, 3*ms, 10*ms)},
			b:           []Report{mixReport("versions", 810, 1000, 3*ms, 10*ms), mixReport("versions", 405, 500, 3*ms, 10*ms)},
			wantChange:  0.9,
			wantVerdict: "B WORSE: throughput -10%",
		},
		{
			name:       "within the minimum noise",
			a:          []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms)},
			b:          []Report{mixReport("versions", 880, 1000, 3*ms, 10*ms)},
			wantChange: 880.0 / 900,
		},
		{
			name: "noisy rounds of A hide a small loss",
			a: []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms), mixReport("versions", 800, 1000, 3*ms, 10*ms),
				mixReport("versions", 1000, 1000, 3*ms, 10*ms)},
			b:          []Report{mixReport("versions", 850, 1000, 3*ms, 10*ms)},
			wantChange: 850.0 / 900,
		},
		{
			name:        "p99 worse",
			a:           []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms)},
			b:           []Report{mixReport("versions", 900, 1000, 6*ms, 10*ms)},
			wantChange:  1,
			wantVerdict: "p99 x2.0",
		},
		{
			name:        "a stall in B",
			a:           []Report{mixReport("versions", 900, 1000, 3*ms, 10*ms)},
			b:           []Report{mixReport("versions", 900, 1000, 3*ms, 80*ms)},
			wantChange:  1,
			wantVerdict: "max over 50ms",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := CompareReports(tc.a, tc.b)
			if len(rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(rows))
			}
			r := rows[0]
			if d := r.Change - tc.wantChange; d > 1e-9 || d < -1e-9 {
				t.Errorf("change = %v, want %v", r.Change, tc.wantChange)
			}
			if tc.wantVerdict == "" && r.Verdict != "" || tc.wantVerdict != "" && !strings.Contains(r.Verdict, tc.wantVerdict) {
				t.Errorf("verdict = %q, want %q", r.Verdict, tc.wantVerdict)
			}
		})
	}
}

func TestCompareReportsSkipsUnpairedRows(t *testing.T) {
	a := []Report{{Rows: []Row{
		{Endpoint: "only in A", Trove: Result{Requests: 1, Elapsed: time.Second}, Baseline: Result{Requests: 1, Elapsed: time.Second}},
		{Endpoint: "skipped", Skipped: "no archive"},
		{Endpoint: "both", Trove: Result{Requests: 1, Elapsed: time.Second}, Baseline: Result{Requests: 1, Elapsed: time.Second}},
	}}}
	b := []Report{{Rows: []Row{
		{Endpoint: "both", Trove: Result{Requests: 1, Elapsed: time.Second}, Baseline: Result{Requests: 1, Elapsed: time.Second}},
		{Endpoint: "skipped", Skipped: "no archive"},
	}}}
	rows := CompareReports(a, b)
	if len(rows) != 1 || rows[0].Endpoint != "both" {
		t.Fatalf("rows = %+v, want only %q", rows, "both")
	}
}

func TestRenderComparison(t *testing.T) {
	ms := time.Millisecond
	rows := CompareReports(
		[]Report{mixReport("versions | large", 900, 1000, 3*ms, 10*ms)},
		[]Report{mixReport("versions | large", 700, 1000, 3*ms, 10*ms)})
	var b strings.Builder
	if err := RenderComparison(&b, "b272607", "HEAD", rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{`versions \| large`, "| 0.90 | 0.70 | 0.778 |", "B WORSE?: throughput -22%", "noise not measured", "WORSE than A on 1 of 1 rows", "A = b272607, B = HEAD"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
