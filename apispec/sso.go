package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of single sign-on: identity providers and their role mappings.
// Only global admins may read or change them.
const (
	RouteIdentityProviders = "/api/v1/sso/providers"        // GET list
	RouteIdentityProvider  = "/api/v1/sso/providers/{name}" // GET, PUT (create or replace), DELETE
	RouteRoleMappings      = "/api/v1/sso/mappings"         // GET list (?provider=), POST create
	RouteRoleMapping       = "/api/v1/sso/mappings/{id}"    // GET, DELETE
	QueryProvider          = "provider"                     // filter of RouteRoleMappings
	SSOCallbackPattern     = "/oauth/sso/{name}/callback"   // the redirect URI to register at a provider, under the public URL
	SSOStartPattern        = "/oauth/sso/{name}/start"      // where sign-in buttons lead
)

// IdentityProvider is an OpenID Connect provider people sign in with.
type IdentityProvider struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Issuer      string `json:"issuer"`
	ClientID    string `json:"client_id"`
	// ClientSecretEnv names the environment variable (of every replica)
	// holding the client secret; "" for a public client (PKCE only). The
	// secret itself never passes through the API.
	ClientSecretEnv string   `json:"client_secret_env"`
	Scopes          []string `json:"scopes"`
	UsernameClaim   string   `json:"username_claim"`
	// RedirectURI is what to register at the provider.
	RedirectURI string    `json:"redirect_uri"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Warnings, in the answer of a PUT only, say what Trove could not
	// check, such as an issuer whose discovery document it could not read.
	Warnings []string `json:"warnings,omitempty"`
}

// PutIdentityProviderRequest is the body of PUT RouteIdentityProvider:
// the provider's whole configuration.
type PutIdentityProviderRequest struct {
	DisplayName     string   `json:"display_name,omitempty"`
	Issuer          string   `json:"issuer"`
	ClientID        string   `json:"client_id"`
	ClientSecretEnv string   `json:"client_secret_env,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	UsernameClaim   string   `json:"username_claim,omitempty"`
}

// provider returns the request as the provider name, for Validate (the
// server makes its own, in internal/api).
func (r PutIdentityProviderRequest) provider(name string) registry.IdentityProvider {
	return registry.IdentityProvider{Name: name, DisplayName: r.DisplayName, Issuer: r.Issuer, ClientID: r.ClientID,
		ClientSecretEnv: r.ClientSecretEnv, Scopes: r.Scopes, UsernameClaim: r.UsernameClaim}
}

// Validate checks the request's fields as the server does
// (registry.IdentityProvider.Check), with a placeholder name.
func (r PutIdentityProviderRequest) Validate() error {
	return r.provider("x").Check()
}

// IdentityProviderList is the answer of GET RouteIdentityProviders,
// ordered by name.
type IdentityProviderList struct {
	Providers []IdentityProvider `json:"providers"`
}

// RoleMapping is a rule of an identity provider: a person whose ID token
// has Value in Claim gets Role in Namespace ("*": the global admin flag,
// Role admin), re-evaluated at every sign-in.
type RoleMapping struct {
	ID        int64     `json:"id"`
	Provider  string    `json:"provider"`
	Claim     string    `json:"claim"`
	Value     string    `json:"value"`
	Namespace string    `json:"namespace"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// CreateRoleMappingRequest is the body of POST RouteRoleMappings.
type CreateRoleMappingRequest struct {
	Provider  string `json:"provider"`
	Claim     string `json:"claim"`
	Value     string `json:"value"`
	Namespace string `json:"namespace"`
	Role      string `json:"role"`
}

// mapping returns the request as a mapping, for Validate.
func (r CreateRoleMappingRequest) mapping() registry.RoleMapping {
	return registry.RoleMapping{Provider: r.Provider, Claim: r.Claim, Value: r.Value, Namespace: r.Namespace, Role: registry.Role(r.Role)}
}

// Validate checks the request's fields as the server does
// (registry.RoleMapping.Check).
func (r CreateRoleMappingRequest) Validate() error { return r.mapping().Check() }

// RoleMappingList is the answer of GET RouteRoleMappings, ordered by ID.
type RoleMappingList struct {
	Mappings []RoleMapping `json:"mappings"`
}
