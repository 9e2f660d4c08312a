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
