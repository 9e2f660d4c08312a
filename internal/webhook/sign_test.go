package webhook

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	secret, body := "0123456789abcdef", []byte(`{"id":"ev_1"}`)
	now := time.Unix(1_700_000_000, 0)
	h := Sign(secret, now, body)
	if !strings.HasPrefix(h, "t=1700000000,v1=") || len(h) != len("t=1700000000,v1=")+64 {
		t.Fatalf("Sign = %q", h)
	}
	// The documented example: HMAC-SHA256 of "1700000000.{"id":"ev_1"}".
	if want := "t=1700000000,v1=" + mac(secret, "1700000000", body); h != want {
		t.Errorf("Sign = %q, want %q", h, want)
	}
	tests := map[string]struct {
		secret, header string
		body           []byte
		now            time.Time
		want           error
	}{
		"valid":               {secret, h, body, now.Add(time.Minute), nil},
		"valid, extra fields": {secret, "v0=x," + h + ",v1=00", body, now, nil},
		"wrong secret":        {"fedcba9876543210", h, body, now, ErrBadSignature},
		"changed body":        {secret, h, []byte(`{"id":"ev_2"}`), now, ErrBadSignature},
		"too old":             {secret, h, body, now.Add(6 * time.Minute), ErrStale},
		"from the future":     {secret, h, body, now.Add(-6 * time.Minute), ErrStale},
		"no timestamp":        {secret, "v1=" + mac(secret, "", body), body, now, ErrMalformed},
		"no signature":        {secret, "t=1700000000", body, now, ErrMalformed},
		"garbage":             {secret, "garbage", body, now, ErrMalformed},
		"timestamp changed":   {secret, strings.Replace(h, "t=1700000000", "t=1700000001", 1), body, now, ErrBadSignature},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if err := Verify(tt.secret, tt.header, tt.body, tt.now, 5*time.Minute); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: 30 * time.Second, Max: time.Hour, Attempts: 10}
	var prev time.Duration
	for n := 1; n < b.Attempts; n++ {
		low, _ := b.Delay(n, func() float64 { return 0 })
		mid, _ := b.Delay(n, func() float64 { return 0.5 })
		high, ok := b.Delay(n, func() float64 { return 0.999999 })
		if !ok {
			t.Fatalf("Delay(%d) gave up before %d attempts", n, b.Attempts)
		}
		if !(low < mid && mid < high) || low < mid*4/5 || high > mid*6/5 {
			t.Errorf("Delay(%d) jitter: %s, %s, %s; want within a fifth of %s", n, low, mid, high, mid)
		}
		if mid < prev || mid > b.Max {
			t.Errorf("Delay(%d) = %s after %s, want growing up to %s", n, mid, prev, b.Max)
		}
		if n <= 7 && mid != b.Base<<(n-1) {
			t.Errorf("Delay(%d) = %s, want %s", n, mid, b.Base<<(n-1))
		}
		prev = mid
	}
	if _, ok := b.Delay(b.Attempts, nil); ok {
		t.Errorf("Delay(%d) allowed an attempt beyond %d", b.Attempts, b.Attempts)
	}
	var total time.Duration
	for n := 1; n < DefaultBackoff.Attempts; n++ {
		d, _ := DefaultBackoff.Delay(n, func() float64 { return 0.5 })
		total += d
	}
	if total < 12*time.Hour || total > 24*time.Hour {
		t.Errorf("DefaultBackoff spans %s, want about a day at most", total)
	}
}
