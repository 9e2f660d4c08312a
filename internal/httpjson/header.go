package httpjson

import "net/http"

// HeaderName is the name of a response header that net/http's list of
// common header names lacks (X-Terraform-Get, Docker-Content-Digest).
// net/http's HTTP/2 server lower-cases such a name into a new string on
// every answer; keyed by Key, the header is already as it goes on the
// wire. Every write of the header goes through Key, so an answer never
// holds it under both names. Clients see the same header either way.
type HeaderName struct {
	Canonical string // as net/http's Header.Set keys it
	Wire      string // in lower case, as HTTP/2 sends it
}

// Key returns the header map key of n in the answer to r: the canonical
// name over HTTP/1, the wire name over HTTP/2.
func (n HeaderName) Key(r *http.Request) string { return n.KeyOn(r.ProtoMajor == 2) }

// KeyOn returns the header map key of n in an answer over HTTP/2 (h2) or
// HTTP/1, for a writer that no longer holds its request.
func (n HeaderName) KeyOn(h2 bool) string {
	if h2 {
		return n.Wire
	}
	return n.Canonical
}
