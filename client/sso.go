package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/apispec"
)

// ListIdentityProviders returns the identity providers of single
// sign-on, ordered by name (global admins).
func (c *Client) ListIdentityProviders(ctx context.Context) ([]apispec.IdentityProvider, error) {
	var out apispec.IdentityProviderList
	err := c.do(ctx, http.MethodGet, apispec.RouteIdentityProviders, nil, nil, nil, &out)
	return out.Providers, err
}

// GetIdentityProvider returns one identity provider (global admins).
func (c *Client) GetIdentityProvider(ctx context.Context, name string) (apispec.IdentityProvider, error) {
	var out apispec.IdentityProvider
	err := c.do(ctx, http.MethodGet, apispec.RouteIdentityProvider, params("name", name), nil, nil, &out)
	return out, err
}

// PutIdentityProvider creates the identity provider name or replaces its
// whole configuration with req (global admins), and returns it as stored.
func (c *Client) PutIdentityProvider(ctx context.Context, name string, req apispec.PutIdentityProviderRequest) (apispec.IdentityProvider, error) {
	if err := req.Validate(); err != nil {
		return apispec.IdentityProvider{}, err
	}
	var out apispec.IdentityProvider
	err := c.do(ctx, http.MethodPut, apispec.RouteIdentityProvider, params("name", name), nil, req, &out)
	return out, err
}

// DeleteIdentityProvider removes an identity provider and its role
// mappings (global admins); the users it created stay.
func (c *Client) DeleteIdentityProvider(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteIdentityProvider, params("name", name), nil, nil, nil)
}

// ListRoleMappings returns the role mappings of provider ("" for all),
// ordered by ID (global admins).
func (c *Client) ListRoleMappings(ctx context.Context, provider string) ([]apispec.RoleMapping, error) {
	var q url.Values
	if provider != "" {
		q = url.Values{apispec.QueryProvider: {provider}}
	}
	var out apispec.RoleMappingList
	err := c.do(ctx, http.MethodGet, apispec.RouteRoleMappings, nil, q, nil, &out)
	return out.Mappings, err
}

// CreateRoleMapping adds a role mapping (global admins) and returns it
// with its ID.
func (c *Client) CreateRoleMapping(ctx context.Context, req apispec.CreateRoleMappingRequest) (apispec.RoleMapping, error) {
	if err := req.Validate(); err != nil {
		return apispec.RoleMapping{}, err
	}
	var out apispec.RoleMapping
	err := c.do(ctx, http.MethodPost, apispec.RouteRoleMappings, nil, nil, req, &out)
	return out, err
}

// GetRoleMapping returns one role mapping (global admins).
func (c *Client) GetRoleMapping(ctx context.Context, id int64) (apispec.RoleMapping, error) {
	var out apispec.RoleMapping
	err := c.do(ctx, http.MethodGet, apispec.RouteRoleMapping, params("id", strconv.FormatInt(id, 10)), nil, nil, &out)
	return out, err
}

// DeleteRoleMapping removes a role mapping (global admins); the roles it
// granted go at each user's next sign-in.
func (c *Client) DeleteRoleMapping(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteRoleMapping, params("id", strconv.FormatInt(id, 10)), nil, nil, nil)
}
