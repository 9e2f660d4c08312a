// Package httpjson owns how Trove's HTTP handlers answer: JSON bodies, the
// {"errors": [...]} error body, and the one table that maps error kinds to
// status codes. Handlers return an error instead of writing one.
package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode"

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

// MethodNotAllowed answers 405 with the methods the path takes in the
// Allow header (RFC 9110) and a JSON error body naming them.
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allow []string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	msg := "method " + registry.Elide(r.Method) + " is not allowed here: use " + strings.Join(allow, ", ")
	_ = Write(w, http.StatusMethodNotAllowed, ErrorBody{Errors: []string{msg}})
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

// Body returns the body of r limited to limit bytes (a read beyond it
// fails with *http.MaxBytesError, which WriteError answers with 413), or
// a TooLarge error before anything is read when the request declares a
// longer body in its Content-Length: a client is told at once, not after
// it sent the limit's worth.
func Body(w http.ResponseWriter, r *http.Request, limit int64) (io.ReadCloser, error) {
	if r.ContentLength > limit {
		return nil, registry.Errorf(registry.TooLarge, "request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	return http.MaxBytesReader(w, r.Body, limit), nil
}

// Validator is a request document that checks its own fields (the
// requests of apispec check their limits).
type Validator interface {
	Validate() error
}

// Decode reads a JSON request body of at most limit bytes into v,
// rejecting unknown fields, trailing data, and an object that names a
// member twice (encoding/json would keep the last, matching names without
// regard to case: {"name":"a","NAME":"b"} would be "b", where another
// reader of the same body may take "a"). A v that is a Validator is
// validated before Decode returns, so that no handler acts on a document
// whose fields break their limits.
func Decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := Body(w, r, limit)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			return registry.Errorf(registry.TooLarge, "request body exceeds the limit of %d bytes", maxErr.Limit)
		}
		return registry.Errorf(registry.Invalid, "invalid JSON request body: %s", err)
	}
	return Unmarshal(data, v, "JSON request body")
}

// Unmarshal decodes the JSON document data into v by Decode's rules: no
// unknown field, no trailing data, no member named twice, and v's own
// validation if it is a Validator. A refusal names the document as what
// ("invalid <what>: ...").
func Unmarshal(data []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return registry.Errorf(registry.Invalid, "invalid %s: %s", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return registry.Errorf(registry.Invalid, "invalid %s: unexpected data after the object", what)
	}
	if name, ok := repeatedMember(data, reflect.TypeOf(v)); ok {
		return registry.Errorf(registry.Invalid, "invalid %s: an object names the member %q more than once", what, registry.Elide(name))
	}
	if val, ok := v.(Validator); ok {
		return val.Validate()
	}
	return nil
}

// repeatedMember returns a member name that an object of the valid JSON
// document data gives twice where decoding it into a value of type t
// would keep only one of them: in an object that decodes into a struct,
// names compared as encoding/json matches them to fields (Unicode case
// folding, {"name":"a","NAME":"b"} is "b", where another reader of the
// same body may take "a"); in any other object (a map, a value of
// interface type), names compared exactly, since "Name" and "name" are
// two keys there. A json.RawMessage is not looked into: whoever reads it
// judges it (a module's metadata holds the defaults of its variables,
// whose map keys may differ only in case).
func repeatedMember(data []byte, t reflect.Type) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	name, err := walkMembers(dec, t)
	return name, err == nil && name != ""
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// walkMembers reads one JSON value from dec, which decodes into a value
// of type t (nil: unknown, as interface{}), and returns the first member
// name an object in it repeats (repeatedMember), or "".
func walkMembers(dec *json.Decoder, t reflect.Type) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return "", nil // a scalar
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		return "", skipComposite(dec)
	}
	if delim == '[' {
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if name, err := walkMembers(dec, elem); name != "" || err != nil {
				return name, err
			}
		}
		_, err := dec.Token() // ']'
		return "", err
	}
	var fields map[string]reflect.Type // a struct's, by folded name
	var elem reflect.Type              // a map's values
	switch {
	case t != nil && t.Kind() == reflect.Struct:
		fields = structFields(t)
	case t != nil && t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		name, _ := tok.(string)
		key, next := name, elem
		if fields != nil {
			key = foldName(name)
			next = fields[key]
		}
		if seen[key] {
			return name, nil
		}
		seen[key] = true
		if found, err := walkMembers(dec, next); found != "" || err != nil {
			return found, err
		}
	}
	_, err = dec.Token() // '}'
	return "", err
}

// skipComposite reads the rest of an array or object whose opening
// delimiter dec has just returned.
func skipComposite(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '[' || d == '{' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

var fieldsOf sync.Map // reflect.Type -> map[string]reflect.Type

// structFields returns the types of the fields a JSON object decoding
// into struct type t may name, by their folded JSON names (fields of
// embedded structs included, as encoding/json promotes them).
func structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldsOf.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
			for name, typ := range structFields(ft) {
				if _, own := fields[name]; !own {
					fields[name] = typ
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		fields[foldName(tag)] = f.Type
	}
	fieldsOf.Store(t, fields)
	return fields
}

// foldName maps every rune of s to the smallest rune of its Unicode
// case-folding orbit, so that two names are equal under
// strings.EqualFold exactly when their foldName are equal.
func foldName(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
