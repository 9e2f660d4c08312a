package login

import (
	"sync"
	"time"
)

// maxBuckets bounds the memory of a limiter; when it is exceeded, the
// buckets that are full again (idle keys) are dropped.
const maxBuckets = 10000

// limiter is a set of token buckets, one per key (an account name or a
// source address), kept in this process's memory: each replica limits on
// its own, so N replicas allow up to N times the rate.
type limiter struct {
	burst int           // tokens a bucket holds when full
	every time.Duration // one token comes back per this interval

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newLimiter(burst int, every time.Duration) *limiter {
	return &limiter{burst: max(burst, 1), every: max(every, time.Millisecond), buckets: map[string]*bucket{}}
}

// refill brings b up to date at now.
func (l *limiter) refill(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(float64(l.burst), b.tokens+float64(elapsed)/float64(l.every))
		b.at = now
	}
}

// take removes a token from key's bucket and reports whether there was
// one; if not, it says how long until there is.
func (l *limiter) take(key string, now time.Time) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: float64(l.burst), at: now}
		l.buckets[key] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(l.every))
	}
	b.tokens--
	return true, 0
}

// prune drops the buckets that are full: forgetting them changes nothing.
// l.mu must be held.
func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		l.refill(b, now)
		if b.tokens >= float64(l.burst) {
			delete(l.buckets, k)
		}
	}
}
