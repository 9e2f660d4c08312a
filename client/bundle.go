package client

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// BundleRequest names what an air-gap bundle holds.
type BundleRequest struct {
	// Providers are "host/namespace/type@version": the server's own host
	// for its own providers, any other host for mirrored ones.
	Providers []string
	// Modules are "namespace/name/system@version".
	Modules []string
	// Platforms ("os_arch") select the provider packages; none: all.
	Platforms []string
}

// ExportBundle writes the bundle of req (a tar, see apispec.BundleManifest)
// to w as the server streams it, and returns how many bytes it wrote. The
// mirror fetches the packages it does not hold first, so the answer may
// take a while to start. An answer cut short is an error: do not keep
// what was written then.
func (c *Client) ExportBundle(ctx context.Context, req BundleRequest, w io.Writer) (int64, error) {
	if n := len(req.Providers) + len(req.Modules); n == 0 || n > apispec.MaxBundleItems {
		return 0, registry.Errorf(registry.Invalid, "a bundle holds 1 to %d provider and module versions; %d given", apispec.MaxBundleItems, n)
	}
	q := url.Values{}
	q[apispec.BundleProviderParam] = req.Providers
	q[apispec.BundleModuleParam] = req.Modules
	q[apispec.BundlePlatformParam] = req.Platforms
	for k, v := range q {
		if len(v) == 0 {
			delete(q, k)
		}
	}
	target, err := c.apiURL(apispec.RouteBundle, nil, q)
	if err != nil {
		return 0, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	hreq.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, decodeError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != apispec.BundleContentType {
		return 0, &Error{Status: resp.StatusCode, Messages: []string{"server answered with Content-Type " + resp.Header.Get("Content-Type") + " instead of a bundle"}}
	}
	return io.Copy(w, resp.Body)
}

// ImportBundle uploads a bundle, read from r (size bytes, or -1 when
// unknown), and returns what the server imported: all of it, or nothing
// and an error naming what failed its checks.
func (c *Client) ImportBundle(ctx context.Context, r io.Reader, size int64) (apispec.BundleImportResult, error) {
	var out apispec.BundleImportResult
	target, err := c.apiURL(apispec.RouteBundle, nil, nil)
	if err != nil {
		return out, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, io.NopCloser(r))
	if err != nil {
		return out, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", apispec.BundleContentType)
	err = c.send(req, &out)
	return out, err
}
