package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// TestFieldLimitsBeforeSending calls every method with each of its fields
// at the limit, which is sent, and one byte over it, which fails with the
// server's message (registry.Limit.Check, as internal/api's TestFieldLimits
// checks the server to answer) without any request.
func TestFieldLimitsBeforeSending(t *testing.T) {
	var requests atomic.Int64
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":["not found"]}`))
	}))
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	str := func(s string) *string { return &s }
	version := func(n int) string { return "1.0.0-" + strings.Repeat("a", n-len("1.0.0-")) }
	type call func(v string) error
	cases := []struct {
		name  string
		limit registry.Limit
		value func(n int) string // nil: n times "a"
		call  call
	}{
		{"CreateNamespace name", registry.NamespaceLimit, nil, func(v string) error {
			_, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: v})
			return err
		}},
		{"CreateNamespace description", registry.DescriptionLimit, nil, func(v string) error {
			_, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Description: v})
			return err
		}},
		{"GetNamespace", registry.NamespaceLimit, nil, func(v string) error { _, err := c.GetNamespace(ctx, v); return err }},
		{"UpdateNamespace name", registry.NamespaceLimit, nil, func(v string) error {
			_, err := c.UpdateNamespace(ctx, v, apispec.UpdateNamespaceRequest{})
			return err
		}},
		{"UpdateNamespace description", registry.DescriptionLimit, nil, func(v string) error {
			_, err := c.UpdateNamespace(ctx, "acme", apispec.UpdateNamespaceRequest{Description: &v})
			return err
		}},
		{"DeleteNamespace", registry.NamespaceLimit, nil, func(v string) error { return c.DeleteNamespace(ctx, v) }},
		{"ListSigningKeys", registry.NamespaceLimit, nil, func(v string) error { _, err := c.ListSigningKeys(ctx, v); return err }},
		{"GetSigningKey", registry.KeyIDLimit, nil, func(v string) error { _, err := c.GetSigningKey(ctx, "acme", v); return err }},
		{"DeleteSigningKey", registry.KeyIDLimit, nil, func(v string) error { return c.DeleteSigningKey(ctx, "acme", v) }},
		{"CreateToken namespaces", registry.NamespaceLimit, nil, func(v string) error {
			_, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Namespaces: []string{"acme", v}, Scopes: []string{"read"}})
			return err
		}},
		{"CreateToken namespace", registry.NamespaceLimit, nil, func(v string) error {
			_, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Namespace: v, Scopes: []string{"read"}})
			return err
		}},
		{"CreateToken user", registry.UserNameLimit, nil, func(v string) error {
			_, err := c.CreateToken(ctx, apispec.CreateTokenRequest{User: v, Scopes: []string{"read"}})
			return err
		}},
		{"CreateToken description", registry.DescriptionLimit, nil, func(v string) error {
			_, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Description: v, Scopes: []string{"read"}})
			return err
		}},
		{"ListTokens", registry.NamespaceLimit, nil, func(v string) error { _, err := c.ListTokens(ctx, v); return err }},
		{"GetToken", registry.TokenIDLimit, nil, func(v string) error { _, err := c.GetToken(ctx, v); return err }},
		{"RevokeToken", registry.TokenIDLimit, nil, func(v string) error { return c.RevokeToken(ctx, v) }},
		{"ExpireToken", registry.TokenIDLimit, nil, func(v string) error { _, err := c.ExpireToken(ctx, v, t0); return err }},
		{"ListUserTokens", registry.UserNameLimit, nil, func(v string) error { _, err := c.ListUserTokens(ctx, v); return err }},
		{"CreateUser name", registry.UserNameLimit, nil, func(v string) error {
			_, err := c.CreateUser(ctx, apispec.CreateUserRequest{Name: v})
			return err
		}},
		{"CreateUser password", registry.PasswordLimit, nil, func(v string) error {
			_, err := c.CreateUser(ctx, apispec.CreateUserRequest{Name: "rita", Password: v})
			return err
		}},
		{"GetUser", registry.UserNameLimit, nil, func(v string) error { _, err := c.GetUser(ctx, v); return err }},
		{"UpdateUser password", registry.PasswordLimit, nil, func(v string) error {
			_, err := c.UpdateUser(ctx, "rita", apispec.UpdateUserRequest{Password: &v})
			return err
		}},
		{"UpdateUser current password", registry.PasswordLimit, nil, func(v string) error {
			_, err := c.UpdateUser(ctx, "rita", apispec.UpdateUserRequest{Password: str("a new password"), CurrentPassword: &v})
			return err
		}},
		{"ListMembers", registry.NamespaceLimit, nil, func(v string) error { _, err := c.ListMembers(ctx, v); return err }},
		{"SetMember user", registry.UserNameLimit, nil, func(v string) error { _, err := c.SetMember(ctx, "acme", v, "reader"); return err }},
		{"RemoveMember user", registry.UserNameLimit, nil, func(v string) error { return c.RemoveMember(ctx, "acme", v) }},
		{"ListAudit namespace", registry.NamespaceLimit, nil, func(v string) error {
			_, err := c.ListAudit(ctx, AuditQuery{Namespace: v})
			return err
		}},
		{"ListAudit actor", registry.AuditActorLimit, nil, func(v string) error { _, err := c.ListAudit(ctx, AuditQuery{Actor: v}); return err }},
		{"ListAudit action", registry.AuditActionLimit, nil, func(v string) error { _, err := c.ListAudit(ctx, AuditQuery{Action: v}); return err }},
		{"ListProviders", registry.NamespaceLimit, nil, func(v string) error { _, err := c.ListProviders(ctx, v); return err }},
		{"GetProvider type", registry.ProviderTypeLimit, nil, func(v string) error { _, err := c.GetProvider(ctx, "acme", v); return err }},
		{"GetProviderVersion version", registry.VersionLimit, version, func(v string) error {
			_, err := c.GetProviderVersion(ctx, "acme", "widget", v)
			return err
		}},
		{"ListModules query", registry.SearchQueryLimit, nil, func(v string) error {
			_, err := c.ListModules(ctx, "acme", ModuleListOptions{Query: v})
			return err
		}},
		{"ListModules system", registry.ModuleSystemLimit, nil, func(v string) error {
			_, err := c.ListModules(ctx, "acme", ModuleListOptions{System: v})
			return err
		}},
		{"GetModule name", registry.ModuleNameLimit, nil, func(v string) error { _, err := c.GetModule(ctx, "acme", v, "aws"); return err }},
		{"GetModule system", registry.ModuleSystemLimit, nil, func(v string) error { _, err := c.GetModule(ctx, "acme", "net", v); return err }},
		{"GetModuleVersion version", registry.VersionLimit, version, func(v string) error {
			_, err := c.GetModuleVersion(ctx, "acme", "net", "aws", v)
			return err
		}},
		{"PublishModule origin", registry.OriginLimit, nil, func(v string) error {
			_, err := c.PublishModule(ctx, ModuleUpload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
				Archive: strings.NewReader("archive"), Origin: v})
			return err
		}},
		{"DeleteModuleVersion name", registry.ModuleNameLimit, nil, func(v string) error {
			return c.DeleteModuleVersion(ctx, "acme", v, "aws", "1.0.0")
		}},
		{"GetMirrorUpstream", registry.HostLimit, nil, func(v string) error { _, err := c.GetMirrorUpstream(ctx, v); return err }},
		{"DeleteMirrorUpstream", registry.HostLimit, nil, func(v string) error { return c.DeleteMirrorUpstream(ctx, v) }},
		{"PutMirrorUpstream host", registry.HostLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, v, apispec.PutMirrorUpstreamRequest{})
			return err
		}},
		{"PutMirrorUpstream service URL", registry.ServiceURLLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{ServiceURL: v})
			return err
		}},
		{"PutMirrorUpstream CA certificates", registry.CACertificatesLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{CACertificates: v})
			return err
		}},
		{"PutMirrorUpstream description", registry.DescriptionLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Description: v})
			return err
		}},
		{"PutMirrorUpstream rule provider", registry.MirrorProviderLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Allow: []apispec.MirrorRule{{Provider: "*/*"}, {Provider: v}}})
			return err
		}},
		{"PutMirrorUpstream rule versions", registry.VersionConstraintLimit, nil, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Allow: []apispec.MirrorRule{{Provider: "*/*", Versions: v}}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			value := tc.value
			if value == nil {
				value = func(n int) string { return strings.Repeat("a", n) }
			}
			before := requests.Load()
			if err := tc.call(value(tc.limit.Max)); !IsNotFound(err) || requests.Load() != before+1 {
				t.Fatalf("at the limit (%d bytes): error %v, %d requests; want the server's 404", tc.limit.Max, err, requests.Load()-before)
			}
			over := value(tc.limit.Max + 1)
			err := tc.call(over)
			if err == nil || err.Error() != tc.limit.Check(over).Error() || !registry.IsKind(err, registry.Invalid) {
				t.Fatalf("over the limit: error %v, want %v", err, tc.limit.Check(over))
			}
			if n := requests.Load() - before - 1; n != 0 {
				t.Fatalf("over the limit: %d requests sent, want none", n)
			}
		})
	}
}

// TestTextBeforeSending calls every method that sends free text with a
// newline, an escape sequence and invalid UTF-8: each fails with the
// server's message (registry.CheckText, as internal/api's TestTextFields
// checks the server to answer) without any request.
func TestTextBeforeSending(t *testing.T) {
	var requests atomic.Int64
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":["not found"]}`))
	}))
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name  string
		limit registry.Limit
		call  func(v string) error
	}{
		{"CreateNamespace description", registry.DescriptionLimit, func(v string) error {
			_, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Description: v})
			return err
		}},
		{"UpdateNamespace description", registry.DescriptionLimit, func(v string) error {
			_, err := c.UpdateNamespace(ctx, "acme", apispec.UpdateNamespaceRequest{Description: &v})
			return err
		}},
		{"CreateToken description", registry.DescriptionLimit, func(v string) error {
			_, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Description: v, Scopes: []string{"read"}})
			return err
		}},
		{"PublishModule origin", registry.OriginLimit, func(v string) error {
			_, err := c.PublishModule(ctx, ModuleUpload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
				Archive: strings.NewReader("archive"), Origin: v})
			return err
		}},
		{"PutMirrorUpstream description", registry.DescriptionLimit, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Description: v})
			return err
		}},
		{"PutMirrorUpstream service URL", registry.ServiceURLLimit, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{ServiceURL: v})
			return err
		}},
		{"PutMirrorUpstream rule versions", registry.VersionConstraintLimit, func(v string) error {
			_, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Allow: []apispec.MirrorRule{{Provider: "*/*", Versions: v}}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{"two\nlines", "red \x1b[31mtext", "c1 \u009b", "bad \xff utf-8"} {
				before := requests.Load()
				err := tc.call(v)
				want := tc.limit.CheckText(v)
				if want == nil {
					t.Fatalf("registry.CheckText accepts %q", v)
				}
				if err == nil || err.Error() != want.Error() || !registry.IsKind(err, registry.Invalid) {
					t.Fatalf("%q: error %v, want %v", v, err, want)
				}
				if n := requests.Load() - before; n != 0 {
					t.Fatalf("%q: %d requests sent, want none", v, n)
				}
			}
			if err := tc.call("one line, Zürich"); !IsNotFound(err) {
				t.Fatalf("valid text: %v, want the server's 404", err)
			}
		})
	}
}

// TestMirrorUpstreamChecksBeforeSending: more rules than an upstream may
// have, and certificates with control characters other than line breaks,
// fail with the server's message without any request.
func TestMirrorUpstreamChecksBeforeSending(t *testing.T) {
	var requests atomic.Int64
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":["not found"]}`))
	}))
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rules := make([]apispec.MirrorRule, registry.MaxMirrorRules+1)
	for i := range rules {
		rules[i].Provider = "*/*"
	}
	for _, tc := range []struct {
		req  apispec.PutMirrorUpstreamRequest
		want string
	}{
		{apispec.PutMirrorUpstreamRequest{Allow: rules}, "an upstream has at most 100 allow rules, not 101"},
		{apispec.PutMirrorUpstreamRequest{CACertificates: "-----BEGIN CERTIFICATE-----\n\x1b[31m"}, "CA certificates contains the control character U+001B"},
	} {
		if _, err := c.PutMirrorUpstream(ctx, "mirror.example", tc.req); err == nil || !strings.Contains(err.Error(), tc.want) || !registry.IsKind(err, registry.Invalid) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if _, err := c.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Allow: rules[1:], CACertificates: "a\r\nb\n"}); !IsNotFound(err) {
		t.Errorf("100 rules, lines: %v, want the server's 404", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests sent, want 1", n)
	}
}
