package registry

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the edges (HTTP status, CLI exit message).
type Kind int

// The error kinds. The zero value is Internal so that an unclassified error
// is never mistaken for a user error.
const (
	Internal        Kind = iota // a bug or an unexpected failure; details are logged, not shown
	Invalid                     // the input is malformed or breaks a publishing rule
	NotFound                    // the thing asked for does not exist
	Conflict                    // the request clashes with what is stored (e.g. an immutable version)
	Unauthenticated             // no valid credentials
	Forbidden                   // valid credentials without the needed right
	TooLarge                    // the input exceeds a configured limit
	Unavailable                 // a backend is unreachable; retry later
	// UpstreamInvalid: an upstream registry sent something that fails
	// Trove's checks (a signature that does not verify, a package that
	// does not match its signed checksum). Refused for good: retrying
	// does not help until the upstream changes what it sends.
	UpstreamInvalid
)

var kindNames = map[Kind]string{
	Internal: "internal", Invalid: "invalid", NotFound: "not found", Conflict: "conflict",
	Unauthenticated: "unauthenticated", Forbidden: "forbidden", TooLarge: "too large", Unavailable: "unavailable",
	UpstreamInvalid: "upstream invalid",
}

func (k Kind) String() string { return kindNames[k] }

// Error is an error with a kind and a message safe to show to the user.
type Error struct {
	Kind    Kind
	Message string
	Err     error // optional cause, never shown to API users for Internal errors
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of the given kind whose message is msg and whose cause is err.
func Wrap(kind Kind, err error, msg string) error {
	return &Error{Kind: kind, Message: msg, Err: err}
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// IsKind reports whether err is classified as kind.
func IsKind(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }

// kindMessages are the answers of errors whose own message is empty or
// must not be shown.
var kindMessages = map[Kind]string{
	Internal: "internal error", Invalid: "invalid request", NotFound: "not found", Conflict: "conflict",
	Unauthenticated: "authentication required", Forbidden: "forbidden", TooLarge: "request too large",
	Unavailable: "a backend is unavailable", UpstreamInvalid: "an upstream registry sent something that fails verification",
}

// Message returns the user-facing text of err: the message of its first
// *Error, followed by those of the *Errors that error wraps in turn, and
// a generic text for internal errors. The text of a cause that is not an
// *Error (a database driver's, an SDK's, an operating system's) is never
// part of it: it may name hosts, queries or paths, so the edges log it
// (Error returns the whole chain) and answer with this. Code that wants a
// cause's text shown puts it into the message (Errorf).
func Message(err error) string {
	var e *Error
	if !errors.As(err, &e) || e.Kind == Internal {
		return kindMessages[Internal]
	}
	msg := e.Message
	for inner := e; ; {
		var next *Error
		if inner.Err == nil || !errors.As(inner.Err, &next) {
			break
		}
		if next.Message != "" {
			if msg != "" {
				msg += ": "
			}
			msg += next.Message
		}
		inner = next
	}
	if msg == "" {
		return kindMessages[e.Kind]
	}
	return msg
}

// HidesCause reports whether Message(err) leaves out text of err's chain
// (a cause that is not an *Error): then the edges should log err.
func HidesCause(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return true
	}
	for {
		if e.Err == nil {
			return false
		}
		var next *Error
		if !errors.As(e.Err, &next) || next != e.Err {
			return true
		}
		e = next
	}
}
