package client

import (
	"context"
	"io"
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// UploadProviderDocs uploads the documentation archive of a published
// provider version: a .tar.gz or .zip of its docs tree (tfplugindocs'
// docs/ or the legacy website/docs/), streamed as the request body, at
// most apispec.MaxProviderDocsBytes. Created is false in the result when
// the version has that very archive already; other documentation for a
// version that has some is a conflict (IsConflict).
func (c *Client) UploadProviderDocs(ctx context.Context, namespace, typ, version string, archive io.Reader) (apispec.ProviderDocsResult, error) {
	var out apispec.ProviderDocsResult
	if archive == nil {
		return out, registry.Errorf(registry.Invalid, "nothing to upload: no documentation archive given")
	}
	target, err := c.apiURL(apispec.RouteProviderDocs, params("namespace", namespace, "type", typ, "version", version), nil)
	if err != nil {
		return out, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, archive)
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	err = c.send(req, &out)
	return out, err
}

// DownloadProviderDocs writes the documentation archive of a provider
// version to w, as uploaded. A version without documentation is not
// found (IsNotFound).
func (c *Client) DownloadProviderDocs(ctx context.Context, namespace, typ, version string, w io.Writer) error {
	target, err := c.apiURL(apispec.RouteProviderDocs, params("namespace", namespace, "type", typ, "version", version), nil)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	_, err = io.Copy(w, io.LimitReader(resp.Body, apispec.MaxProviderDocsBytes))
	return err
}
