package loadtest

import (
	"testing"
	"time"
)

func TestHistogramPercentile(t *testing.T) {
	ms := time.Millisecond
	// 1..100 ms recorded in reverse order, so sorting matters.
	var h Histogram
	for i := 100; i >= 1; i-- {
		h.Record(time.Duration(i) * ms)
	}
	tests := map[float64]time.Duration{
		0:     1 * ms,
		1:     1 * ms,
		50:    50 * ms,
		50.5:  51 * ms,
		90:    90 * ms,
		99:    99 * ms,
		99.9:  100 * ms,
		100:   100 * ms,
		150:   100 * ms,
		-3:    1 * ms,
		0.001: 1 * ms,
	}
	for p, want := range tests {
		if got := h.Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if h.Count() != 100 {
		t.Errorf("Count = %d, want 100", h.Count())
	}
	if h.Max() != 100*ms {
		t.Errorf("Max = %v, want 100ms", h.Max())
	}
	if h.Mean() != 50500*time.Microsecond {
		t.Errorf("Mean = %v, want 50.5ms", h.Mean())
	}
}

func TestHistogramSmallSamples(t *testing.T) {
	tests := map[string]struct {
		samples []time.Duration
		p50     time.Duration
		p99     time.Duration
	}{
		"empty":   {nil, 0, 0},
		"one":     {[]time.Duration{7}, 7, 7},
		"two":     {[]time.Duration{9, 3}, 3, 9},
		"three":   {[]time.Duration{5, 1, 3}, 3, 5},
		"outlier": {[]time.Duration{1, 1, 1, 1, 1, 1, 1, 1, 1, 1000}, 1, 1000},
	}
	for name, tc := range tests {
		var h Histogram
		for _, s := range tc.samples {
			h.Record(s)
		}
		if got := h.Percentile(50); got != tc.p50 {
			t.Errorf("%s: p50 = %v, want %v", name, got, tc.p50)
		}
		if got := h.Percentile(99); got != tc.p99 {
			t.Errorf("%s: p99 = %v, want %v", name, got, tc.p99)
		}
	}
}

func TestHistogramMergeAfterSort(t *testing.T) {
	var a, b Histogram
	for _, d := range []time.Duration{10, 20, 30} {
		a.Record(d)
	}
	if a.Percentile(100) != 30 {
		t.Fatalf("max of a = %v, want 30", a.Percentile(100))
	}
	b.Record(5)
	b.Record(40)
	a.Merge(&b)
	if a.Count() != 5 {
		t.Fatalf("Count = %d, want 5", a.Count())
	}
	if got := a.Percentile(0); got != 5 {
		t.Errorf("min after merge = %v, want 5 (merge must unsort)", got)
	}
	if got := a.Max(); got != 40 {
		t.Errorf("max after merge = %v, want 40", got)
	}
}

func TestHistogramAbove(t *testing.T) {
	var h Histogram
	for _, ms := range []int{5, 50, 50, 51, 200, 1} {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
	for d, want := range map[time.Duration]int{50 * time.Millisecond: 2, 0: 6, time.Second: 0, 49 * time.Millisecond: 4} {
		if got := h.Above(d); got != want {
			t.Errorf("Above(%s) = %d, want %d", d, got, want)
		}
	}
	if (&Histogram{}).Above(0) != 0 {
		t.Error("empty histogram")
	}
}
