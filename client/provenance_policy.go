package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// GetProvenancePolicy returns the provenance policy of a namespace; a
// namespace without one is not found (IsNotFound).
func (c *Client) GetProvenancePolicy(ctx context.Context, namespace string) (apispec.ProvenancePolicy, error) {
	var out apispec.ProvenancePolicy
	err := c.do(ctx, http.MethodGet, apispec.RouteProvenancePolicy, params("namespace", namespace), nil, nil, &out)
	return out, err
}

// SetProvenancePolicy creates or replaces the provenance policy of a
// namespace (admin rights).
func (c *Client) SetProvenancePolicy(ctx context.Context, namespace string, req apispec.ProvenancePolicyRequest) (apispec.ProvenancePolicy, error) {
	var out apispec.ProvenancePolicy
	err := c.do(ctx, http.MethodPut, apispec.RouteProvenancePolicy, params("namespace", namespace), nil, req, &out)
	return out, err
}

// DeleteProvenancePolicy removes the provenance policy of a namespace
// (admin rights).
func (c *Client) DeleteProvenancePolicy(ctx context.Context, namespace string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteProvenancePolicy, params("namespace", namespace), nil, nil, nil)
}
