package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// ListTrustPolicies returns the trust policies of a namespace, ordered by
// creation (its admins).
func (c *Client) ListTrustPolicies(ctx context.Context, namespace string) ([]apispec.TrustPolicy, error) {
	var out apispec.TrustPolicyList
	err := c.do(ctx, http.MethodGet, apispec.RouteTrustPolicies, params("namespace", namespace), nil, nil, &out)
	return out.Policies, err
}

// CreateTrustPolicy creates a trust policy of a namespace (its admins)
// and returns it with its ID and defaults.
func (c *Client) CreateTrustPolicy(ctx context.Context, namespace string, req apispec.CreateTrustPolicyRequest) (apispec.TrustPolicy, error) {
	var out apispec.TrustPolicy
	err := c.do(ctx, http.MethodPost, apispec.RouteTrustPolicies, params("namespace", namespace), nil, req, &out)
	return out, err
}

// GetTrustPolicy returns one trust policy of a namespace (its admins).
func (c *Client) GetTrustPolicy(ctx context.Context, namespace, id string) (apispec.TrustPolicy, error) {
	var out apispec.TrustPolicy
	err := c.do(ctx, http.MethodGet, apispec.RouteTrustPolicy, params("namespace", namespace, "policy_id", id), nil, nil, &out)
	return out, err
}

// DeleteTrustPolicy deletes a trust policy of a namespace (its admins);
// tokens issued under it live on until they expire.
func (c *Client) DeleteTrustPolicy(ctx context.Context, namespace, id string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteTrustPolicy, params("namespace", namespace, "policy_id", id), nil, nil, nil)
}

// ExchangeIDToken exchanges a CI system's OpenID Connect ID token for a
// short-lived token of namespace, under the namespace's trust policies.
// It sends no token of the client's: the ID token is the credential.
func (c *Client) ExchangeIDToken(ctx context.Context, namespace, idToken string) (apispec.ExchangeResponse, error) {
	var out apispec.ExchangeResponse
	anon := *c
	anon.token = ""
	err := anon.do(ctx, http.MethodPost, apispec.RouteOIDCExchange, nil, nil, apispec.ExchangeRequest{Token: idToken, Namespace: namespace}, &out)
	return out, err
}

// WithToken returns a client of the same server and options that sends
// token instead.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.token = token
	return &cp
}
