package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// ListMirrorUpstreams returns the provider mirror's upstream registries,
// ordered by host (global admins).
func (c *Client) ListMirrorUpstreams(ctx context.Context) ([]apispec.MirrorUpstream, error) {
	var out apispec.MirrorUpstreamList
	err := c.do(ctx, http.MethodGet, apispec.RouteMirrorUpstreams, nil, nil, nil, &out)
	return out.Upstreams, err
}

// GetMirrorUpstream returns one upstream registry of the provider mirror
// (global admins). The server normalizes host.
func (c *Client) GetMirrorUpstream(ctx context.Context, host string) (apispec.MirrorUpstream, error) {
	var out apispec.MirrorUpstream
	err := c.do(ctx, http.MethodGet, apispec.RouteMirrorUpstream, params("host", host), nil, nil, &out)
	return out, err
}

// PutMirrorUpstream creates the upstream registry host of the provider
// mirror, or replaces its whole configuration with req (global admins),
// and returns it as stored, its host normalized.
func (c *Client) PutMirrorUpstream(ctx context.Context, host string, req apispec.PutMirrorUpstreamRequest) (apispec.MirrorUpstream, error) {
	var out apispec.MirrorUpstream
	err := c.do(ctx, http.MethodPut, apispec.RouteMirrorUpstream, params("host", host), nil, req, &out)
	return out, err
}

// DeleteMirrorUpstream removes an upstream registry of the provider
// mirror (global admins); what was mirrored from it stays.
func (c *Client) DeleteMirrorUpstream(ctx context.Context, host string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteMirrorUpstream, params("host", host), nil, nil, nil)
}
