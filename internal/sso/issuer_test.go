package sso

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestCheckIssuer checks the configured issuer against discovery
// documents that name it, name it with or without a trailing slash, name
// another, or cannot be read.
func TestCheckIssuer(t *testing.T) {
	var doc string // the discovery document's body; "404" answers Not Found
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/realms/corp/.well-known/openid-configuration" || doc == "404" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	}))
	defer srv.Close()
	base := srv.URL + "/realms/corp"
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	for _, tc := range []struct {
		name, issuer, doc string
		wantErr           []string // substrings of an Invalid error's message
		wantWarn          string   // substring of the warning
	}{
		{name: "equal", issuer: base, doc: `{"issuer":"` + base + `"}`},
		{name: "equal with a trailing slash", issuer: base + "/", doc: `{"issuer":"` + base + `/"}`},
		{name: "configured with a slash the provider lacks", issuer: base + "/", doc: `{"issuer":"` + base + `"}`,
			wantErr: []string{`configured "` + base + `/"`, `names "` + base + `"`, "differ only by the trailing slash: drop it"}},
		{name: "configured without the provider's slash", issuer: base, doc: `{"issuer":"` + base + `/"}`,
			wantErr: []string{`configured "` + base + `"`, `names "` + base + `/"`, "differ only by the trailing slash: add it"}},
		{name: "other issuer", issuer: base, doc: `{"issuer":"https://evil.example/realms/corp"}`,
			wantErr: []string{`names "https://evil.example/realms/corp"`, "--issuer https://evil.example/realms/corp"}},
		{name: "other case", issuer: base, doc: `{"issuer":"` + strings.ToUpper(base) + `"}`, wantErr: []string{"upper and lower case"}},
		{name: "control characters", issuer: base, doc: `{"issuer":"x\u001b[31m"}`, wantErr: []string{`names "x?[31m"`}},
		{name: "no issuer", issuer: base, doc: `{"jwks_uri":"x"}`, wantWarn: "names no issuer"},
		{name: "not JSON", issuer: base, doc: `<html>`, wantWarn: "is not a JSON document"},
		{name: "not found", issuer: base, doc: "404", wantWarn: "was answered 404 Not Found"},
		{name: "unreachable", issuer: gone.URL, wantWarn: "could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc = tc.doc
			warn, err := CheckIssuer(context.Background(), srv.Client(), tc.issuer)
			switch {
			case tc.wantErr != nil:
				if !registry.IsKind(err, registry.Invalid) {
					t.Fatalf("CheckIssuer = %q, %v; want Invalid", warn, err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(registry.Message(err), s) {
						t.Errorf("message %q lacks %q", registry.Message(err), s)
					}
				}
			case err != nil:
				t.Fatalf("CheckIssuer: %v", err)
			case tc.wantWarn == "" && warn != "":
				t.Errorf("warning %q, want none", warn)
			case !strings.Contains(warn, tc.wantWarn):
				t.Errorf("warning %q lacks %q", warn, tc.wantWarn)
			}
		})
	}
}
