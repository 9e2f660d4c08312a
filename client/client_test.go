package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

const testToken = "trove_testtoken"

// recorded is what the test server saw of one request.
type recorded struct {
	method, path, query, auth, contentType, userAgent, body string
}

// newServer starts a TLS server that records each request and answers
// with status and body, and returns a client of it.
func newServer(t *testing.T, status int, body string, opts ...Option) (*Client, *recorded) {
	t.Helper()
	rec := &recorded{}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*rec = recorded{
			method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery,
			auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"),
			userAgent: r.Header.Get("User-Agent"), body: string(b),
		}
		if body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, testToken, append([]Option{WithHTTPClient(ts.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

var (
	t0      = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t0JSON  = `"2026-01-02T03:04:05Z"`
	nsJSON  = `{"name":"acme","description":"d","created_at":` + t0JSON + `}`
	ns      = apispec.Namespace{Name: "acme", Description: "d", CreatedAt: t0}
	keyJSON = `{"namespace":"acme","key_id":"ABCDEF0123456789","fingerprint":"F","ascii_armor":"A","created_at":` + t0JSON + `}`
	key     = apispec.SigningKey{Namespace: "acme", KeyID: "ABCDEF0123456789", Fingerprint: "F", ASCIIArmor: "A", CreatedAt: t0}
	tokJSON = `{"id":"tok_1","namespaces":["acme"],"namespace":"acme","scopes":["publish"],"created_at":` + t0JSON + `}`
	tok     = apispec.Token{ID: "tok_1", Namespaces: []string{"acme"}, Namespace: "acme", Scopes: []string{"publish"}, CreatedAt: t0}
	twoJSON = `{"id":"tok_2","namespaces":["acme","labs"],"scopes":["publish"],"created_at":` + t0JSON + `}`
	twoTok  = apispec.Token{ID: "tok_2", Namespaces: []string{"acme", "labs"}, Scopes: []string{"publish"}, CreatedAt: t0}
	pvJSON  = `{"namespace":"acme","type":"foo","version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64","filename":"f.zip","shasum":"s","size":3}],"shasums_digest":"d","key_id":"K","published_at":` + t0JSON + `}`
	pv      = apispec.ProviderVersion{Namespace: "acme", Type: "foo", Version: "1.0.0", Protocols: []string{"5.0"},
		Platforms: []apispec.Platform{{OS: "linux", Arch: "amd64", Filename: "f.zip", SHASum: "s", Size: 3}}, SHASumsDigest: "d", KeyID: "K", PublishedAt: t0}
)

var (
	upJSON = `{"host":"mirror.example:8443","service_url":"","ca_certificates":"","allow":[{"provider":"hashicorp/*"},{"provider":"acme/widget","versions":"~> 1.2"}],"description":"d","created_at":` + t0JSON + `,"updated_at":` + t0JSON + `}`
	up     = apispec.MirrorUpstream{Host: "mirror.example:8443", Allow: []apispec.MirrorRule{{Provider: "hashicorp/*"}, {Provider: "acme/widget", Versions: "~> 1.2"}},
		Description: "d", CreatedAt: t0, UpdatedAt: t0}
)

// TestRoutes checks each method's request (method, path, query, body) and
// the decoding of its answer, keyed by method name.
func TestRoutes(t *testing.T) {
	ctx := context.Background()
	desc := "new"
	tests := []struct {
		name   string
		call   func(c *Client) (any, error)
		method string
		path   string
		query  string
		body   string // expected JSON request body, "" for none
		status int
		answer string
		want   any
	}{
		{"CreateNamespace", func(c *Client) (any, error) {
			return c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Description: "d"})
		}, "POST", "/api/v1/namespaces", "", `{"name":"acme","description":"d"}`, 201, nsJSON, ns},
		{"ListNamespaces", func(c *Client) (any, error) { return c.ListNamespaces(ctx) },
			"GET", "/api/v1/namespaces", "", "", 200, `{"namespaces":[` + nsJSON + `]}`, []apispec.Namespace{ns}},
		{"GetNamespace", func(c *Client) (any, error) { return c.GetNamespace(ctx, "acme") },
			"GET", "/api/v1/namespaces/acme", "", "", 200, nsJSON, ns},
		{"UpdateNamespace", func(c *Client) (any, error) {
			return c.UpdateNamespace(ctx, "acme", apispec.UpdateNamespaceRequest{Description: &desc})
		}, "PATCH", "/api/v1/namespaces/acme", "", `{"description":"new"}`, 200, nsJSON, ns},
		{"DeleteNamespace", func(c *Client) (any, error) { return nil, c.DeleteNamespace(ctx, "acme") },
			"DELETE", "/api/v1/namespaces/acme", "", "", 204, "", nil},
		{"AddSigningKey", func(c *Client) (any, error) {
			return c.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: "A"})
		}, "POST", "/api/v1/namespaces/acme/keys", "", `{"ascii_armor":"A"}`, 201, keyJSON, key},
		{"ListSigningKeys", func(c *Client) (any, error) { return c.ListSigningKeys(ctx, "acme") },
			"GET", "/api/v1/namespaces/acme/keys", "", "", 200, `{"keys":[` + keyJSON + `]}`, []apispec.SigningKey{key}},
		{"GetSigningKey", func(c *Client) (any, error) { return c.GetSigningKey(ctx, "acme", "ABCDEF0123456789") },
			"GET", "/api/v1/namespaces/acme/keys/ABCDEF0123456789", "", "", 200, keyJSON, key},
		{"DeleteSigningKey", func(c *Client) (any, error) { return nil, c.DeleteSigningKey(ctx, "acme", "ABCDEF0123456789") },
			"DELETE", "/api/v1/namespaces/acme/keys/ABCDEF0123456789", "", "", 200, `{}`, nil},
		{"CreateToken", func(c *Client) (any, error) {
			exp := t0.Add(time.Hour)
			return c.CreateToken(ctx, apispec.CreateTokenRequest{Namespace: "acme", Scopes: []string{"publish"}, ExpiresAt: &exp})
		}, "POST", "/api/v1/tokens", "", `{"namespace":"acme","scopes":["publish"],"expires_at":"2026-01-02T04:04:05Z"}`, 201,
			`{"token":` + tokJSON + `,"secret":"trove_s"}`, apispec.CreatedToken{Token: tok, Secret: "trove_s"}},
		{"CreateTokenForTwoNamespaces", func(c *Client) (any, error) {
			return c.CreateToken(ctx, apispec.CreateTokenRequest{Namespaces: []string{"acme", "labs"}, Scopes: []string{"publish"}})
		}, "POST", "/api/v1/tokens", "", `{"namespaces":["acme","labs"],"scopes":["publish"]}`, 201,
			`{"token":` + twoJSON + `,"secret":"trove_s"}`, apispec.CreatedToken{Token: twoTok, Secret: "trove_s"}},
		{"ListTokens all", func(c *Client) (any, error) { return c.ListTokens(ctx, "") },
			"GET", "/api/v1/tokens", "", "", 200, `{"tokens":[` + tokJSON + `]}`, []apispec.Token{tok}},
		{"ListTokens namespace", func(c *Client) (any, error) { return c.ListTokens(ctx, "acme") },
			"GET", "/api/v1/tokens", "namespace=acme", "", 200, `{"tokens":[]}`, []apispec.Token{}},
		{"GetToken", func(c *Client) (any, error) { return c.GetToken(ctx, "tok_1") },
			"GET", "/api/v1/tokens/tok_1", "", "", 200, tokJSON, tok},
		{"RevokeToken", func(c *Client) (any, error) { return nil, c.RevokeToken(ctx, "tok_1") },
			"DELETE", "/api/v1/tokens/tok_1", "", "", 204, "", nil},
		{"ListProviders", func(c *Client) (any, error) { return c.ListProviders(ctx, "acme") },
			"GET", "/api/v1/namespaces/acme/providers", "", "", 200,
			`{"providers":[{"namespace":"acme","type":"foo","version_count":2,"latest_version":"1.0.0","updated_at":` + t0JSON + `}]}`,
			[]apispec.Provider{{Namespace: "acme", Type: "foo", VersionCount: 2, LatestVersion: "1.0.0", UpdatedAt: t0}}},
		{"GetProvider", func(c *Client) (any, error) { return c.GetProvider(ctx, "acme", "foo") },
			"GET", "/api/v1/namespaces/acme/providers/foo", "", "", 200, `{"namespace":"acme","type":"foo","versions":[` + pvJSON + `]}`,
			apispec.ProviderDetail{Namespace: "acme", Type: "foo", Versions: []apispec.ProviderVersion{pv}}},
		{"GetProviderVersion", func(c *Client) (any, error) { return c.GetProviderVersion(ctx, "acme", "foo", "1.0.0+build.1") },
			"GET", "/api/v1/namespaces/acme/providers/foo/versions/1.0.0+build.1", "", "", 200, pvJSON, pv},
		{"WhoAmI", func(c *Client) (any, error) { return c.WhoAmI(ctx) },
			"GET", "/api/v1/whoami", "", "", 200, tokJSON, tok},
		{"ListMirrorUpstreams", func(c *Client) (any, error) { return c.ListMirrorUpstreams(ctx) },
			"GET", "/api/v1/mirror/upstreams", "", "", 200, `{"upstreams":[` + upJSON + `]}`, []apispec.MirrorUpstream{up}},
		{"GetMirrorUpstream", func(c *Client) (any, error) { return c.GetMirrorUpstream(ctx, "mirror.example:8443") },
			"GET", "/api/v1/mirror/upstreams/mirror.example:8443", "", "", 200, upJSON, up},
		{"PutMirrorUpstream", func(c *Client) (any, error) {
			return c.PutMirrorUpstream(ctx, "mirror.example:8443", apispec.PutMirrorUpstreamRequest{
				Allow: []apispec.MirrorRule{{Provider: "hashicorp/*"}, {Provider: "acme/widget", Versions: "~> 1.2"}}, Description: "d"})
		}, "PUT", "/api/v1/mirror/upstreams/mirror.example:8443", "",
			`{"allow":[{"provider":"hashicorp/*"},{"provider":"acme/widget","versions":"~> 1.2"}],"description":"d"}`, 201, upJSON, up},
		{"DeleteMirrorUpstream", func(c *Client) (any, error) { return nil, c.DeleteMirrorUpstream(ctx, "mirror.example:8443") },
			"DELETE", "/api/v1/mirror/upstreams/mirror.example:8443", "", "", 204, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newServer(t, tt.status, tt.answer)
			got, err := tt.call(c)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if rec.method != tt.method || rec.path != tt.path || rec.query != tt.query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", rec.method, rec.path, rec.query, tt.method, tt.path, tt.query)
			}
			if rec.auth != "Bearer "+testToken {
				t.Errorf("Authorization = %q", rec.auth)
			}
			if rec.userAgent != DefaultUserAgent {
				t.Errorf("User-Agent = %q", rec.userAgent)
			}
			if tt.body == "" {
				if rec.body != "" {
					t.Errorf("request body = %q, want none", rec.body)
				}
			} else {
				if rec.contentType != "application/json" {
					t.Errorf("Content-Type = %q", rec.contentType)
				}
				if !jsonEqual(t, rec.body, tt.body) {
					t.Errorf("request body = %s, want %s", rec.body, tt.body)
				}
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("invalid JSON %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestPathParametersAreEscaped(t *testing.T) {
	c, rec := newServer(t, 200, keyJSON)
	if _, err := c.GetSigningKey(context.Background(), "a/b c?d#e", "ABCDEF0123456789"); err != nil {
		t.Fatal(err)
	}
	if want := "/api/v1/namespaces/a%2Fb%20c%3Fd%23e/keys/ABCDEF0123456789"; rec.path != want {
		t.Errorf("path = %s, want %s", rec.path, want)
	}
}

// TestIDsAreChecked: token and key IDs that are not IDs (a path, above
// all) are refused with the server's message before any request.
func TestIDsAreChecked(t *testing.T) {
	c, rec := newServer(t, 204, "")
	ctx := context.Background()
	for _, tc := range []struct {
		call func() error
		want string
	}{
		{func() error { return c.RevokeToken(ctx, "../namespaces/acme") }, `invalid token ID "../namespaces/acme": want the ID that trove token list shows`},
		{func() error { _, err := c.GetToken(ctx, "tok_1/../x"); return err }, "invalid token ID"},
		{func() error { _, err := c.ExpireToken(ctx, "tok 1", time.Now()); return err }, "invalid token ID"},
		{func() error { return c.DeleteSigningKey(ctx, "acme", "../../x") }, `invalid key ID "../../x": want the 16 hex digits that trove key list shows`},
		{func() error { _, err := c.GetSigningKey(ctx, "acme", "3AA5C34371567BDZ"); return err }, "invalid key ID"},
	} {
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !registry.IsKind(err, registry.Invalid) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if rec.method != "" {
		t.Errorf("a request was sent: %+v", rec)
	}
}

func TestDotSegmentsAreRefused(t *testing.T) {
	c, rec := newServer(t, 204, "")
	for _, name := range []string{"", ".", ".."} {
		if err := c.DeleteNamespace(context.Background(), name); err == nil {
			t.Errorf("DeleteNamespace(%q) succeeded", name)
		}
	}
	if rec.method != "" {
		t.Errorf("a request was sent: %+v", rec)
	}
}

func TestNoTokenNoAuthorization(t *testing.T) {
	rec := &recorded{}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.auth = r.Header.Get("Authorization")
		rec.userAgent = r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"namespaces":[]}`)
	}))
	defer ts.Close()
	c, err := New(ts.URL, "", WithHTTPClient(ts.Client()), WithUserAgent("trove-cli/1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNamespaces(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.auth != "" || rec.userAgent != "trove-cli/1.2.3" {
		t.Errorf("Authorization = %q, User-Agent = %q", rec.auth, rec.userAgent)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantMsg     string
		notFound    bool
		conflict    bool
	}{
		{"404 with message", 404, "application/json", `{"errors":["namespace \"x\" not found"]}`, `namespace "x" not found`, true, false},
		{"409 two messages", 409, "application/json", `{"errors":["a","b"]}`, "a; b", false, true},
		{"401", 401, "application/json", `{"errors":["the token is not valid"]}`, "the token is not valid", false, false},
		{"502 html", 502, "text/html", `<html>bad gateway</html>`, "server answered 502 Bad Gateway without an error message", false, false},
		{"500 empty errors", 500, "application/json", `{"errors":[]}`, "server answered 500 Internal Server Error without an error message", false, false},
		{"400 blank message", 400, "application/json", `{"errors":["  "]}`, "server answered 400 Bad Request without an error message", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			c, err := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetNamespace(context.Background(), "x")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v (%T), want *Error", err, err)
			}
			if e.Status != tt.status || e.Error() != tt.wantMsg {
				t.Errorf("error = %d %q, want %d %q", e.Status, e.Error(), tt.status, tt.wantMsg)
			}
			if IsNotFound(err) != tt.notFound || IsConflict(err) != tt.conflict {
				t.Errorf("IsNotFound = %v, IsConflict = %v", IsNotFound(err), IsConflict(err))
			}
			if StatusCode(err) != tt.status {
				t.Errorf("StatusCode = %d", StatusCode(err))
			}
		})
	}
}

func TestNonJSONSuccessIsAnError(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>welcome</html>")
	}))
	defer ts.Close()
	c, _ := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
	_, err := c.ListNamespaces(context.Background())
	if err == nil || !strings.Contains(err.Error(), "instead of JSON") {
		t.Errorf("error = %v, want one about a non-JSON answer", err)
	}
}

func TestCAFile(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, tokJSON)
	}))
	defer ts.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}

	untrusted, err := New(ts.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted.WhoAmI(context.Background()); err == nil {
		t.Error("WhoAmI without the CA succeeded")
	}
	trusted, err := New(ts.URL, testToken, WithCAFile(caFile), WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trusted.WhoAmI(context.Background()); err != nil {
		t.Errorf("WhoAmI with the CA file: %v", err)
	}

	if _, err := New(ts.URL, testToken, WithCAFile(filepath.Join(t.TempDir(), "missing.pem"))); err == nil {
		t.Error("New with a missing CA file succeeded")
	}
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	if _, err := New(ts.URL, testToken, WithCAFile(notPEM)); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("New with a non-PEM CA file: %v", err)
	}
}

func TestNewAddr(t *testing.T) {
	tests := map[string]string{ // addr -> Addr() ("" = error)
		"https://localhost:8443":  "https://localhost:8443",
		"https://localhost:8443/": "https://localhost:8443",
		"localhost:8443":          "https://localhost:8443",
		"http://127.0.0.1:8080":   "http://127.0.0.1:8080",
		"https://r.example/base/": "https://r.example/base",
		"":                        "",
		"ftp://r.example":         "",
		"https://":                "",
		"https://u:p@r.example":   "",
		"https://r.example?x=1":   "",
		"https://r.example#x":     "",
		"https://r.example:%zz":   "",
	}
	for addr, want := range tests {
		c, err := New(addr, "")
		switch {
		case want == "" && err == nil:
			t.Errorf("New(%q) succeeded, want an error", addr)
		case want != "" && err != nil:
			t.Errorf("New(%q): %v", addr, err)
		case want != "" && c.Addr() != want:
			t.Errorf("New(%q).Addr() = %q, want %q", addr, c.Addr(), want)
		}
	}
	if _, err := New("https://r.example", "trove_x\r\nX-Evil: 1"); err == nil {
		t.Error("New accepted a token with a line break")
	}
}

func TestBasePathIsKept(t *testing.T) {
	var path string
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.EscapedPath()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, nsJSON)
	}))
	defer ts.Close()
	c, err := New(ts.URL+"/trove/", testToken, WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetNamespace(context.Background(), "acme"); err != nil {
		t.Fatal(err)
	}
	if path != "/trove/api/v1/namespaces/acme" {
		t.Errorf("path = %s", path)
	}
}

func TestExpiresIn(t *testing.T) {
	if ExpiresIn(0) != nil {
		t.Error("ExpiresIn(0) != nil")
	}
	before := time.Now()
	got := ExpiresIn(time.Hour)
	if got == nil || got.Before(before.Add(time.Hour).Add(-time.Second)) || got.After(time.Now().Add(time.Hour)) {
		t.Errorf("ExpiresIn(1h) = %v", got)
	}
}

// TestRedirectKeepsTokenOnOrigin: a redirect to another origin (here
// another port of the same host) is followed without the token.
func TestRedirectKeepsTokenOnOrigin(t *testing.T) {
	var gotAuth []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"namespaces":[]}`)
	}))
	defer other.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer origin.Close()
	c, err := New(origin.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListNamespaces(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(gotAuth) != 2 || gotAuth[0] != "Bearer "+testToken || gotAuth[1] != "" {
		t.Errorf("Authorization at the origin, then after the redirect to another port: %q; want the token only at the origin", gotAuth)
	}
}
