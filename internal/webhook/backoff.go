package webhook

import (
	"math/rand/v2"
	"time"
)

// Backoff says when a failed delivery is tried again: after Base, then
// twice as long each time up to Max, each delay with up to a fifth of
// random jitter either way, for at most Attempts attempts in all.
type Backoff struct {
	Base, Max time.Duration
	Attempts  int
}

// DefaultBackoff tries a delivery 10 times over about 21 hours: waits of
// 3, 6, 12, 24, 48, 96, 192 and 384 minutes, then 8 hours (each with
// jitter).
var DefaultBackoff = Backoff{Base: 3 * time.Minute, Max: 8 * time.Hour, Attempts: 10}

// Delay returns the wait after the failed attempt number n (1 for the
// first), and false when no attempt is left. rnd returns a number in
// [0, 1); nil means math/rand.
func (b Backoff) Delay(n int, rnd func() float64) (time.Duration, bool) {
	if n >= b.Attempts {
		return 0, false
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	jitter := time.Duration((rnd()*2 - 1) * float64(d) / 5)
	return d + jitter, true
}
