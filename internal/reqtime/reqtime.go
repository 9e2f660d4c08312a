// Package reqtime hands the time a request arrived down the handler
// chain. The server's middleware reads the clock once per request (it
// needs that reading for the request's duration anyway) and its
// ResponseWriter carries it, so that the handlers of a cached protocol
// answer (the access guard, download counting) do not read the clock
// again: each reading costs as much as a map lookup. Clock is the one
// rule of the components judged at that time: a clock set for tests
// wins over the request's.
package reqtime

import (
	"net/http"
	"time"
)

// Carrier is implemented by a ResponseWriter that knows when its
// request arrived (internal/server's middleware writer).
type Carrier interface {
	// RequestTime returns when the request arrived.
	RequestTime() time.Time
}

// Of returns when w's request arrived if w carries it (Carrier), else
// the current time.
func Of(w http.ResponseWriter) time.Time {
	if c, ok := w.(Carrier); ok {
		return c.RequestTime()
	}
	return time.Now()
}

// Clock is the time a component judges a request by: the time the
// request arrived (handed to At, usually Of's), unless a clock was set
// for tests (ClockFrom), which then wins over the request's time. The
// zero Clock is the request's time, and time.Now where there is no
// request (Now). One Clock, not a function and a flag per component
// (auth.Authenticator, downloads.Counter, signedurl.Signer).
type Clock struct {
	set func() time.Time // nil: the request's time
}

// ClockFrom returns the Clock that reads the time from now (for tests),
// also where it is handed a request's time; nil gives the zero Clock.
func ClockFrom(now func() time.Time) Clock { return Clock{set: now} }

// At returns the time to judge a request that arrived at requestTime
// by: requestTime, unless the clock was set.
func (c Clock) At(requestTime time.Time) time.Time {
	if c.set != nil {
		return c.set()
	}
	return requestTime
}

// Now returns the current time: the set clock's, else time.Now.
func (c Clock) Now() time.Time {
	if c.set != nil {
		return c.set()
	}
	return time.Now()
}

// IsSet reports whether the clock was set (ClockFrom with a function).
func (c Clock) IsSet() bool { return c.set != nil }
