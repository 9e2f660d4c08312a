package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

// TestIsInvalid: input errors are recognised without internal types,
// whether the server or the client refused the request.
func TestIsInvalid(t *testing.T) {
	c, err := client.New("https://trove.test", "")
	if err != nil {
		t.Fatal(err)
	}
	// Refused before sending: a description over its limit.
	_, local := c.CreateNamespace(context.Background(), apispec.CreateNamespaceRequest{Name: "acme", Description: strings.Repeat("x", 100_000)})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"400", &client.Error{Status: http.StatusBadRequest}, true},
		{"wrapped 413", fmt.Errorf("upload: %w", &client.Error{Status: http.StatusRequestEntityTooLarge}), true},
		{"404", &client.Error{Status: http.StatusNotFound}, false},
		{"500", &client.Error{Status: http.StatusInternalServerError}, false},
		{"refused by the client", local, true},
		{"a network error", errors.New("connection refused"), false},
		{"nil", nil, false},
	} {
		if got := client.IsInvalid(tc.err); got != tc.want {
			t.Errorf("%s (%v): IsInvalid = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if local == nil || client.StatusCode(local) != 0 {
		t.Errorf("the client sent an invalid namespace name: %v", local)
	}
}
