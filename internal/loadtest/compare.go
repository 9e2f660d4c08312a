package loadtest

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// CompareSide names one of the two builds a comparison measures.
type CompareSide int

// The two sides of a comparison: A is the reference (usually the older
// commit), B the candidate.
const (
	SideA CompareSide = iota
	SideB
)

// String returns "A" or "B".
func (s CompareSide) String() string {
	if s == SideA {
		return "A"
	}
	return "B"
}

// CompareSchedule returns the order of 2*rounds harness runs of a
// comparison: A B B A A B B A ..., so that a drift in what else the
// machine does (a load that rises or falls over the run) weighs on both
// sides equally, and neither side always goes first.
func CompareSchedule(rounds int) []CompareSide {
	if rounds < 1 {
		return nil
	}
	out := make([]CompareSide, 0, 2*rounds)
	for i := range rounds {
		if i%2 == 0 {
			out = append(out, SideA, SideB)
		} else {
			out = append(out, SideB, SideA)
		}
	}
	return out
}

// MinCompareNoise is the smallest relative difference of the
// Trove-to-baseline ratio a comparison calls a regression: below it two
// runs of the same binary differ on an idle machine.
const MinCompareNoise = 0.03

// P99CompareFactor is how much larger B's smallest p99 must be than A's
// largest for the comparison to call the latency worse.
const P99CompareFactor = 1.2

// CompareRow compares one row of the report across the runs of both sides.
type CompareRow struct {
	Endpoint string
	// RatioA and RatioB are the medians of the per-run Trove-to-baseline
	// ratios of each side: dividing by the baseline measured in the same
	// run cancels most of what the machine's load does to both.
	RatioA, RatioB float64
	// Change is RatioB/RatioA (1: the same; below 1: B is slower).
	Change float64
	// Noise is the relative spread the verdict tolerates: the larger of
	// MinCompareNoise and each side's (max-min)/median of its ratios.
	Noise float64
	// P99A, P99B are the largest p99 of each side's runs; P99MinB the
	// smallest of B's; MaxA, MaxB the slowest request of each side.
	P99A, P99B, P99MinB time.Duration
	MaxA, MaxB          time.Duration
	// Runs counts the runs of each side that measured the row.
	RunsA, RunsB int
	// Verdict is empty when B is not worse beyond noise, else says how.
	Verdict string
}

// CompareReports pairs the rows of the reports of both sides by endpoint
// and computes each row's change and verdict. Rows that one side never
// measured (skipped, or absent in that build) are left out.
func CompareReports(a, b []Report) []CompareRow {
	type acc struct {
		ratios []float64
		p99s   []time.Duration
		max    time.Duration
	}
	collect := func(reports []Report) (map[string]*acc, []string) {
		m := map[string]*acc{}
		var order []string
		for _, rep := range reports {
			for _, row := range rep.Rows {
				if row.Skipped != "" || row.Ratio() == 0 {
					continue
				}
				key := row.label()
				x := m[key]
				if x == nil {
					x = &acc{}
					m[key] = x
					order = append(order, key)
				}
				x.ratios = append(x.ratios, row.Ratio())
				x.p99s = append(x.p99s, row.Trove.P99)
				x.max = max(x.max, row.Trove.Max)
			}
		}
		return m, order
	}
	ma, order := collect(a)
	mb, _ := collect(b)
	var out []CompareRow
	for _, key := range order {
		xa, xb := ma[key], mb[key]
		if xb == nil {
			continue
		}
		r := CompareRow{
			Endpoint: key,
			RatioA:   median(xa.ratios),
			RatioB:   median(xb.ratios),
			P99A:     slices.Max(xa.p99s),
			P99B:     slices.Max(xb.p99s),
			P99MinB:  slices.Min(xb.p99s),
			MaxA:     xa.max,
			MaxB:     xb.max,
			RunsA:    len(xa.ratios),
			RunsB:    len(xb.ratios),
		}
		r.Noise = max(MinCompareNoise, spread(xa.ratios), spread(xb.ratios))
		if r.RatioA > 0 {
			r.Change = r.RatioB / r.RatioA
		}
		r.Verdict = compareVerdict(r)
		out = append(out, r)
	}
	return out
}

// compareVerdict says how B is worse than A beyond noise, or "".
func compareVerdict(r CompareRow) string {
	var worse []string
	if r.Change > 0 && r.Change < 1-r.Noise {
		worse = append(worse, fmt.Sprintf("throughput -%.0f%%", (1-r.Change)*100))
	}
	if r.P99A > 0 && float64(r.P99MinB) > float64(r.P99A)*P99CompareFactor {
		worse = append(worse, fmt.Sprintf("p99 x%.1f", float64(r.P99MinB)/float64(r.P99A)))
	}
	if r.MaxB > SlowLatency && r.MaxA <= SlowLatency {
		worse = append(worse, "max over "+SlowLatency.String())
	}
	if len(worse) == 0 {
		return ""
	}
	if r.RunsA < 2 || r.RunsB < 2 {
		return "B WORSE?: " + strings.Join(worse, ", ") + " (one run of a side: noise not measured, use -compare-rounds 2 or more)"
	}
	return "B WORSE: " + strings.Join(worse, ", ")
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread returns (max-min)/median of xs, 0 for fewer than two values.
func spread(xs []float64) float64 {
	m := median(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	return (slices.Max(xs) - slices.Min(xs)) / m
}

// RenderComparison writes the comparison as a Markdown table, one row per
// endpoint, and a last line that counts the rows where B is worse.
func RenderComparison(w io.Writer, nameA, nameB string, rows []CompareRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A = %s, B = %s; ratio = Trove / baseline in the same run (median of the runs), change = B / A\n\n", nameA, nameB)
	b.WriteString("| row | ratio A | ratio B | change | noise | p99 A | p99 B | max A | max B | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	worse := 0
	for _, r := range rows {
		v := r.Verdict
		if v == "" {
			v = "ok"
		} else {
			worse++
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.3f | ±%.0f%% | %s | %s | %s | %s | %s |\n",
			cell(r.Endpoint), r.RatioA, r.RatioB, r.Change, r.Noise*100,
			formatLatency(r.P99A), formatLatency(r.P99B), formatLatency(r.MaxA), formatLatency(r.MaxB), v)
	}
	if worse == 0 {
		b.WriteString("\nverdict: B is not worse than A beyond noise on any row\n")
	} else {
		fmt.Fprintf(&b, "\nverdict: B is WORSE than A on %d of %d rows\n", worse, len(rows))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
