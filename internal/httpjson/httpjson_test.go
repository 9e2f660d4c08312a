package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// driverText stands for what a database driver or SDK puts into its
// errors: hosts, users, queries. It must reach the log, never an answer.
const driverText = `failed to connect to host=10.0.0.5 user=trove database=trove: dial tcp 10.0.0.5:5432: connect: connection refused (SQLSTATE 08001)`

// TestWriteErrorHidesDriverText answers errors that wrap a driver's error
// and checks that the JSON answer carries the kind's or the error's own
// message while the log carries the driver's text.
func TestWriteErrorHidesDriverText(t *testing.T) {
	driver := errors.New(driverText)
	for name, tc := range map[string]struct {
		err    error
		status int
		answer string
	}{
		"internal": {
			err:    fmt.Errorf("listing versions: %w", driver),
			status: http.StatusInternalServerError, answer: "internal error",
		},
		"internal wrapped": {
			err:    registry.Wrap(registry.Internal, driver, "listing versions"),
			status: http.StatusInternalServerError, answer: "internal error",
		},
		"unavailable": {
			err:    registry.Wrap(registry.Unavailable, driver, "listing versions: PostgreSQL is not reachable"),
			status: http.StatusServiceUnavailable, answer: "service temporarily unavailable: listing versions: PostgreSQL is not reachable",
		},
		"conflict": {
			err:    registry.Wrap(registry.Conflict, fmt.Errorf("constraint failed: UNIQUE constraint failed: namespaces.name (2067): %w", driver), "creating namespace acme: it exists already"),
			status: http.StatusConflict, answer: "creating namespace acme: it exists already",
		},
		"conflict without message": {
			err:    registry.Wrap(registry.Conflict, driver, ""),
			status: http.StatusConflict, answer: "conflict",
		},
		"nested": {
			err:    registry.Wrap(registry.Unavailable, fmt.Errorf("in between %s: %w", driverText, registry.Wrap(registry.Unavailable, driver, "the index is closed")), "publishing"),
			status: http.StatusServiceUnavailable, answer: "service temporarily unavailable: publishing: the index is closed",
		},
	} {
		t.Run(name, func(t *testing.T) {
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			w := httptest.NewRecorder()
			WriteError(log, w, httptest.NewRequest("GET", "/api/v1/namespaces", nil), tc.err)
			if w.Code != tc.status {
				t.Errorf("status %d, want %d", w.Code, tc.status)
			}
			var body ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("answer %q: %v", w.Body, err)
			}
			if len(body.Errors) != 1 || body.Errors[0] != tc.answer {
				t.Errorf("answer %q, want %q", body.Errors, tc.answer)
			}
			if strings.Contains(w.Body.String(), "10.0.0.5") {
				t.Errorf("the answer carries the driver's text: %s", w.Body)
			}
			if !strings.Contains(logged.String(), "10.0.0.5:5432") {
				t.Errorf("the log lacks the cause: %q", logged.String())
			}
		})
	}
}

// TestWriteErrorKeepsRegistryMessages checks that errors without a
// foreign cause are answered as before and not logged.
func TestWriteErrorKeepsRegistryMessages(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	w := httptest.NewRecorder()
	err := registry.Wrap(registry.Invalid, registry.Errorf(registry.Invalid, "invalid version %q", "x"), "publishing acme/foo")
	WriteError(log, w, httptest.NewRequest("POST", "/api/v1/x", nil), err)
	if want := `{"errors":["publishing acme/foo: invalid version \"x\""]}`; w.Code != http.StatusBadRequest || w.Body.String() != want {
		t.Errorf("answer %d %s, want 400 %s", w.Code, w.Body, want)
	}
	if logged.Len() != 0 {
		t.Errorf("logged %q", logged.String())
	}
}
