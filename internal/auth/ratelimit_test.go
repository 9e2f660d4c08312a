package auth

import (
	"testing"
	"time"
)

func TestPasswordLimiter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := NewPasswordLimiter(PasswordLimits{AccountBurst: 2, AccountEvery: time.Minute, AddressBurst: 3, AddressEvery: time.Hour})
	for i, name := range []string{"alice", "ALICE"} { // accounts compare case-insensitively
		if ok, _, _ := l.Take(name, "192.0.2.1", now); !ok {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if ok, wait, limit := l.Take("Alice", "192.0.2.2", now); ok || limit != "account" || wait <= 0 || wait > time.Minute {
		t.Errorf("third attempt for alice = %v, %s, %q; want refused by the account limit", ok, wait, limit)
	}
	if ok, _, _ := l.Take("bob", "192.0.2.1", now); !ok {
		t.Error("bob refused; the address has one attempt left")
	}
	if ok, _, limit := l.Take("carol", "192.0.2.1", now); ok || limit != "source address" {
		t.Errorf("fourth attempt from the address = %v, %q; want refused by the address limit", ok, limit)
	}
	// A refusal by the address does not use up the account.
	if ok, _, _ := l.Take("carol", "192.0.2.3", now); !ok {
		t.Error("carol refused from another address")
	}
	if ok, _, _ := l.Take("alice", "192.0.2.4", now.Add(time.Minute)); !ok {
		t.Error("alice refused after the refill interval")
	}
}

func TestAddressLimiter(t *testing.T) {
	l := NewAddressLimiter(2, time.Second)
	now := time.Unix(1000, 0)
	for i := range 2 {
		if ok, _ := l.Take("192.0.2.1", now); !ok {
			t.Fatalf("request %d refused within the burst", i+1)
		}
	}
	if ok, wait := l.Take("192.0.2.1", now); ok || wait != time.Second {
		t.Errorf("third request = %v, %v; want refused for 1s", ok, wait)
	}
	if ok, _ := l.Take("192.0.2.2", now); !ok {
		t.Error("another address was refused")
	}
	if ok, _ := l.Take("192.0.2.1", now.Add(time.Second)); !ok {
		t.Error("refused after the bucket refilled")
	}
}
