package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of keyless publishing. The trust policies of a namespace are
// managed by its admins; the exchange needs no token: the CI system's ID
// token in the body is the credential.
const (
	RouteTrustPolicies = "/api/v1/namespaces/{namespace}/trust-policies"             // GET list, POST create
	RouteTrustPolicy   = "/api/v1/namespaces/{namespace}/trust-policies/{policy_id}" // GET, DELETE
	RouteOIDCExchange  = "/api/v1/oidc/exchange"                                     // POST: an ID token for a Trove token
)

// TrustPolicy lets the ID tokens of a CI system's OpenID Connect issuer
// be exchanged for short-lived tokens of the namespace (see
// docs/keyless.md).
type TrustPolicy struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	// Issuer is the tokens' iss, compared exactly.
	Issuer string `json:"issuer"`
	// Audience is a value the tokens' aud must contain.
	Audience string `json:"audience"`
	// Conditions map claim names to patterns their values must match:
	// "*" stands for any run of characters, "?" for one, everything else
	// for itself.
	Conditions map[string]string `json:"conditions"`
	// Scope is what the issued tokens may do: "publish" or "read".
	Scope string `json:"scope"`
	// TokenTTLSeconds is how long an issued token lives.
	TokenTTLSeconds int64     `json:"token_ttl_seconds"`
	Description     string    `json:"description"`
	CreatedAt       time.Time `json:"created_at"`
}

// CreateTrustPolicyRequest is the body of POST RouteTrustPolicies.
// Audience defaults to the registry's public URL, Scope to "publish",
// TokenTTLSeconds to 900 (15 minutes; 60 to 3600).
type CreateTrustPolicyRequest struct {
	Issuer          string            `json:"issuer"`
	Audience        string            `json:"audience,omitempty"`
	Conditions      map[string]string `json:"conditions"`
	Scope           string            `json:"scope,omitempty"`
	TokenTTLSeconds int64             `json:"token_ttl_seconds,omitempty"`
	Description     string            `json:"description,omitempty"`
}

// TrustPolicyList is the answer of GET RouteTrustPolicies, ordered by
// creation.
type TrustPolicyList struct {
	Policies []TrustPolicy `json:"trust_policies"`
}

// ExchangeRequest is the body of POST RouteOIDCExchange: a CI system's
// ID token and the namespace whose trust policies are to accept it.
type ExchangeRequest struct {
	Token     string `json:"token"`
	Namespace string `json:"namespace"`
}

// ExchangeResponse is the answer of POST RouteOIDCExchange: a token of
// the namespace (its secret) and what it may do until when.
type ExchangeResponse struct {
	Token     string    `json:"token"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Namespace string    `json:"namespace"`
	Scopes    []string  `json:"scopes"`
	// PolicyID is the trust policy that accepted the ID token.
	PolicyID string `json:"policy_id"`
}

// Validate checks the limits of the request's fields: the number of
// conditions, the lengths, and their text (registry.CheckText). The
// server checks their meaning.
func (r CreateTrustPolicyRequest) Validate() error {
	if len(r.Conditions) > registry.MaxTrustConditions {
		return registry.Errorf(registry.Invalid, "a trust policy has at most %d conditions, not %d", registry.MaxTrustConditions, len(r.Conditions))
	}
	for name, pattern := range r.Conditions {
		if err := firstError(registry.ClaimNameLimit.CheckText(name), registry.ClaimPatternLimit.CheckText(pattern)); err != nil {
			return err
		}
	}
	return firstError(registry.IssuerLimit.CheckText(r.Issuer), registry.AudienceLimit.CheckText(r.Audience),
		registry.ScopeLimit.Check(r.Scope), registry.DescriptionLimit.CheckText(r.Description))
}

// Validate checks the namespace's length and the token's size (at most
// registry.MaxIDTokenBytes, TooLarge beyond).
func (r ExchangeRequest) Validate() error {
	if len(r.Token) > registry.MaxIDTokenBytes {
		return registry.Errorf(registry.TooLarge, "the ID token is %d bytes, more than the %d an ID token may have", len(r.Token), registry.MaxIDTokenBytes)
	}
	if r.Token == "" {
		return registry.Errorf(registry.Invalid, "token is missing: send the CI system's ID token (a JWT)")
	}
	if r.Namespace == "" {
		return registry.Errorf(registry.Invalid, "namespace is missing: name the namespace whose trust policies accept the token")
	}
	return registry.NamespaceLimit.Check(r.Namespace)
}
