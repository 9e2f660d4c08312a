package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestPlainHTTPToTheTLSPort: an http:// address of a server that speaks
// HTTPS is answered with what to use instead, and a certificate the
// client does not trust is recognised as such.
func TestPlainHTTPToTheTLSPort(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	c, err := client.New("http://"+host, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListNamespaces(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the server speaks HTTPS, not plain HTTP: use the address https://"+host) {
		t.Errorf("plain HTTP to the TLS port: %v, want the https:// address", err)
	}
	untrusting, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.ListNamespaces(context.Background()); !client.IsUntrustedCertificate(err) {
		t.Errorf("a self-signed certificate: %v, want IsUntrustedCertificate", err)
	}
	if client.IsUntrustedCertificate(errors.New("connection refused")) {
		t.Error("IsUntrustedCertificate of another error")
	}
}
