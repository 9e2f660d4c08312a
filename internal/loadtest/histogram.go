package loadtest

import (
	"math"
	"slices"
	"time"
)

// Histogram records request latencies exactly, as a slice sorted on
// demand: a load run of a few seconds produces at most a few million
// samples, so exact percentiles cost less memory than they are worth.
// The zero value is empty and ready to use. It is not safe for concurrent
// use: give every worker its own and Merge them afterwards.
type Histogram struct {
	samples []time.Duration
	sorted  bool
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	h.samples = append(h.samples, d)
	h.sorted = false
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if len(o.samples) == 0 {
		return
	}
	h.samples = append(h.samples, o.samples...)
	h.sorted = false
}

// Count returns the number of samples.
func (h *Histogram) Count() int { return len(h.samples) }

// Percentile returns the sample at percentile p (0 < p <= 100) by the
// nearest-rank method: the smallest sample such that at least p percent of
// the samples are less than or equal to it. p <= 0 gives the minimum. An
// empty histogram returns 0.
func (h *Histogram) Percentile(p float64) time.Duration {
	n := len(h.samples)
	if n == 0 {
		return 0
	}
	h.sort()
	if p <= 0 || math.IsNaN(p) {
		return h.samples[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return h.samples[rank-1]
}

// Max returns the largest sample, or 0 for an empty histogram.
func (h *Histogram) Max() time.Duration {
	if len(h.samples) == 0 {
		return 0
	}
	h.sort()
	return h.samples[len(h.samples)-1]
}

// Above returns how many samples are longer than d.
func (h *Histogram) Above(d time.Duration) int {
	h.sort()
	i, found := slices.BinarySearch(h.samples, d)
	for found && i < len(h.samples) && h.samples[i] == d {
		i++
	}
	return len(h.samples) - i
}

// Mean returns the arithmetic mean of the samples, or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if len(h.samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range h.samples {
		sum += float64(s)
	}
	return time.Duration(sum / float64(len(h.samples)))
}

func (h *Histogram) sort() {
	if !h.sorted {
		slices.Sort(h.samples)
		h.sorted = true
	}
}
