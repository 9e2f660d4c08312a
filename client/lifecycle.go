package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// DeprecateProviderVersion deprecates a provider version (publish rights
// on the namespace): Terraform and OpenTofu warn on every init that
// queries the provider. Deprecating it again replaces reason and link.
// It answers the version as it is afterwards.
func (c *Client) DeprecateProviderVersion(ctx context.Context, namespace, typ, version string, req apispec.DeprecateRequest) (apispec.ProviderVersion, error) {
	var out apispec.ProviderVersion
	err := c.do(ctx, http.MethodPut, apispec.RouteProviderDeprecation, params("namespace", namespace, "type", typ, "version", version), nil, req, &out)
	return out, err
}

// UndeprecateProviderVersion clears the deprecation of a provider version
// (publish rights); a version that is not deprecated is not an error.
func (c *Client) UndeprecateProviderVersion(ctx context.Context, namespace, typ, version string) (apispec.ProviderVersion, error) {
	var out apispec.ProviderVersion
	err := c.do(ctx, http.MethodDelete, apispec.RouteProviderDeprecation, params("namespace", namespace, "type", typ, "version", version), nil, nil, &out)
	return out, err
}

// RevokeProviderVersion revokes a provider version (admin rights on the
// namespace): it leaves the version lists, so new resolutions skip it.
func (c *Client) RevokeProviderVersion(ctx context.Context, namespace, typ, version string, req apispec.RevokeRequest) (apispec.ProviderVersion, error) {
	var out apispec.ProviderVersion
	err := c.do(ctx, http.MethodPut, apispec.RouteProviderRevocation, params("namespace", namespace, "type", typ, "version", version), nil, req, &out)
	return out, err
}

// RestoreProviderVersion clears the revocation of a provider version
// (admin rights); a version that is not revoked is not an error.
func (c *Client) RestoreProviderVersion(ctx context.Context, namespace, typ, version string) (apispec.ProviderVersion, error) {
	var out apispec.ProviderVersion
	err := c.do(ctx, http.MethodDelete, apispec.RouteProviderRevocation, params("namespace", namespace, "type", typ, "version", version), nil, nil, &out)
	return out, err
}

// DeprecateModuleVersion deprecates a module version (publish rights).
func (c *Client) DeprecateModuleVersion(ctx context.Context, namespace, name, system, version string, req apispec.DeprecateRequest) (apispec.ModuleVersion, error) {
	var out apispec.ModuleVersion
	err := c.do(ctx, http.MethodPut, apispec.RouteModuleDeprecation,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil, req, &out)
	return out, err
}

// UndeprecateModuleVersion clears the deprecation of a module version
// (publish rights).
func (c *Client) UndeprecateModuleVersion(ctx context.Context, namespace, name, system, version string) (apispec.ModuleVersion, error) {
	var out apispec.ModuleVersion
	err := c.do(ctx, http.MethodDelete, apispec.RouteModuleDeprecation,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil, nil, &out)
	return out, err
}

// RevokeModuleVersion revokes a module version (admin rights).
func (c *Client) RevokeModuleVersion(ctx context.Context, namespace, name, system, version string, req apispec.RevokeRequest) (apispec.ModuleVersion, error) {
	var out apispec.ModuleVersion
	err := c.do(ctx, http.MethodPut, apispec.RouteModuleRevocation,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil, req, &out)
	return out, err
}

// RestoreModuleVersion clears the revocation of a module version (admin
// rights).
func (c *Client) RestoreModuleVersion(ctx context.Context, namespace, name, system, version string) (apispec.ModuleVersion, error) {
	var out apispec.ModuleVersion
	err := c.do(ctx, http.MethodDelete, apispec.RouteModuleRevocation,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil, nil, &out)
	return out, err
}
