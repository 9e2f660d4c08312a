package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"trove.dev/trove/apispec"
)

// Limits of the files ProviderRelease, ProviderProvenance and
// ModuleProvenance read.
const (
	maxReleaseSums      = 1 << 20
	maxReleaseSignature = 64 << 10
	maxReleaseDocument  = 1 << 20
	maxProvenance       = 4 << 20
)

// ProviderReleaseFiles are the signed files of a provider version, as
// terraform and tofu fetch them.
type ProviderReleaseFiles struct {
	SHA256SUMS []byte
	// Signature is the binary detached signature of SHA256SUMS.
	Signature []byte
	// Keys are the ASCII-armored public keys the registry names for the
	// signature (providers.v1 signing_keys): what the clients check
	// against, and what a check without keys of its own trusts.
	Keys []string
}

// ProviderRelease fetches a provider version's SHA256SUMS, its signature
// and the registry's keys through the provider registry protocol, as the
// clients do: the download document of one of the version's platforms,
// then the files it names.
func (c *Client) ProviderRelease(ctx context.Context, namespace, typ, version string) (ProviderReleaseFiles, error) {
	v, err := c.GetProviderVersion(ctx, namespace, typ, version)
	if err != nil {
		return ProviderReleaseFiles{}, err
	}
	if len(v.Platforms) == 0 {
		return ProviderReleaseFiles{}, fmt.Errorf("provider %s/%s %s has no platforms", namespace, typ, version)
	}
	p := v.Platforms[0]
	doc, err := c.base.Parse("/v1/providers/" + url.PathEscape(namespace) + "/" + url.PathEscape(typ) + "/" + url.PathEscape(version) +
		"/download/" + url.PathEscape(p.OS) + "/" + url.PathEscape(p.Arch))
	if err != nil {
		return ProviderReleaseFiles{}, err
	}
	data, err := c.getRaw(ctx, doc, maxReleaseDocument)
	if err != nil {
		return ProviderReleaseFiles{}, fmt.Errorf("reading the download document of %s/%s %s: %w", namespace, typ, version, err)
	}
	var d struct {
		SHASumsURL          string `json:"shasums_url"`
		SHASumsSignatureURL string `json:"shasums_signature_url"`
		SigningKeys         struct {
			GPGPublicKeys []struct {
				ASCIIArmor string `json:"ascii_armor"`
			} `json:"gpg_public_keys"`
		} `json:"signing_keys"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return ProviderReleaseFiles{}, fmt.Errorf("the download document of %s/%s %s is not JSON: %w", namespace, typ, version, err)
	}
	var out ProviderReleaseFiles
	for _, k := range d.SigningKeys.GPGPublicKeys {
		out.Keys = append(out.Keys, k.ASCIIArmor)
	}
	for _, f := range []struct {
		ref   string
		limit int64
		into  *[]byte
	}{{d.SHASumsURL, maxReleaseSums, &out.SHA256SUMS}, {d.SHASumsSignatureURL, maxReleaseSignature, &out.Signature}} {
		u, err := doc.Parse(f.ref)
		if err != nil || f.ref == "" {
			return ProviderReleaseFiles{}, fmt.Errorf("the download document of %s/%s %s names no usable file URL %q", namespace, typ, version, f.ref)
		}
		if *f.into, err = c.getRaw(ctx, u, f.limit); err != nil {
			return ProviderReleaseFiles{}, fmt.Errorf("fetching %s: %w", u.Redacted(), err)
		}
	}
	return out, nil
}

// ProviderProvenance returns a provider version's provenance envelope
// (DSSE JSON); a version without one is not found (IsNotFound).
func (c *Client) ProviderProvenance(ctx context.Context, namespace, typ, version string) ([]byte, error) {
	target, err := c.apiURL(apispec.RouteProviderProvenance, params("namespace", namespace, "type", typ, "version", version), nil)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	return c.getRaw(ctx, u, maxProvenance)
}

// MirroredProvenance returns the provenance an air-gap bundle carried
// with a version of an upstream's provider that this Trove mirrors, and
// the public keys that verify it; a version without one, or not
// mirrored, is not found (IsNotFound).
func (c *Client) MirroredProvenance(ctx context.Context, host, namespace, typ, version string) (apispec.MirroredProvenance, error) {
	target, err := c.apiURL(apispec.RouteMirrorProvenance, params("host", host, "namespace", namespace, "type", typ, "version", version), nil)
	if err != nil {
		return apispec.MirroredProvenance{}, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return apispec.MirroredProvenance{}, err
	}
	raw, err := c.getRaw(ctx, u, 2*maxProvenance)
	if err != nil {
		return apispec.MirroredProvenance{}, err
	}
	var out apispec.MirroredProvenance
	if err := json.Unmarshal(raw, &out); err != nil {
		return apispec.MirroredProvenance{}, fmt.Errorf("the provenance of %s/%s/%s %s does not parse: %w", host, namespace, typ, version, err)
	}
	return out, nil
}

// ModuleProvenance returns a module version's provenance envelope (DSSE
// JSON) with the public keys that verify it (an imported version's are
// the exporting Trove's, which an air-gap bundle carried); a version
// without one is not found (IsNotFound).
func (c *Client) ModuleProvenance(ctx context.Context, namespace, name, system, version string) (apispec.ModuleProvenance, error) {
	target, err := c.apiURL(apispec.RouteModuleProvenance,
		params("namespace", namespace, "name", name, "system", system, "version", version), nil)
	if err != nil {
		return apispec.ModuleProvenance{}, err
	}
	u, err := url.Parse(target)
	if err != nil {
		return apispec.ModuleProvenance{}, err
	}
	raw, err := c.getRaw(ctx, u, 2*maxProvenance)
	if err != nil {
		return apispec.ModuleProvenance{}, err
	}
	var out apispec.ModuleProvenance
	if err := json.Unmarshal(raw, &out); err != nil {
		return apispec.ModuleProvenance{}, fmt.Errorf("the provenance of module %s/%s/%s %s does not parse: %w", namespace, name, system, version, err)
	}
	return out, nil
}

// getRaw GETs u with the client's token (which the HTTP client does not
// pass on to a redirect to another host) and returns at most limit bytes
// of a 200 answer; more is an error.
func (c *Client) getRaw(ctx context.Context, u *url.URL, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" && u.Host == c.base.Host {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, decodeError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the answer is larger than %d bytes", limit)
	}
	return data, nil
}
