package httpjson

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// ServeRange prepares r for http.ServeContent, which knows only the
// "bytes" range unit, spelled in lower case, and answers 416 to any other
// Range: a unit spelled in another case ("Bytes=0-9"; units compare
// without regard to case, RFC 9110 section 14.1) is spelled "bytes", and
// a Range of a unit Trove does not serve is dropped, so that the whole
// file is answered, as RFC 9110 section 14.2 asks of a server that does
// not understand the unit.
func ServeRange(r *http.Request) {
	rh := r.Header["Range"]
	if len(rh) == 0 {
		return
	}
	unit, spec, ok := strings.Cut(rh[0], "=")
	switch {
	case ok && unit == "bytes":
	case ok && strings.EqualFold(strings.TrimSpace(unit), "bytes"):
		r.Header["Range"] = []string{"bytes=" + spec}
	default:
		delete(r.Header, "Range")
	}
}

// FileRangeRefusal is the body of a 416 of the API's files (the signed
// downloads, a provider's documentation archive), for RangeRefusal.
var FileRangeRefusal, _ = json.Marshal(ErrorBody{Errors: []string{
	"the requested range is malformed or lies outside the file (see Content-Range for its size): request a range of bytes within it, or the whole file"}})

// RangeRefusal is the ResponseWriter to hand http.ServeContent: it turns
// the one error ServeContent answers itself for a readable file, 416 for
// a range it cannot serve (malformed, or outside the file), into Body,
// a JSON error document of the caller's API, in place of ServeContent's
// text; the Content-Range header ServeContent sets ("bytes */<size>")
// stays. ReadFrom and Unwrap are forwarded, so that a download keeps
// using sendfile and http.ResponseController reaches the connection.
type RangeRefusal struct {
	http.ResponseWriter
	Body    []byte
	swallow bool // ServeContent's text body of the 416 is dropped
}

// WriteHeader writes Body in place of a 416's text.
func (w *RangeRefusal) WriteHeader(code int) {
	if code != http.StatusRequestedRangeNotSatisfiable {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	w.Header().Del("Content-Length")
	WriteRaw(w.ResponseWriter, code, w.Body)
}

func (w *RangeRefusal) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// ReadFrom forwards to the underlying writer's ReadFrom (sendfile).
func (w *RangeRefusal) ReadFrom(src io.Reader) (int64, error) {
	if w.swallow {
		return io.Copy(io.Discard, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(w.ResponseWriter, src)
}

// Unwrap returns the underlying ResponseWriter (for http.ResponseController).
func (w *RangeRefusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }
