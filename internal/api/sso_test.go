package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestSSOManagement creates, reads, replaces and deletes an identity
// provider and its role mappings as a global admin, checks the audit
// events, and that nobody else may read them.
func TestSSOManagement(t *testing.T) {
	s := trovetest.Start(t)
	ctx := t.Context()
	c, err := client.New(s.URL, s.AdminToken, client.WithHTTPClient(s.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	req := apispec.PutIdentityProviderRequest{Issuer: "https://idp.example.com/realms/corp", ClientID: "trove",
		ClientSecretEnv: "TROVE_OIDC_SECRET_CORP", Scopes: []string{"profile", "groups"}}
	p, err := c.PutIdentityProvider(ctx, "corp", req)
	if err != nil || p.Name != "corp" || p.RedirectURI != s.URL+"/oauth/sso/corp/callback" || len(p.Scopes) != 2 {
		t.Fatalf("PutIdentityProvider = %+v, %v", p, err)
	}
	req.DisplayName = "Corp"
	if p2, err := c.PutIdentityProvider(ctx, "corp", req); err != nil || p2.DisplayName != "Corp" || !p2.CreatedAt.Equal(p.CreatedAt) {
		t.Errorf("replace = %+v, %v", p2, err)
	}
	for name, bad := range map[string]apispec.PutIdentityProviderRequest{
		"http issuer":           {Issuer: "http://idp.example.com", ClientID: "x"},
		"no client":             {Issuer: "https://idp.example.com"},
		"other secret variable": {Issuer: "https://idp.example.com", ClientID: "x", ClientSecretEnv: "TROVE_POSTGRES_DSN"},
	} {
		if _, err := c.PutIdentityProvider(ctx, "corp", bad); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}
	m, err := c.CreateRoleMapping(ctx, apispec.CreateRoleMappingRequest{Provider: "corp", Claim: "groups", Value: "platform", Namespace: "acme", Role: "publisher"})
	if err != nil || m.ID == 0 {
		t.Fatalf("CreateRoleMapping = %+v, %v", m, err)
	}
	if _, err := c.CreateRoleMapping(ctx, apispec.CreateRoleMappingRequest{Provider: "corp", Claim: "groups", Value: "x", Namespace: "missing", Role: "reader"}); !client.IsNotFound(err) {
		t.Errorf("mapping to a missing namespace: %v, want NotFound", err)
	}
	if _, err := c.CreateRoleMapping(ctx, apispec.CreateRoleMappingRequest{Provider: "corp", Claim: "groups", Value: "ops", Namespace: "*", Role: "admin"}); err != nil {
		t.Errorf("global admin mapping: %v", err)
	}
	ms, err := c.ListRoleMappings(ctx, "corp")
	if err != nil || len(ms) != 2 {
		t.Errorf("ListRoleMappings = %+v, %v", ms, err)
	}
	// A namespace admin may not see or change them.
	tok, err := c.CreateToken(ctx, apispec.CreateTokenRequest{Namespaces: []string{"acme"}, Scopes: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := client.New(s.URL, tok.Secret, client.WithHTTPClient(s.HTTPClient()))
	if _, err := nc.ListIdentityProviders(ctx); !client.IsForbidden(err) {
		t.Errorf("namespace admin lists providers: %v, want Forbidden", err)
	}
	if _, err := nc.ListRoleMappings(ctx, ""); !client.IsForbidden(err) {
		t.Errorf("namespace admin lists mappings: %v, want Forbidden", err)
	}
	if err := c.DeleteRoleMapping(ctx, m.ID); err != nil {
		t.Error(err)
	}
	if _, err := c.GetRoleMapping(ctx, m.ID); !client.IsNotFound(err) {
		t.Errorf("deleted mapping: %v", err)
	}
	if err := c.DeleteIdentityProvider(ctx, "corp"); err != nil {
		t.Error(err)
	}
	if ms, _ := c.ListRoleMappings(ctx, ""); len(ms) != 0 {
		t.Errorf("mappings after deleting the provider: %+v", ms)
	}
	for _, action := range []string{"identity_provider.put", "identity_provider.delete", "role_mapping.create", "role_mapping.delete"} {
		if es, err := c.ListAudit(ctx, client.AuditQuery{Action: action}); err != nil || len(es) == 0 {
			t.Errorf("no %s audited (%v)", action, err)
		}
	}
}

// TestPasswordsOff refuses to set passwords through the API while the
// admin token keeps working.
func TestPasswordsOff(t *testing.T) {
	s := trovetest.Start(t, trovetest.Options{NoLocalPasswords: true})
	c, err := client.New(s.URL, s.AdminToken, client.WithHTTPClient(s.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateUser(t.Context(), apispec.CreateUserRequest{Name: "bob", Password: "correct horse battery"}); !client.IsForbidden(err) {
		t.Errorf("creating a user with a password: %v, want Forbidden", err)
	}
	if _, err := c.CreateUser(t.Context(), apispec.CreateUserRequest{Name: "bob"}); err != nil {
		t.Errorf("creating a user without a password (the admin token works): %v", err)
	}
}

// TestSSOIssuerChecked: setting a provider whose discovery document
// names another issuer is refused with both values, nothing stored; one
// whose document cannot be read is stored with a warning.
func TestSSOIssuerChecked(t *testing.T) {
	s := trovetest.Start(t)
	ctx := t.Context()
	c, err := client.New(s.URL, s.AdminToken, client.WithHTTPClient(s.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	var issuer string // what the discovery document names
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": issuer})
	}))
	defer idp.Close()
	issuer = idp.URL + "/realms/corp"

	_, err = c.PutIdentityProvider(ctx, "corp", apispec.PutIdentityProviderRequest{Issuer: issuer + "/", ClientID: "trove"})
	if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `names "`+issuer+`"`) ||
		!strings.Contains(err.Error(), `configured "`+issuer+`/"`) || !strings.Contains(err.Error(), "trailing slash") {
		t.Errorf("an issuer with a trailing slash the provider lacks: %v, want 400 naming both values and the slash", err)
	}
	if _, err := c.GetIdentityProvider(ctx, "corp"); !client.IsNotFound(err) {
		t.Errorf("after the refusal: %v, want NotFound (nothing stored)", err)
	}
	p, err := c.PutIdentityProvider(ctx, "corp", apispec.PutIdentityProviderRequest{Issuer: issuer, ClientID: "trove"})
	if err != nil || len(p.Warnings) != 0 {
		t.Errorf("the matching issuer: %+v, %v; want stored without warnings", p, err)
	}
	idp.Close()
	p, err = c.PutIdentityProvider(ctx, "corp", apispec.PutIdentityProviderRequest{Issuer: issuer, ClientID: "trove2"})
	if err != nil || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "not checked") || p.ClientID != "trove2" {
		t.Errorf("an unreachable provider: %+v, %v; want stored with a warning", p, err)
	}
}
