package client

import (
	"net/http"
	"strings"
)

// OCITransport returns an http.RoundTripper for reading the server's OCI
// API (/v2/) with an OCI client library: it uses the client's TLS
// settings and sends the client's token as "Authorization: Bearer" on
// requests to the server's own host (Trove accepts its tokens directly
// there), and on no other host. Without a token it sends none.
func (c *Client) OCITransport() http.RoundTripper {
	base := c.http.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &ociTransport{base: base, host: c.base.Host, scheme: c.base.Scheme, token: c.token}
}

// OCIHost is the host (and port) of the server, the registry part of the
// OCI references of its repositories; insecure reports a plain-HTTP
// address.
func (c *Client) OCIHost() (host string, insecure bool) {
	return c.base.Host, c.base.Scheme == "http"
}

type ociTransport struct {
	base                http.RoundTripper
	host, scheme, token string
}

func (t *ociTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.token == "" || !strings.EqualFold(req.URL.Host, t.host) || req.URL.Scheme != t.scheme {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(r)
}
