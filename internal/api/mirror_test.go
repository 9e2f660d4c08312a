package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/api"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/trovetest"
)

// upstreamAnswer returns a decoder of an upstream answered with status
// want, to wrap around apiDo.
func upstreamAnswer(t *testing.T, want int) func(int, []byte) apispec.MirrorUpstream {
	return func(status int, raw []byte) apispec.MirrorUpstream {
		t.Helper()
		var u apispec.MirrorUpstream
		if status != want || json.Unmarshal(raw, &u) != nil {
			t.Fatalf("status %d %s, want %d", status, raw, want)
		}
		return u
	}
}

// TestMirrorUpstreamLifecycle creates, reads, replaces and deletes an
// upstream as a global admin: the path's host is normalized, a
// replacement keeps the creation time, both changes are audited, and the
// two default upstreams are listed.
func TestMirrorUpstreamLifecycle(t *testing.T) {
	s := trovetest.Start(t)
	admin := "Bearer " + s.AdminToken
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}

	status, raw := apiDo(t, s, "GET", "/api/v1/mirror/upstreams", admin, "", nil)
	var list apispec.MirrorUpstreamList
	if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Upstreams) != 2 ||
		list.Upstreams[0].Host != "registry.opentofu.org" || list.Upstreams[1].Host != "registry.terraform.io" {
		t.Fatalf("defaults = %d %s", status, raw)
	}
	if a := list.Upstreams[1].Allow; len(a) != 1 || a[0].Provider != "*/*" || a[0].Versions != "" {
		t.Fatalf("default rules = %+v, want */*", a)
	}

	put := func(path string, req apispec.PutMirrorUpstreamRequest) (int, []byte) {
		body, _ := json.Marshal(req)
		return apiDo(t, s, "PUT", path, admin, "application/json", strings.NewReader(string(body)))
	}
	req := apispec.PutMirrorUpstreamRequest{
		ServiceURL: "https://mirror.example:8443/v1/providers/", CACertificates: string(ca), Description: "private upstream",
		Allow: []apispec.MirrorRule{{Provider: "hashicorp/*"}, {Provider: "acme/widget", Versions: "~> 1.2"}},
	}
	created := upstreamAnswer(t, 201)(put("/api/v1/mirror/upstreams/Mirror.EXAMPLE:8443", req))
	if created.Host != "mirror.example:8443" || created.ServiceURL != req.ServiceURL || created.CACertificates != string(ca) ||
		created.Description != req.Description || len(created.Allow) != 2 || created.Allow[1] != req.Allow[1] ||
		created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Fatalf("created = %+v", created)
	}
	got := upstreamAnswer(t, 200)(apiDo(t, s, "GET", "/api/v1/mirror/upstreams/mirror.example:8443", admin, "", nil))
	if got.Host != created.Host || got.ServiceURL != created.ServiceURL || len(got.Allow) != 2 {
		t.Fatalf("read back = %+v", got)
	}

	// A replacement is whole: what it leaves out is gone.
	replaced := upstreamAnswer(t, 200)(put("/api/v1/mirror/upstreams/mirror.example:8443", apispec.PutMirrorUpstreamRequest{
		Allow: []apispec.MirrorRule{{Provider: "*/*"}}}))
	if replaced.ServiceURL != "" || replaced.CACertificates != "" || replaced.Description != "" || len(replaced.Allow) != 1 ||
		!replaced.CreatedAt.Equal(created.CreatedAt) || replaced.UpdatedAt.Before(created.UpdatedAt) {
		t.Fatalf("replaced = %+v, created %+v", replaced, created)
	}
	// No rules: the upstream allows nothing, and says so with [].
	status, raw = put("/api/v1/mirror/upstreams/mirror.example:8443", apispec.PutMirrorUpstreamRequest{})
	if status != 200 || !strings.Contains(string(raw), `"allow":[]`) {
		t.Fatalf("no rules = %d %s", status, raw)
	}

	status, raw = apiDo(t, s, "GET", "/api/v1/mirror/upstreams", admin, "", nil)
	if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Upstreams) != 3 || list.Upstreams[0].Host != "mirror.example:8443" {
		t.Fatalf("list = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/mirror/upstreams/MIRROR.example:8443", admin, "", nil); status != 204 {
		t.Fatalf("delete = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/mirror/upstreams/mirror.example:8443", admin, "", nil)
	if status != 404 || !strings.Contains(string(raw), "mirror upstream mirror.example:8443 not found") {
		t.Fatalf("after delete = %d %s", status, raw)
	}
	if status, _ := apiDo(t, s, "DELETE", "/api/v1/mirror/upstreams/mirror.example:8443", admin, "", nil); status != 404 {
		t.Fatalf("second delete = %d, want 404", status)
	}
	// The default port is no part of the host: this is registry.terraform.io.
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/mirror/upstreams/Registry.Terraform.IO:443", admin, "", nil); status != 204 {
		t.Fatalf("delete a default = %d %s", status, raw)
	}

	puts := auditEvents(t, s, "mirror_upstream.put")
	if len(puts) != 3 || puts[2].Target != "mirror.example:8443" ||
		puts[2].Details != "created; service URL https://mirror.example:8443/v1/providers/; own CA certificates; allows hashicorp/*, acme/widget ~> 1.2" ||
		puts[0].Details != "replaced; allows nothing" || puts[0].Actor == "" || puts[0].SourceAddr != "127.0.0.1" {
		t.Fatalf("put events = %+v", puts)
	}
	dels := auditEvents(t, s, "mirror_upstream.delete")
	if len(dels) != 2 || dels[0].Target != "registry.terraform.io" || dels[1].Target != "mirror.example:8443" {
		t.Fatalf("delete events = %+v", dels)
	}
}

// TestMirrorUpstreamValidation sends invalid upstreams: each is refused
// with 400 and a message that says what is wrong, and nothing is stored.
func TestMirrorUpstreamValidation(t *testing.T) {
	s := trovetest.Start(t)
	admin := "Bearer " + s.AdminToken
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	rules := func(n int) string {
		r := make([]string, n)
		for i := range r {
			r[i] = `{"provider": "*/*"}`
		}
		return `{"allow": [` + strings.Join(r, ",") + `]}`
	}
	const privateKey = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIE1r\n-----END PRIVATE KEY-----\n"
	for _, tc := range []struct {
		name, host, body, want string
	}{
		{"host with a scheme", "https:mirror.example", `{}`, "is not a registry host name"},
		{"host with a space", "a%20b", `{}`, "is not a registry host name"},
		{"host with a bad port", "mirror.example:http", `{}`, "is not a registry host name"},
		{"relative service URL", "mirror.example", `{"service_url": "/v1/providers/"}`, "is not an absolute URL"},
		{"service URL of another scheme", "mirror.example", `{"service_url": "ftp://mirror.example/"}`, "the scheme must be https"},
		{"plain http", "mirror.example", `{"service_url": "http://mirror.example/v1/providers/"}`, "http is only allowed for a loopback host"},
		{"service URL with a password", "mirror.example", `{"service_url": "https://u:p@mirror.example/"}`, "no user information"},
		{"service URL with a query", "mirror.example", `{"service_url": "https://mirror.example/?a=b"}`, "no user information, query or fragment"},
		{"no PEM", "mirror.example", `{"ca_certificates": "not a certificate"}`, "holds no PEM certificate"},
		{"a private key", "mirror.example", `{"ca_certificates": ` + quote(string(ca)+privateKey) + `}`, `PEM block 2 is a "PRIVATE KEY", not a CERTIFICATE`},
		{"a broken certificate", "mirror.example", `{"ca_certificates": ` + quote("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") + `}`, "certificate 1 does not parse"},
		{"CA with a tab", "mirror.example", `{"ca_certificates": ` + quote("\t"+string(ca)) + `}`, "CA certificates contains the control character U+0009 at byte 0"},
		{"rule without a type", "mirror.example", `{"allow": [{"provider": "hashicorp"}]}`, `mirror rule "hashicorp": write it as namespace/type`},
		{"rule with a bad namespace", "mirror.example", `{"allow": [{"provider": "-x/aws"}]}`, `mirror rule "-x/aws"`},
		{"rule with a bad constraint", "mirror.example", `{"allow": [{"provider": "*/*", "versions": "soon"}]}`, "is not a version constraint"},
		{"too many rules", "mirror.example", rules(101), "an upstream has at most 100 allow rules, not 101"},
		{"unknown field", "mirror.example", `{"host": "mirror.example"}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := apiDo(t, s, "PUT", "/api/v1/mirror/upstreams/"+tc.host, admin, "application/json", strings.NewReader(tc.body))
			var doc struct{ Errors []string }
			if status != 400 || json.Unmarshal(raw, &doc) != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], tc.want) {
				t.Fatalf("status %d %s, want 400 with %q", status, raw, tc.want)
			}
		})
	}
	// What may pass: loopback over http, the Punycode form of a host
	// (as answered) and 100 rules.
	for _, tc := range []struct{ host, body, wantHost string }{
		{"localhost:9000", `{"service_url": "http://localhost:9000/v1/providers/"}`, "localhost:9000"},
		{"127.0.0.1", `{"service_url": "http://127.0.0.1:8080/"}`, "127.0.0.1"},
		{"loop6.example", `{"service_url": "http://[::1]:8080/"}`, "loop6.example"},
		{"b%C3%BCcher.example", `{}`, "xn--bcher-kva.example"},
		{"xn--bcher-kva.example", rules(100), "xn--bcher-kva.example"},
	} {
		status, raw := apiDo(t, s, "PUT", "/api/v1/mirror/upstreams/"+tc.host, admin, "application/json", strings.NewReader(tc.body))
		if status != 200 && status != 201 || !strings.Contains(string(raw), `"host":"`+tc.wantHost+`"`) {
			t.Fatalf("PUT %s %s = %d %s", tc.host, tc.body, status, raw)
		}
	}
	ups, err := s.Index.ListMirrorUpstreams(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 6 {
		t.Fatalf("stored %d upstreams, want the 2 defaults and 4 valid ones: %+v", len(ups), ups)
	}
}

// TestMirrorUpstreamChangeNotified checks that OnMirrorChange is called
// after each successful change, and not after a refused one or a read.
func TestMirrorUpstreamChangeNotified(t *testing.T) {
	s := trovetest.Start(t)
	calls := 0
	h := api.New(api.Options{Index: s.Index, Auth: auth.NewAuthenticator(s.Index), OnMirrorChange: func() { calls++ }})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		method, path, body string
		status, calls      int
	}{
		{"PUT", "/api/v1/mirror/upstreams/mirror.example", `{"allow": [{"provider": "*/*"}]}`, 201, 1},
		{"GET", "/api/v1/mirror/upstreams/mirror.example", ``, 200, 1},
		{"GET", "/api/v1/mirror/upstreams", ``, 200, 1},
		{"PUT", "/api/v1/mirror/upstreams/mirror.example", `{"allow": [{"provider": "*"}]}`, 400, 1},
		{"PUT", "/api/v1/mirror/upstreams/mirror.example", `{}`, 200, 2},
		{"DELETE", "/api/v1/mirror/upstreams/mirror.example", ``, 204, 3},
		{"DELETE", "/api/v1/mirror/upstreams/mirror.example", ``, 404, 3},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || calls != tc.calls {
			t.Fatalf("%s %s %s = %d with %d calls, want %d with %d", tc.method, tc.path, tc.body, resp.StatusCode, calls, tc.status, tc.calls)
		}
	}
}
