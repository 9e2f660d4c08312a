package server_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/internal/trovetest"
)

// rawGet sends "method target HTTP/1.1" over a fresh TLS connection, the
// target exactly as given (Go's client would clean or re-encode it), and
// returns the answer and its body.
func rawGet(t *testing.T, s *trovetest.Server, method, target string) (*http.Response, []byte) {
	t.Helper()
	conn, err := tls.Dial("tcp", s.Host, s.TLSConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
		method, target, s.Host, s.AdminToken); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// jsonErrors returns the messages of a JSON error answer, failing the test
// for any other answer.
func jsonErrors(t *testing.T, resp *http.Response, body []byte) []string {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("Content-Type %q, want application/json; body %q", resp.Header.Get("Content-Type"), body)
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		t.Fatalf("Location %q: a redirect", loc)
	}
	var doc struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Errors) == 0 || doc.Errors[0] == "" {
		t.Fatalf("not a JSON error body: %q", body)
	}
	return doc.Errors
}

// hostileVariants returns non-canonical forms of the canonical path p
// (at least two segments): dot segments, empty segments and encoded
// dots, slashes and backslashes, plain and percent-encoded.
func hostileVariants(p string) []string {
	i := strings.IndexByte(p[1:], '/') + 1 // end of the first segment
	head, tail := p[:i], p[i:]             // "/api", "/v1/namespaces"
	return []string{
		head + "/x/.." + tail,          // a ".." segment that cancels out
		head + "/." + tail,             // a "." segment
		head + "/.." + head + tail,     // climbs out and back in
		p + "/..",                      // trailing ".."
		p + "/.",                       // trailing "."
		"/" + p,                        // leading empty segment
		head + "/" + tail,              // empty segment in the middle
		p + "//",                       // empty segment at the end
		head + "/%2e%2e" + head + tail, // encoded ".."
		head + "/%2E" + tail,           // encoded "." (upper case)
		head + "/x/%2e%2E" + tail,      // encoded ".." that cancels out
		head + "%2f" + tail[1:],        // encoded "/"
		head + "%2F" + tail[1:],        // encoded "/" (upper case)
		head + "%5c" + tail[1:],        // encoded "\"
		head + "%5C" + tail[1:],        // encoded "\" as Go encodes it
		head + "/a%00b" + tail,         // an encoded NUL
		head + "/a%0Ab" + tail,         // an encoded line feed
		head + "\\" + tail[1:],         // a backslash
		head + "/%2e%2e%2f" + tail[1:], // encoded "../"
	}
}

// TestNonCanonicalPaths sends hostile paths to every route family and
// expects the JSON error every route answers with, never a redirect nor
// the answer of another route.
func TestNonCanonicalPaths(t *testing.T) {
	s := trovetest.Start(t)
	const digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	families := []string{
		"/.well-known/terraform.json",
		"/v1/providers/acme/widget/versions",
		"/v1/providers/acme/widget/1.0.0/download/linux/amd64",
		"/v1/modules/acme/net/aws/versions",
		"/v1/modules/acme/net/aws/1.0.0/download",
		"/v1/modules/search",
		"/v1/files/" + digest + "/terraform-provider-widget_1.0.0_SHA256SUMS",
		"/api/v1/namespaces",
		"/api/v1/namespaces/acme/tokens",
		"/api/v1/tokens",
		"/api/v1/whoami",
		"/oauth/authorize",
		"/oauth/token",
		"/healthz/x",
		"/readyz/x",
		"/metrics/x",
		"/no/such/route",
	}
	for _, family := range families {
		for _, target := range hostileVariants(family) {
			for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete} {
				t.Run(method+" "+target, func(t *testing.T) {
					resp, body := rawGet(t, s, method, target)
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("status %d, want 400; Location %q; body %q", resp.StatusCode, resp.Header.Get("Location"), body)
					}
					if method == http.MethodHead {
						if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" || resp.Header.Get("Location") != "" {
							t.Fatalf("HEAD: Content-Type %q, Location %q", resp.Header.Get("Content-Type"), resp.Header.Get("Location"))
						}
						return
					}
					msgs := jsonErrors(t, resp, body)
					if !strings.Contains(msgs[0], "not canonical") {
						t.Fatalf("message %q does not say why", msgs[0])
					}
				})
			}
		}
	}
}

// TestCanonicalPathsKeepWorking checks the paths clients send, trailing
// slashes included, and the one place ServeMux would redirect a canonical
// path (a subtree's root without its slash).
func TestCanonicalPathsKeepWorking(t *testing.T) {
	s := trovetest.Start(t)
	tests := []struct {
		target string
		status int
	}{
		{"/.well-known/terraform.json", http.StatusOK},
		{"/healthz", http.StatusOK},
		{"/api/v1/namespaces", http.StatusOK},
		{"/api/v1/namespaces/", http.StatusNotFound},
		{"/api/v1/", http.StatusNotFound},
		{"/api/v1", http.StatusNotFound},        // ServeMux would redirect to /api/v1/
		{"/v1/providers/", http.StatusNotFound}, // the base URL itself serves nothing
		{"/v1/modules/", http.StatusNotFound},
		{"/v1/modules", http.StatusOK},
		{"/v1/providers/acme/widget/versions", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			resp, body := rawGet(t, s, http.MethodGet, tt.target)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tt.status, body)
			}
			if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && tt.target != "/metrics" {
				t.Fatalf("Content-Type %q, want application/json", resp.Header.Get("Content-Type"))
			}
			if resp.StatusCode >= 400 {
				if msgs := jsonErrors(t, resp, body); strings.Contains(msgs[0], "not canonical") {
					t.Fatalf("a canonical path refused: %q", msgs[0])
				}
			}
		})
	}
}

// TestTraversalDoesNotReachAnotherEndpoint is the probe's finding: the
// redirect of /api/v1/namespaces/../tokens led to the token listing.
func TestTraversalDoesNotReachAnotherEndpoint(t *testing.T) {
	s := trovetest.Start(t)
	for _, target := range []string{"/api/v1/namespaces/../tokens", "/api/v1/namespaces/%2e%2e/tokens", "/api/v1/namespaces%2f..%2ftokens"} {
		resp, body := rawGet(t, s, http.MethodGet, target)
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), `"tokens"`) {
			t.Fatalf("GET %s: status %d, body %q", target, resp.StatusCode, body)
		}
		jsonErrors(t, resp, body)
	}
}
