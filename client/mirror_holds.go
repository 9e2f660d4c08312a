package client

import (
	"context"
	"net/http"
	"net/url"

	"trove.dev/trove/apispec"
)

// mirroredParams names a mirrored provider in a route.
func mirroredParams(host, namespace, typ string, more ...string) []string {
	return append(params("host", host, "namespace", namespace, "type", typ), more...)
}

// GetMirrorProvider returns the versions of a mirrored provider with
// whether the mirror serves each now and why not, and its approvals and
// denials (global admins).
func (c *Client) GetMirrorProvider(ctx context.Context, host, namespace, typ string) (apispec.MirrorProvider, error) {
	var out apispec.MirrorProvider
	err := c.do(ctx, http.MethodGet, apispec.RouteMirrorProvider, mirroredParams(host, namespace, typ), nil, nil, &out)
	return out, err
}

// ApproveMirroredVersion releases one version of a mirrored provider
// before its minimum age (global admins).
func (c *Client) ApproveMirroredVersion(ctx context.Context, host, namespace, typ, version, reason string) (apispec.MirrorDecision, error) {
	var out apispec.MirrorDecision
	err := c.do(ctx, http.MethodPut, apispec.RouteMirrorApproval, mirroredParams(host, namespace, typ, "version", version), nil,
		apispec.MirrorApprovalRequest{Reason: reason}, &out)
	return out, err
}

// UnapproveMirroredVersion withdraws an approval (global admins).
func (c *Client) UnapproveMirroredVersion(ctx context.Context, host, namespace, typ, version string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteMirrorApproval, mirroredParams(host, namespace, typ, "version", version), nil, nil, nil)
}

// DenyMirroredVersions keeps the versions of a mirrored provider that
// versions (a version or a constraint) matches from being served (global
// admins).
func (c *Client) DenyMirroredVersions(ctx context.Context, host, namespace, typ, versions, reason string) (apispec.MirrorDecision, error) {
	var out apispec.MirrorDecision
	err := c.do(ctx, http.MethodPut, apispec.RouteMirrorDenials, mirroredParams(host, namespace, typ), nil,
		apispec.MirrorDenialRequest{Versions: versions, Reason: reason}, &out)
	return out, err
}

// UndenyMirroredVersions withdraws the denial of versions, written as it
// was given (global admins).
func (c *Client) UndenyMirroredVersions(ctx context.Context, host, namespace, typ, versions string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteMirrorDenials, mirroredParams(host, namespace, typ),
		url.Values{apispec.MirrorDenialVersionsParam: {versions}}, nil, nil)
}
