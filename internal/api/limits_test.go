package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

// limitCase is one field of a request with its limit: value(n) is a value
// of n bytes that is valid but for its length, request builds the request
// carrying it.
type limitCase struct {
	name    string
	limit   registry.Limit
	value   func(n int) string
	request func(v string) (method, path, body string)
	// atLimit is the status of the request at the limit (0: any answer
	// but a refusal of the length).
	atLimit int
}

func repeat(c string) func(int) string {
	return func(n int) string { return strings.Repeat(c, n) }
}

func version(n int) string { return "1.0.0-" + strings.Repeat("a", n-len("1.0.0-")) }

func quoted(v string) string { b, _ := json.Marshal(v); return string(b) }

// limitCases are every field the API takes from a request, each with the
// limit internal/registry defines for it.
func limitCases() []limitCase {
	get := func(path string) func(string) (string, string, string) {
		return func(v string) (string, string, string) { return http.MethodGet, strings.ReplaceAll(path, "X", v), "" }
	}
	body := func(method, path, doc string) func(string) (string, string, string) {
		return func(v string) (string, string, string) { return method, path, strings.ReplaceAll(doc, "X", quoted(v)) }
	}
	var unique int
	fresh := func(prefix string) string { unique++; return prefix + strconv.Itoa(unique) }
	return []limitCase{
		{"namespace name (create)", registry.NamespaceLimit, repeat("a"), body("POST", "/api/v1/namespaces", `{"name": X}`), http.StatusCreated},
		{"namespace name (path)", registry.NamespaceLimit, repeat("b"), get("/api/v1/namespaces/X"), http.StatusNotFound},
		{"namespace name (path of keys)", registry.NamespaceLimit, repeat("b"), get("/api/v1/namespaces/X/keys"), http.StatusNotFound},
		{"namespace description (create)", registry.DescriptionLimit, repeat("d"), func(v string) (string, string, string) {
			return "POST", "/api/v1/namespaces", fmt.Sprintf(`{"name": %q, "description": %s}`, fresh("described"), quoted(v))
		}, http.StatusCreated},
		{"namespace description (update)", registry.DescriptionLimit, repeat("d"), body("PATCH", "/api/v1/namespaces/acme", `{"description": X}`), http.StatusOK},
		{"token namespaces", registry.NamespaceLimit, repeat("n"), body("POST", "/api/v1/tokens", `{"namespaces": [X], "scopes": ["read"]}`), http.StatusNotFound},
		{"token namespace", registry.NamespaceLimit, repeat("n"), body("POST", "/api/v1/tokens", `{"namespace": X, "scopes": ["read"]}`), http.StatusNotFound},
		{"token user", registry.UserNameLimit, repeat("u"), body("POST", "/api/v1/tokens", `{"user": X, "scopes": ["read"], "namespaces": ["acme"]}`), http.StatusNotFound},
		{"token description", registry.DescriptionLimit, repeat("t"), body("POST", "/api/v1/tokens", `{"description": X, "scopes": ["read"], "namespaces": ["acme"]}`), http.StatusCreated},
		{"token ID (path)", registry.TokenIDLimit, repeat("i"), get("/api/v1/tokens/X"), http.StatusNotFound},
		{"token list namespace (query)", registry.NamespaceLimit, repeat("n"), get("/api/v1/tokens?namespace=X"), 0},
		{"token list user (query)", registry.UserNameLimit, repeat("u"), get("/api/v1/tokens?user=X"), 0},
		{"key ID (path)", registry.KeyIDLimit, repeat("A"), get("/api/v1/namespaces/acme/keys/X"), http.StatusNotFound},
		{"user name (create)", registry.UserNameLimit, repeat("v"), body("POST", "/api/v1/users", `{"name": X}`), http.StatusCreated},
		{"user password (create)", registry.PasswordLimit, repeat("p"), func(v string) (string, string, string) {
			return "POST", "/api/v1/users", fmt.Sprintf(`{"name": %q, "password": %s}`, fresh("pw"), quoted(v))
		}, http.StatusCreated},
		{"user name (path)", registry.UserNameLimit, repeat("w"), get("/api/v1/users/X"), http.StatusNotFound},
		{"user password (update)", registry.PasswordLimit, repeat("p"), body("PATCH", "/api/v1/users/rita", `{"password": X}`), http.StatusOK},
		{"user current password (update)", registry.PasswordLimit, repeat("c"), body("PATCH", "/api/v1/users/rita", `{"password": "a new password", "current_password": X}`), http.StatusOK},
		{"member user (path)", registry.UserNameLimit, repeat("w"), func(v string) (string, string, string) {
			return http.MethodPut, "/api/v1/namespaces/acme/members/" + v, `{"role": "reader"}`
		}, http.StatusNotFound},
		{"provider type (path)", registry.ProviderTypeLimit, repeat("w"), get("/api/v1/namespaces/acme/providers/X"), http.StatusNotFound},
		{"provider version (path)", registry.VersionLimit, version, get("/api/v1/namespaces/acme/providers/widget/versions/X"), http.StatusNotFound},
		{"module name (path)", registry.ModuleNameLimit, repeat("m"), get("/api/v1/namespaces/acme/modules/X/aws"), http.StatusNotFound},
		{"module system (path)", registry.ModuleSystemLimit, repeat("s"), get("/api/v1/namespaces/acme/modules/net/X"), http.StatusNotFound},
		{"module version (path)", registry.VersionLimit, version, get("/api/v1/namespaces/acme/modules/net/aws/versions/X"), http.StatusNotFound},
		{"module search (query)", registry.SearchQueryLimit, repeat("q"), get("/api/v1/namespaces/acme/modules?q=X"), http.StatusOK},
		{"module system (query)", registry.ModuleSystemLimit, repeat("s"), get("/api/v1/namespaces/acme/modules?system=X"), http.StatusOK},
		{"module origin (query)", registry.OriginLimit, repeat("o"), func(v string) (string, string, string) {
			return http.MethodPost, "/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0?origin=" + v, ""
		}, 0},
		{"audit actor (query)", registry.AuditActorLimit, repeat("a"), get("/api/v1/audit?actor=X"), http.StatusOK},
		{"audit action (query)", registry.AuditActionLimit, repeat("a"), get("/api/v1/audit?action=X"), http.StatusOK},
		{"audit namespace (query)", registry.NamespaceLimit, repeat("n"), get("/api/v1/audit?namespace=X"), http.StatusOK},
		{"mirror upstream host (path)", registry.HostLimit, hostOf, get("/api/v1/mirror/upstreams/X"), 0},
		{"mirror upstream service URL", registry.ServiceURLLimit, urlOf, body("PUT", "/api/v1/mirror/upstreams/limits.example", `{"service_url": X}`), 0},
		{"mirror upstream CA certificates", registry.CACertificatesLimit, repeat("c"), body("PUT", "/api/v1/mirror/upstreams/limits.example", `{"ca_certificates": X}`), http.StatusBadRequest},
		{"mirror upstream description", registry.DescriptionLimit, repeat("d"), body("PUT", "/api/v1/mirror/upstreams/limits.example", `{"description": X}`), 0},
		{"mirror rule provider", registry.MirrorProviderLimit, ruleOf, body("PUT", "/api/v1/mirror/upstreams/limits.example", `{"allow": [{"provider": X}]}`), 0},
		{"mirror rule versions", registry.VersionConstraintLimit, constraintOf, body("PUT", "/api/v1/mirror/upstreams/limits.example", `{"allow": [{"provider": "*/*", "versions": X}]}`), 0},
	}
}

// hostOf returns a host name of n bytes: labels of at most 63 letters.
func hostOf(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 && b.Len()%64 == 0 {
			b.WriteByte('.')
			continue
		}
		b.WriteByte('h')
	}
	return b.String()
}

// urlOf returns an https URL of n bytes.
func urlOf(n int) string {
	const prefix = "https://mirror.example/"
	return prefix + strings.Repeat("p", n-len(prefix))
}

// ruleOf returns a valid mirror rule provider of n bytes (up to 129).
func ruleOf(n int) string {
	ns := min(n-2, registry.MaxNamespaceLength)
	return strings.Repeat("n", ns) + "/" + strings.Repeat("t", n-ns-1)
}

// constraintOf returns a version constraint of n bytes.
func constraintOf(n int) string { return ">= 1.0.0" + strings.Repeat(" ", n-len(">= 1.0.0")) }

// TestFieldLimits sends every field at its limit, which is accepted (or
// refused for another reason), and one byte over it, which is refused
// with 400 and a JSON message naming the field and the limit before
// anything is stored.
func TestFieldLimits(t *testing.T) {
	s := trovetest.Start(t)
	ctx := context.Background()
	if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Index.(store.Access).CreateUser(ctx, registry.User{Name: "rita", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	send := func(t *testing.T, method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode >= 400 && mt != "application/json" {
			t.Fatalf("%s %s: status %d with Content-Type %q", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var doc struct {
			Errors []string `json:"errors"`
		}
		_ = json.Unmarshal(data, &doc)
		return resp.StatusCode, strings.Join(doc.Errors, "; ")
	}
	for _, tc := range limitCases() {
		t.Run(tc.name, func(t *testing.T) {
			method, path, body := tc.request(tc.value(tc.limit.Max))
			status, msg := send(t, method, path, body)
			if strings.Contains(msg, "too long") || tc.atLimit != 0 && status != tc.atLimit {
				t.Fatalf("at the limit (%d bytes): status %d, %q; want %d", tc.limit.Max, status, msg, tc.atLimit)
			}
			over := tc.value(tc.limit.Max + 1)
			method, path, body = tc.request(over)
			status, msg = send(t, method, path, body)
			want := tc.limit.Check(over).Error()
			if status != http.StatusBadRequest || msg != want {
				t.Fatalf("over the limit: status %d, %q; want 400, %q", status, msg, want)
			}
			if !strings.Contains(msg, tc.limit.Field) || !strings.Contains(msg, "limit is "+strconv.Itoa(tc.limit.Max)) {
				t.Fatalf("message %q names neither field %q nor limit %d", msg, tc.limit.Field, tc.limit.Max)
			}
		})
	}
	// Nothing over a limit was stored.
	nss, err := s.Index.ListNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		if len(ns.Name) > registry.MaxNamespaceLength || len(ns.Description) > registry.MaxDescriptionLength {
			t.Errorf("stored namespace %.20s... (%d bytes, description %d bytes)", ns.Name, len(ns.Name), len(ns.Description))
		}
	}
}

// TestLongValuesAreNotEchoed checks that keyword fields, which have no
// length limit of their own, do not repeat a huge value in the message.
func TestLongValuesAreNotEchoed(t *testing.T) {
	s := trovetest.Start(t)
	if err := s.Index.CreateNamespace(context.Background(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 10000)
	if err := s.Index.(store.Access).CreateUser(context.Background(), registry.User{Name: "rita", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path, doc string }{
		{"POST", "/api/v1/namespaces", `{"name": "ok", "visibility": "` + huge + `"}`},
		{"POST", "/api/v1/tokens", `{"namespaces": ["acme"], "scopes": ["` + huge + `"]}`},
		{"PUT", "/api/v1/namespaces/acme/members/rita", `{"role": "` + huge + `"}`},
	} {
		req, _ := http.NewRequest(r.method, s.URL+r.path, strings.NewReader(r.doc))
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || len(data) > 500 {
			t.Fatalf("status %d, %d bytes of answer: %.200s", resp.StatusCode, len(data), data)
		}
	}
}

// TestTextFields sends every free-text field with a newline, an escape
// sequence and a C1 control character: each is refused with 400 and
// registry.CheckText's message, and nothing is stored.
func TestTextFields(t *testing.T) {
	s := trovetest.Start(t)
	ctx := context.Background()
	if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", Description: "before", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	type textCase struct {
		name    string
		limit   registry.Limit
		request func(v string) (method, path, body string)
	}
	cases := []textCase{
		{"namespace description (create)", registry.DescriptionLimit, func(v string) (string, string, string) {
			return "POST", "/api/v1/namespaces", `{"name": "texted", "description": ` + quoted(v) + `}`
		}},
		{"namespace description (update)", registry.DescriptionLimit, func(v string) (string, string, string) {
			return "PATCH", "/api/v1/namespaces/acme", `{"description": ` + quoted(v) + `}`
		}},
		{"token description", registry.DescriptionLimit, func(v string) (string, string, string) {
			return "POST", "/api/v1/tokens", `{"description": ` + quoted(v) + `, "scopes": ["read"], "namespaces": ["acme"]}`
		}},
		{"module origin (query)", registry.OriginLimit, func(v string) (string, string, string) {
			return "POST", "/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0?origin=" + url.QueryEscape(v), ""
		}},
		{"mirror upstream description", registry.DescriptionLimit, func(v string) (string, string, string) {
			return "PUT", "/api/v1/mirror/upstreams/texted.example", `{"description": ` + quoted(v) + `}`
		}},
		{"mirror upstream service URL", registry.ServiceURLLimit, func(v string) (string, string, string) {
			return "PUT", "/api/v1/mirror/upstreams/texted.example", `{"service_url": ` + quoted(v) + `}`
		}},
		{"mirror rule versions", registry.VersionConstraintLimit, func(v string) (string, string, string) {
			return "PUT", "/api/v1/mirror/upstreams/texted.example", `{"allow": [{"provider": "*/*", "versions": ` + quoted(v) + `}]}`
		}},
	}
	for _, tc := range cases {
		for _, v := range []string{"two\nlines", "red \x1b[31mtext", "c1 \u009b text", "tab\there"} {
			t.Run(tc.name, func(t *testing.T) {
				method, path, body := tc.request(v)
				req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.AdminToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := s.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var doc struct {
					Errors []string `json:"errors"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&doc)
				wantErr := tc.limit.CheckText(v)
				if wantErr == nil {
					t.Fatalf("registry.CheckText accepts %q", v)
				}
				want := wantErr.Error()
				if resp.StatusCode != http.StatusBadRequest || strings.Join(doc.Errors, "; ") != want {
					t.Fatalf("%q: status %d, %q; want 400, %q", v, resp.StatusCode, doc.Errors, want)
				}
			})
		}
	}
	nss, err := s.Index.ListNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss {
		if ns.Name == "texted" || ns.Description != "before" {
			t.Errorf("stored namespace %q with description %q", ns.Name, ns.Description)
		}
	}
	toks, err := s.Index.(store.Tokens).ListTokens(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if strings.ContainsFunc(tok.Description, registry.IsControl) {
			t.Errorf("stored token %s with description %q", tok.ID, tok.Description)
		}
	}
}
