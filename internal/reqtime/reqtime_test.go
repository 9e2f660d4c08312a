package reqtime

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

type carrier struct {
	http.ResponseWriter
	at time.Time
}

func (c carrier) RequestTime() time.Time { return c.at }

// TestOf: a carrying writer's time, else the clock's.
func TestOf(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 59, 59, 0, time.UTC)
	if got := Of(carrier{httptest.NewRecorder(), at}); !got.Equal(at) {
		t.Errorf("Of(carrier) = %v, want %v", got, at)
	}
	before := time.Now()
	if got := Of(httptest.NewRecorder()); got.Before(before) || got.After(time.Now()) {
		t.Errorf("Of(plain writer) = %v, not the current time", got)
	}
}

// TestClock: a set clock wins over the request's time, in At and Now;
// the zero Clock gives the request's time and the current time.
func TestClock(t *testing.T) {
	req := time.Date(2026, 11, 28, 23, 59, 59, 0, time.UTC)
	set := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	reads := 0
	c := ClockFrom(func() time.Time { reads++; return set })
	if !c.IsSet() {
		t.Error("ClockFrom(f).IsSet() = false")
	}
	if got := c.At(req); !got.Equal(set) {
		t.Errorf("set clock: At(%v) = %v, want the set clock's %v", req, got, set)
	}
	if got := c.Now(); !got.Equal(set) {
		t.Errorf("set clock: Now() = %v, want %v", got, set)
	}
	if reads != 2 {
		t.Errorf("the set clock was read %d times by At and Now, want 2", reads)
	}

	for name, c := range map[string]Clock{"zero": {}, "ClockFrom(nil)": ClockFrom(nil)} {
		if c.IsSet() {
			t.Errorf("%s Clock: IsSet() = true", name)
		}
		if got := c.At(req); !got.Equal(req) {
			t.Errorf("%s Clock: At(%v) = %v, want the request's time", name, req, got)
		}
		before := time.Now()
		if got := c.Now(); got.Before(before) || got.After(time.Now()) {
			t.Errorf("%s Clock: Now() = %v, not the current time", name, got)
		}
	}
}
