package client

import (
	"context"
	"net/http"
	"net/url"

	"trove.dev/trove/apispec"
)

// DeleteProviderVersion deletes one provider version (admin rights on the
// namespace). Its blobs stay until a garbage collection (RunGC) reclaims
// them.
func (c *Client) DeleteProviderVersion(ctx context.Context, namespace, typ, version string) error {
	q := url.Values{apispec.ConfirmParam: {namespace + "/" + typ + "/" + version}}
	return c.do(ctx, http.MethodDelete, apispec.RouteProviderVersion,
		params("namespace", namespace, "type", typ, "version", version), q, nil, nil)
}

// DeleteProvider deletes every version of a provider and returns how
// many there were.
func (c *Client) DeleteProvider(ctx context.Context, namespace, typ string) (int, error) {
	q := url.Values{apispec.ConfirmParam: {namespace + "/" + typ}}
	var out apispec.DeleteResult
	err := c.do(ctx, http.MethodDelete, apispec.RouteProvider, params("namespace", namespace, "type", typ), q, nil, &out)
	return out.Versions, err
}

// DeleteModule deletes every version of a module and returns how many
// there were.
func (c *Client) DeleteModule(ctx context.Context, namespace, name, system string) (int, error) {
	q := url.Values{apispec.ConfirmParam: {namespace + "/" + name + "/" + system}}
	var out apispec.DeleteResult
	err := c.do(ctx, http.MethodDelete, apispec.RouteModule,
		params("namespace", namespace, "name", name, "system", system), q, nil, &out)
	return out.Versions, err
}

// RunGC runs a garbage collection of the blobs no version references any
// more (global admins); a dry run only reports them.
func (c *Client) RunGC(ctx context.Context, req apispec.GCRequest) (apispec.GCReport, error) {
	var out apispec.GCReport
	err := c.do(ctx, http.MethodPost, apispec.RouteGC, nil, nil, req, &out)
	return out, err
}

// GetRetentionRule returns the retention rule of a namespace (NotFound
// without one).
func (c *Client) GetRetentionRule(ctx context.Context, namespace string) (apispec.RetentionRule, error) {
	var out apispec.RetentionRule
	err := c.do(ctx, http.MethodGet, apispec.RouteRetention, params("namespace", namespace), nil, nil, &out)
	return out, err
}

// PutRetentionRule creates or replaces the retention rule of a namespace
// (admin rights on it).
func (c *Client) PutRetentionRule(ctx context.Context, namespace string, req apispec.RetentionRequest) (apispec.RetentionRule, error) {
	var out apispec.RetentionRule
	err := c.do(ctx, http.MethodPut, apispec.RouteRetention, params("namespace", namespace), nil, req, &out)
	return out, err
}

// DeleteRetentionRule removes the retention rule of a namespace.
func (c *Client) DeleteRetentionRule(ctx context.Context, namespace string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteRetention, params("namespace", namespace), nil, nil, nil)
}
