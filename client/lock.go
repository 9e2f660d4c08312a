package client

import (
	"context"
	"net/http"

	"trove.dev/trove/apispec"
)

// Lock returns a dependency lock file (.terraform.lock.hcl) for the
// providers of req, Trove's own and those its mirror serves, with the h1
// hash of every platform's package (or of req.Platforms) and a zh hash of
// each line of their SHA256SUMS. For mirrored providers it may take a
// while the first time: the mirror fetches every package to hash it.
func (c *Client) Lock(ctx context.Context, req apispec.LockRequest) (apispec.LockResponse, error) {
	var out apispec.LockResponse
	err := c.do(ctx, http.MethodPost, apispec.RouteLock, nil, nil, req, &out)
	return out, err
}
