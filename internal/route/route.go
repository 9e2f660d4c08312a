// Package route owns what the services register their HTTP routes on:
// Registrar, which *http.ServeMux satisfies, and Recorder, which
// registers on a mux and keeps every pattern so that the server's
// pre-router can prove no other route shadows one of its own.
package route

import (
	"net/http"
	"slices"
)

// Registrar is where a service's Register adds its routes.
type Registrar interface {
	Handle(pattern string, handler http.Handler)
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Recorder registers routes on Mux and keeps their patterns in order.
type Recorder struct {
	Mux      *http.ServeMux
	patterns []string
}

// Handle registers handler for pattern on the mux and records pattern.
func (r *Recorder) Handle(pattern string, handler http.Handler) {
	r.Mux.Handle(pattern, handler)
	r.patterns = append(r.patterns, pattern)
}

// HandleFunc registers handler for pattern on the mux and records pattern.
func (r *Recorder) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	r.Mux.HandleFunc(pattern, handler)
	r.patterns = append(r.patterns, pattern)
}

// Patterns returns every pattern registered so far, in order.
func (r *Recorder) Patterns() []string { return slices.Clone(r.patterns) }
