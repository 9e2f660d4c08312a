package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// ListGitSources returns the git sources of a namespace's modules (needs
// publish on it).
func (c *Client) ListGitSources(ctx context.Context, namespace string) ([]apispec.GitSource, error) {
	var out apispec.GitSourceList
	err := c.do(ctx, http.MethodGet, apispec.RouteGitSources, params("namespace", namespace), nil, nil, &out)
	return out.GitSources, err
}

// GetGitSource returns the git source of a module (needs publish).
func (c *Client) GetGitSource(ctx context.Context, namespace, name, system string) (apispec.GitSource, error) {
	var out apispec.GitSource
	err := c.do(ctx, http.MethodGet, apispec.RouteGitSource, params("namespace", namespace, "name", name, "system", system), nil, nil, &out)
	return out, err
}

// CreateGitSource makes a module's versions come from the semver tags of
// a Git repository (needs admin on the namespace). The answer carries the
// push webhook's secret, shown this once.
func (c *Client) CreateGitSource(ctx context.Context, namespace, name, system string, req apispec.CreateGitSourceRequest) (apispec.CreatedGitSource, error) {
	var out apispec.CreatedGitSource
	err := c.do(ctx, http.MethodPost, apispec.RouteGitSource, params("namespace", namespace, "name", name, "system", system), nil, req, &out)
	return out, err
}

// DeleteGitSource removes the git source of a module (needs admin); the
// versions it published stay.
func (c *Client) DeleteGitSource(ctx context.Context, namespace, name, system string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteGitSource, params("namespace", namespace, "name", name, "system", system), nil, nil, nil)
}

// SyncGitSource syncs the git source of a module now (needs publish) and
// returns what it published and refused.
func (c *Client) SyncGitSource(ctx context.Context, namespace, name, system string) (apispec.GitSourceSyncResult, error) {
	var out apispec.GitSourceSyncResult
	err := c.do(ctx, http.MethodPost, apispec.RouteGitSourceSync, params("namespace", namespace, "name", name, "system", system), nil, nil, &out)
	return out, err
}
