package client

import (
	"context"
	"net/http"
	"net/url"

	"trove.dev/trove/apispec"
)

// DeleteOption changes a delete.
type DeleteOption func(url.Values)

// InUse deletes what consumers downloaded in the last apispec.InUseDays
// days too; without it such a delete is refused (a Conflict naming them).
func InUse() DeleteOption {
	return func(q url.Values) { q.Set(apispec.InUseParam, "true") }
}

// deleteQuery is the query of a delete of address, confirmed, with opts.
func deleteQuery(address string, opts []DeleteOption) url.Values {
	q := url.Values{apispec.ConfirmParam: {address}}
	for _, o := range opts {
		o(q)
	}
	return q
}

// DeleteProviderVersion deletes one provider version (admin rights on the
// namespace). Its blobs stay until a garbage collection (RunGC) reclaims
// them.
func (c *Client) DeleteProviderVersion(ctx context.Context, namespace, typ, version string, opts ...DeleteOption) error {
	q := deleteQuery(namespace+"/"+typ+"/"+version, opts)
	return c.do(ctx, http.MethodDelete, apispec.RouteProviderVersion,
		params("namespace", namespace, "type", typ, "version", version), q, nil, nil)
}

// DeleteProvider deletes every version of a provider and returns how
// many there were.
func (c *Client) DeleteProvider(ctx context.Context, namespace, typ string, opts ...DeleteOption) (int, error) {
	q := deleteQuery(namespace+"/"+typ, opts)
	var out apispec.DeleteResult
	err := c.do(ctx, http.MethodDelete, apispec.RouteProvider, params("namespace", namespace, "type", typ), q, nil, &out)
	return out.Versions, err
}

// DeleteModule deletes every version of a module and returns how many
// there were.
func (c *Client) DeleteModule(ctx context.Context, namespace, name, system string, opts ...DeleteOption) (int, error) {
	q := deleteQuery(namespace+"/"+name+"/"+system, opts)
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
