package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// ModuleListOptions filters and pages ListModules; zero values mean no
// filter and the server's default page.
type ModuleListOptions struct {
	Query  string // substring of the name or description
	System string // exact target system
	Offset int
	Limit  int
}

// ListModules returns one page of the modules of a namespace.
func (c *Client) ListModules(ctx context.Context, namespace string, opt ModuleListOptions) (apispec.ModuleList, error) {
	q := url.Values{}
	if opt.Query != "" {
		q.Set(apispec.ModuleQueryParam, opt.Query)
	}
	if opt.System != "" {
		q.Set(apispec.ModuleSystemParam, opt.System)
	}
	if opt.Offset > 0 {
		q.Set(apispec.ModuleOffsetParam, strconv.Itoa(opt.Offset))
	}
	if opt.Limit > 0 {
		q.Set(apispec.ModuleLimitParam, strconv.Itoa(opt.Limit))
	}
	var out apispec.ModuleList
	err := c.do(ctx, http.MethodGet, apispec.RouteModules, params("namespace", namespace), q, nil, &out)
	return out, err
}

// GetModule returns a module with its versions, newest first.
func (c *Client) GetModule(ctx context.Context, namespace, name, system string) (apispec.ModuleDetail, error) {
	var out apispec.ModuleDetail
	err := c.do(ctx, http.MethodGet, apispec.RouteModule, params("namespace", namespace, "name", name, "system", system), nil, nil, &out)
	return out, err
}

// GetModuleVersion returns one module version with its metadata.
func (c *Client) GetModuleVersion(ctx context.Context, namespace, name, system, version string) (apispec.ModuleVersion, error) {
	var out apispec.ModuleVersion
	err := c.do(ctx, http.MethodGet, apispec.RouteModuleVersion,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil, nil, &out)
	return out, err
}

// ModuleUpload is a module version to publish.
type ModuleUpload struct {
	Namespace, Name, System, Version string
	// Archive is the .tar.gz or .zip, streamed as the request body (it is
	// read to its end or until the server answers).
	Archive io.Reader
	// ContentType is apispec.ModuleArchiveTarGz or apispec.ModuleArchiveZip;
	// "" sends application/octet-stream and lets the server recognise the
	// format.
	ContentType string
	// Origin records where the archive came from (one line, at most 512
	// bytes), e.g. "git tag v1.2.0, commit 0123abc".
	Origin string
}

// PublishModule uploads a module version. Created is false in the result
// when the very same archive was already published.
func (c *Client) PublishModule(ctx context.Context, up ModuleUpload) (apispec.ModulePublishResult, error) {
	var out apispec.ModulePublishResult
	if up.Archive == nil {
		return out, registry.Errorf(registry.Invalid, "nothing to publish: no archive given")
	}
	var q url.Values
	if up.Origin != "" {
		q = url.Values{apispec.ModuleOriginParam: {up.Origin}}
	}
	target, err := c.apiURL(apispec.RouteModuleVersion,
		params("namespace", up.Namespace, "name", up.Name, "system", up.System, "version", up.Version), q)
	if err != nil {
		return out, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, up.Archive)
	if err != nil {
		return out, err
	}
	ct := up.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	req.Header.Set("Content-Type", ct)
	err = c.send(req, &out)
	return out, err
}

// DeleteModuleVersion deletes a module version, confirming the deletion
// with the version's address as the API requires. Configurations that use
// the version stop working: callers should ask before calling it.
func (c *Client) DeleteModuleVersion(ctx context.Context, namespace, name, system, version string, opts ...DeleteOption) error {
	q := deleteQuery(namespace+"/"+name+"/"+system+"/"+version, opts)
	return c.do(ctx, http.MethodDelete, apispec.RouteModuleVersion,
		params("namespace", namespace, "name", name, "system", system, "version", version), q, nil, nil)
}
