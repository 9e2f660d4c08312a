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
)

var kindNames = map[Kind]string{
	Internal: "internal", Invalid: "invalid", NotFound: "not found", Conflict: "conflict",
	Unauthenticated: "unauthenticated", Forbidden: "forbidden", TooLarge: "too large", Unavailable: "unavailable",
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

// Message returns the user-facing text of err: its message for classified
// errors, and a generic text for internal ones.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Error()
	}
	return "internal error"
}
