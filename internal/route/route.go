// Package route owns what the services register their HTTP routes on:
// Registrar, which *http.ServeMux satisfies, and Recorder, which
// registers on a mux and keeps every pattern so that the server's
// pre-router can prove no other route shadows one of its own; and
// Allowed, the methods a path has a route for, with which a catch-all
// answers 405 instead of 404; and Direct, a route a service offers to
// that pre-router, served without the mux.
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

// methods are the methods Allowed tries: every one a Trove route takes.
var methods = []string{http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodPatch, http.MethodPost, http.MethodPut}

// Allowed returns the methods, sorted as an Allow header lists them, for
// which mux routes the path of r to a pattern other than the catch-alls
// named in fallbacks. A catch-all (a pattern that takes every method,
// such as "/") hides the 405 ServeMux would answer a path registered only
// for other methods: it calls Allowed, and answers 405 with these methods
// in Allow when there are any, 404 when there are none.
func Allowed(mux *http.ServeMux, r *http.Request, fallbacks ...string) []string {
	var allow []string
	try := *r // shallow: Handler reads only the method, host and path
	for _, m := range methods {
		if m == r.Method {
			continue
		}
		try.Method = m
		if _, pattern := mux.Handler(&try); pattern != "" && !slices.Contains(fallbacks, pattern) {
			allow = append(allow, m)
		}
	}
	return allow
}

// Values are the wildcard values of a request's path in the order of its
// pattern's wildcards, as a pre-router hands them to a Direct route
// ("" for those the pattern does not have). Passed by value: an array
// behind a pointer would escape to the heap through the indirect call.
type Values [8]string

// Direct is a GET route that a pre-router in front of the mux may serve
// itself, for the requests it proves the mux routes to Pattern with the
// same values (the server's pre-router, internal/server/fastroute.go).
// The service registers Pattern on the mux too, with a handler that
// reads the request's PathValues and does what Serve does.
type Direct struct {
	// Pattern is the pattern exactly as registered on the mux.
	Pattern string
	// Serve answers a request of Pattern whose wildcards hold v.
	Serve func(w http.ResponseWriter, r *http.Request, v Values)
}
