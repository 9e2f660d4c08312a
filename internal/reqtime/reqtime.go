// Package reqtime hands the time a request arrived down the handler
// chain. The server's middleware reads the clock once per request (it
// needs that reading for the request's duration anyway) and its
// ResponseWriter carries it, so that the handlers of a cached protocol
// answer (the access guard, download counting) do not read the clock
// again: each reading costs as much as a map lookup.
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
