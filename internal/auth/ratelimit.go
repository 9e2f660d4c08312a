package auth

import (
	"strings"
	"sync"
	"time"
)

// maxBuckets bounds the memory of a limiter; when it is exceeded, the
// buckets that are full again (idle keys) are dropped.
const maxBuckets = 10000

// Defaults of PasswordLimits: per account a burst of 5 password checks,
// then one every 30 s; per source address a burst of 20, then one every 3 s.
const (
	DefaultAccountBurst = 5
	DefaultAccountEvery = 30 * time.Second
	DefaultAddressBurst = 20
	DefaultAddressEvery = 3 * time.Second
)

// PasswordLimits bounds how often passwords may be checked. Zero fields
// take the defaults above.
type PasswordLimits struct {
	AccountBurst int
	AccountEvery time.Duration
	AddressBurst int
	AddressEvery time.Duration
}

// PasswordLimiter rate limits password checks per account and per source
// address, wherever a password is checked (the login page, a password
// change through the API), so that guesses through one path count
// against the other. Its buckets live in this process's memory. It is
// safe for concurrent use.
type PasswordLimiter struct {
	accounts, addresses *limiter
}

// NewPasswordLimiter returns a PasswordLimiter with the given limits.
func NewPasswordLimiter(l PasswordLimits) *PasswordLimiter {
	if l.AccountBurst <= 0 {
		l.AccountBurst = DefaultAccountBurst
	}
	if l.AccountEvery <= 0 {
		l.AccountEvery = DefaultAccountEvery
	}
	if l.AddressBurst <= 0 {
		l.AddressBurst = DefaultAddressBurst
	}
	if l.AddressEvery <= 0 {
		l.AddressEvery = DefaultAddressEvery
	}
	return &PasswordLimiter{accounts: newLimiter(l.AccountBurst, l.AccountEvery), addresses: newLimiter(l.AddressBurst, l.AddressEvery)}
}

// Take counts one password check of account (a user name, compared
// case-insensitively) from source (an IP address) at now, before the
// password is checked. If a limit is reached it reports false, how long
// until the next attempt is allowed, and which limit it was ("source
// address" or "account"); a refused attempt is not counted against the
// account.
func (l *PasswordLimiter) Take(account, source string, now time.Time) (ok bool, retryAfter time.Duration, limit string) {
	if ok, wait := l.addresses.take("addr:"+source, now); !ok {
		return false, wait, "source address"
	}
	if ok, wait := l.accounts.take("user:"+strings.ToLower(account), now); !ok {
		return false, wait, "account"
	}
	return true, 0, ""
}

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

// AddressLimiter rate limits one kind of request per source address (an
// IP), such as the exchanges of CI ID tokens for Trove tokens, which
// need no credentials of Trove's. Its buckets live in this process's
// memory, as PasswordLimiter's. It is safe for concurrent use.
type AddressLimiter struct {
	addresses *limiter
}

// NewAddressLimiter allows each source address a burst of burst
// requests, then one every every.
func NewAddressLimiter(burst int, every time.Duration) *AddressLimiter {
	return &AddressLimiter{addresses: newLimiter(burst, every)}
}

// Take counts one request of source at now. If the limit is reached it
// reports false and how long until the next request is allowed.
func (l *AddressLimiter) Take(source string, now time.Time) (ok bool, retryAfter time.Duration) {
	return l.addresses.take(source, now)
}
