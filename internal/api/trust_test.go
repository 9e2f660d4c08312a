package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/ciissuer"
	"trove.dev/trove/internal/ciissuer/ciissuertest"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// createPolicy creates a trust policy of acme for the issuer through the
// API as acme's admin and returns it.
func createPolicy(t *testing.T, s *trovetest.Server, tokens map[string]string, body string) apispec.TrustPolicy {
	t.Helper()
	status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/trust-policies", tokens[acmeAdmin], "application/json", strings.NewReader(body))
	if status != http.StatusCreated {
		t.Fatalf("create trust policy = %d %s", status, raw)
	}
	var p apispec.TrustPolicy
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// exchange posts an ID token for namespace and returns the status and
// body.
func exchange(t *testing.T, s *trovetest.Server, namespace, jwt string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(apispec.ExchangeRequest{Token: jwt, Namespace: namespace})
	return apiDo(t, s, "POST", "/api/v1/oidc/exchange", "", "application/json", bytes.NewReader(body))
}

func TestTrustPolicyManagement(t *testing.T) {
	s, tokens := setup(t)
	body := `{"issuer": "https://token.actions.githubusercontent.com", "conditions": {"repository": "acme/infra", "ref": "refs/tags/v*"}, "description": "releases"}`
	for _, p := range []string{none, malformed, expired, acmeRead, acmePublish, otherAdmin, globalRead, userReader, userPublisher, userOther} {
		status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/trust-policies", tokens[p], "application/json", strings.NewReader(body))
		if status != http.StatusUnauthorized && status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s: create = %d %s; want 401, 403 or 404", p, status, raw)
		}
		status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/trust-policies", tokens[p], "", nil)
		if status != http.StatusUnauthorized && status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s: list = %d %s; want 401, 403 or 404", p, status, raw)
		}
	}
	p := createPolicy(t, s, tokens, body)
	if !strings.HasPrefix(p.ID, "tp_") || p.Namespace != "acme" || p.Audience != s.URL || p.Scope != "publish" ||
		p.TokenTTLSeconds != 900 || p.Conditions["ref"] != "refs/tags/v*" || p.Description != "releases" {
		t.Errorf("created %+v; want the defaults: audience %s, scope publish, 900 s", p, s.URL)
	}
	status, raw := apiDo(t, s, "GET", "/api/v1/namespaces/acme/trust-policies/"+p.ID, tokens[userAdmin], "", nil)
	if status != http.StatusOK || !strings.Contains(string(raw), p.ID) {
		t.Errorf("get = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/other/trust-policies/"+p.ID, tokens[otherAdmin], "", nil)
	if status != http.StatusNotFound {
		t.Errorf("get through another namespace = %d %s; want 404", status, raw)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"issuer": "https://token.actions.githubusercontent.com", "conditions": {}}`, "would trust every pipeline of the issuer"},
		{`{"issuer": "https://token.actions.githubusercontent.com"}`, "would trust every pipeline of the issuer"},
		{`{"issuer": "http://issuer.example", "conditions": {"repository": "a/b"}}`, "http is only allowed for a loopback host"},
		{`{"issuer": "https://gitlab.com", "conditions": {"project_path": "*"}}`, "matches every value"},
		{`{"issuer": "https://gitlab.com", "conditions": {"project_path": "a/b"}, "scope": "admin"}`, "publish or read"},
		{`{"issuer": "https://gitlab.com", "conditions": {"project_path": "a/b"}, "token_ttl_seconds": 7200}`, "between 1m0s and 1h0m0s"},
		{`{"issuer": "https://gitlab.com", "conditions": {"project_path": "a/b"}, "unknown": 1}`, "unknown field"},
		// 900 + 2^55 seconds: as nanoseconds it wraps around to 900 s.
		{`{"issuer": "https://gitlab.com", "conditions": {"project_path": "a/b"}, "token_ttl_seconds": 36028797018964868}`, "between 1m0s and 1h0m0s"},
	} {
		status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/trust-policies", tokens[acmeAdmin], "application/json", strings.NewReader(tc.body))
		if status != http.StatusBadRequest || !strings.Contains(string(raw), tc.want) {
			t.Errorf("create %s = %d %s; want 400 with %q", tc.body, status, raw, tc.want)
		}
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/trust-policies", tokens[acmeAdmin], "", nil)
	var list apispec.TrustPolicyList
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil || len(list.Policies) != 1 {
		t.Errorf("list = %d %s; want the one policy", status, raw)
	}
	status, raw = apiDo(t, s, "DELETE", "/api/v1/namespaces/acme/trust-policies/tp_0000000000000000", tokens[acmeAdmin], "", nil)
	if status != http.StatusNotFound {
		t.Errorf("delete a missing policy = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "DELETE", "/api/v1/namespaces/acme/trust-policies/..%2Fkeys", tokens[acmeAdmin], "", nil)
	if status != http.StatusBadRequest {
		t.Errorf("delete a hostile ID = %d %s; want 400", status, raw)
	}
	status, raw = apiDo(t, s, "DELETE", "/api/v1/namespaces/acme/trust-policies/"+p.ID, tokens[acmeAdmin], "", nil)
	if status != http.StatusNoContent {
		t.Errorf("delete = %d %s", status, raw)
	}
	for _, action := range []string{registry.AuditTrustPolicyCreate, registry.AuditTrustPolicyDelete} {
		events, err := s.Index.ListAudit(t.Context(), registry.AuditFilter{Action: action, Namespace: "acme"})
		if err != nil || len(events) != 1 || events[0].Target != p.ID {
			t.Errorf("audit %s = %+v, %v", action, events, err)
		}
	}
}

// TestExchange runs the exchange against the issuer process: the right
// token gets a publish token of acme that publishes there and nowhere
// else; every refusal of the issue is 401 with its reason, audited
// without the token.
func TestExchange(t *testing.T) {
	s, tokens := setup(t)
	iss := ciissuertest.Start(t)
	p := createPolicy(t, s, tokens, fmt.Sprintf(`{"issuer": %q, "conditions": {"repository": "acme/infra", "ref": "refs/tags/v*"}, "token_ttl_seconds": 600}`, iss.URL))
	mint := func(kv ...string) string {
		q := url.Values{ciissuer.ParamAudience: {s.URL}}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return iss.Mint(t, q)
	}
	hs := mint(ciissuer.ParamMode, ciissuer.ModeHS256)
	for _, tc := range []struct {
		name, namespace, token string
		status                 int
		want                   string
	}{
		{"wrong audience", "acme", iss.Mint(t, url.Values{ciissuer.ParamAudience: {"https://github.com/acme"}}), 401, "the ID token's audience (aud) is https://github.com/acme"},
		{"wrong repository", "acme", mint(ciissuer.ParamRepository, "evil/infra"), 401, "claim repository=evil/infra is not allowed"},
		{"expired", "acme", mint(ciissuer.ParamExp, "-300"), 401, "the ID token expired at"},
		{"not yet valid", "acme", mint(ciissuer.ParamNbf, "900", ciissuer.ParamExp, "1200"), 401, "the ID token is not valid before"},
		{"foreign issuer", "acme", mint(ciissuer.ParamMode, ciissuer.ModeForeignIssuer), 401, "trusts ID tokens of issuer https://foreign-issuer.example"},
		{"alg none", "acme", mint(ciissuer.ParamMode, ciissuer.ModeNone), 401, "ID tokens signed with none are refused"},
		{"key confusion", "acme", hs, 401, "ID tokens signed with HS256 are refused"},
		{"unknown signing key", "acme", mint(ciissuer.ParamMode, ciissuer.ModeForeignKey), 401, "does not verify with the keys of"},
		{"missing jti", "acme", mint(ciissuer.ParamJTI, "-"), 401, "has no ID (jti claim)"},
		{"too large", "acme", strings.Repeat("x", registry.MaxIDTokenBytes+1), 413, "more than the 16384 an ID token may have"},
		{"malformed", "acme", "eyJhbGciOiJSUzI1NiJ9.e30", 401, "is not a JWT"},
		{"namespace without policies", "other", mint(), 401, "no trust policy of namespace other trusts"},
		{"namespace that does not exist", "ghost", mint(), 401, "no trust policy of namespace ghost trusts"},
		{"invalid namespace", "../acme", mint(), 400, "namespace"},
		{"no namespace", "", mint(), 400, "namespace is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := exchange(t, s, tc.namespace, tc.token)
			if status != tc.status || !strings.Contains(string(raw), tc.want) || strings.Contains(string(raw), "trove_") {
				t.Errorf("exchange = %d %s; want %d with %q", status, raw, tc.status, tc.want)
			}
		})
	}
	failures, err := s.Index.ListAudit(t.Context(), registry.AuditFilter{Action: registry.AuditTokenExchangeFails, Namespace: "acme"})
	if err != nil || len(failures) < 9 {
		t.Errorf("%d failures audited in acme (%v), want every refusal of a token for acme", len(failures), err)
	}
	for _, ev := range failures {
		if strings.Contains(ev.Details, "eyJ") || ev.Actor != "anonymous" {
			t.Errorf("failure event %+v holds a token or names an actor", ev)
		}
		if strings.Contains(ev.Details, "evil/infra") && !strings.Contains(ev.Details, "conditions ref=refs/tags/v*, repository=acme/infra") {
			t.Errorf("the audit of a mismatch does not name the policy's conditions for the admins: %s", ev.Details)
		}
	}

	jwt := mint(ciissuer.ParamJTI, "run-42")
	status, raw := exchange(t, s, "acme", jwt)
	var got apispec.ExchangeResponse
	if status != http.StatusOK || json.Unmarshal(raw, &got) != nil {
		t.Fatalf("exchange = %d %s", status, raw)
	}
	if !strings.HasPrefix(got.Token, "trove_") || got.Namespace != "acme" || len(got.Scopes) != 1 || got.Scopes[0] != "publish" || got.PolicyID != p.ID {
		t.Errorf("exchange answer %+v", got)
	}
	if ttl := time.Until(got.ExpiresAt); ttl < 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("token expires in %s, want the policy's 10 minutes", ttl)
	}
	if status, raw := exchange(t, s, "acme", jwt); status != http.StatusUnauthorized || !strings.Contains(string(raw), "was exchanged already") {
		t.Errorf("replayed exchange = %d %s; want 401", status, raw)
	}

	// The token publishes to acme, and nowhere else.
	archive := moduleArchive(t, map[string]string{"main.tf": `variable "x" {}`})
	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0", "Bearer "+got.Token, apispec.ModuleArchiveTarGz, bytes.NewReader(archive))
	if status != http.StatusCreated {
		t.Errorf("publish to acme with the exchanged token = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/other/modules/net/aws/versions/1.0.0", "Bearer "+got.Token, apispec.ModuleArchiveTarGz, bytes.NewReader(archive))
	if status != http.StatusNotFound && status != http.StatusForbidden {
		t.Errorf("publish to another namespace with the exchanged token = %d %s; want 404 or 403", status, raw)
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", "Bearer "+got.Token, "application/json", strings.NewReader(`{"managed": true}`))
	if status != http.StatusForbidden {
		t.Errorf("admin action with the exchanged token = %d %s; want 403", status, raw)
	}

	events, err := s.Index.ListAudit(t.Context(), registry.AuditFilter{Action: registry.AuditTokenExchange, Namespace: "acme"})
	if err != nil || len(events) != 1 || events[0].Target != got.TokenID {
		t.Fatalf("audit of the exchange = %+v, %v", events, err)
	}
	for _, want := range []string{"issuer " + iss.URL, "subject repo:acme/infra:ref:refs/tags/v1.0.0", "repository acme/infra", "ref refs/tags/v1.0.0", "jti run-42", "policy " + p.ID} {
		if !strings.Contains(events[0].Details, want) {
			t.Errorf("exchange audit %q lacks %q", events[0].Details, want)
		}
	}
	if events[0].Actor != "oidc:repo:acme/infra:ref:refs/tags/v1.0.0" {
		t.Errorf("exchange audit actor %q", events[0].Actor)
	}
	tok, err := s.Index.ListTokens(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tok {
		if tk.ID == got.TokenID && (tk.User != "" || !strings.Contains(tk.Description, p.ID)) {
			t.Errorf("issued token %+v: want a service token whose description names %s", tk, p.ID)
		}
	}
}

// TestExchangeRateLimit: the exchange takes no token, so each source
// address gets a burst and then 429 with Retry-After.
func TestExchangeRateLimit(t *testing.T) {
	s := trovetest.Start(t)
	limited := false
	for range 40 {
		status, _ := exchange(t, s, "acme", "not-a-jwt")
		if status == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("40 exchanges from one address were never limited")
	}
}
