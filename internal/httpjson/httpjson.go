// Package httpjson owns how Trove's HTTP handlers answer: JSON bodies, the
// {"errors": [...]} error body, and the one table that maps error kinds to
// status codes. Handlers return an error instead of writing one.
package httpjson

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"trove.dev/trove/internal/registry"
)

// HandlerFunc is an HTTP handler that reports failure by returning an error.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler adapts h: a returned error is logged (internal ones with detail)
// and written as a JSON error body with the status of its kind.
func Handler(log *slog.Logger, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			WriteError(log, w, r, err)
		}
	})
}

// Status maps an error kind to its HTTP status code.
func Status(kind registry.Kind) int {
	switch kind {
	case registry.Invalid:
		return http.StatusBadRequest
	case registry.NotFound:
		return http.StatusNotFound
	case registry.Conflict:
		return http.StatusConflict
	case registry.Unauthenticated:
		return http.StatusUnauthorized
	case registry.Forbidden:
		return http.StatusForbidden
	case registry.TooLarge:
		return http.StatusRequestEntityTooLarge
	case registry.Unavailable:
		return http.StatusServiceUnavailable
	case registry.UpstreamInvalid:
		// The gateway got an invalid answer from upstream: not "try again
		// later" (no Retry-After), the refusal stands until it changes.
		return http.StatusBadGateway
	default:
		return http.StatusInternalServerError
	}
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Errors []string `json:"errors"`
}

// WriteError writes err as {"errors": [registry.Message(err)]} with the
// status of its kind. Internal and unavailable errors are logged with
// their whole chain, others when the answer leaves out a cause; internal
// errors are answered generically.
func WriteError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	kind := registry.KindOf(err)
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		kind = registry.TooLarge
		err = registry.Errorf(registry.TooLarge, "request body exceeds the limit of %d bytes", maxErr.Limit)
	}
	status := Status(kind)
	// The answer carries registry.Message, never a cause's own text (a
	// driver's or an SDK's may name hosts, queries or files): the log has
	// the whole chain.
	switch {
	case kind == registry.Internal || kind == registry.Unavailable || kind == registry.UpstreamInvalid:
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	case registry.HidesCause(err):
		log.InfoContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if kind == registry.Unauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="trove"`)
	}
	if kind == registry.Unavailable {
		w.Header().Set("Retry-After", "1")
	}
	msg := registry.Message(err)
	if kind == registry.Unavailable {
		msg = "service temporarily unavailable: " + msg
	}
	Write(w, status, ErrorBody{Errors: []string{msg}})
}

// Write writes v as a JSON body with the given status.
func Write(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	WriteRaw(w, status, body)
	return nil
}

// WriteRaw writes an already encoded JSON body.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Validator is a request document that checks its own fields (the
// requests of apispec check their limits).
type Validator interface {
	Validate() error
}

// Decode reads a JSON request body of at most limit bytes into v,
// rejecting unknown fields and trailing data. A v that is a Validator is
// validated before Decode returns, so that no handler acts on a document
// whose fields break their limits.
func Decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return registry.Errorf(registry.TooLarge, "request body exceeds the limit of %d bytes", maxErr.Limit)
		}
		return registry.Errorf(registry.Invalid, "invalid JSON request body: %s", err)
	}
	if dec.More() {
		return registry.Errorf(registry.Invalid, "invalid JSON request body: unexpected data after the object")
	}
	if val, ok := v.(Validator); ok {
		return val.Validate()
	}
	return nil
}
