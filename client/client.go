// Package client is the Go client of Trove's management API, as defined in
// package apispec: the one the trove CLI and the Terraform provider use,
// and the one to script Trove with from other Go programs. One method per
// route; publishing streams its files. Requests are checked against the
// API's limits before they are sent, and a refusal comes back as an error
// that carries the server's message (see Error).
//
//	c, err := client.New("https://trove.example.com", os.Getenv("TROVE_TOKEN"))
//	if err != nil { ... }
//	ns, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"})
//
// The package imports nothing of the server: a program that uses it links
// only this package, apispec and the domain's validation rules.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// DefaultUserAgent is the User-Agent sent unless WithUserAgent changes it.
const DefaultUserAgent = "trove-client"

// Limits on what the client reads from a server.
const (
	maxResponseBytes = 64 << 20 // a JSON document
	maxErrorBytes    = 64 << 10 // an error body

	responseHeaderTimeout = 5 * time.Minute
)

// Client talks to one Trove server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	userAgent string
}

type options struct {
	caFile     string
	tlsConfig  *tls.Config
	httpClient *http.Client
	userAgent  string
}

// Option configures a Client.
type Option func(*options)

// WithCAFile trusts the PEM certificates in path (in addition to the
// system roots) when verifying the server. Ignored with WithHTTPClient.
func WithCAFile(path string) Option { return func(o *options) { o.caFile = path } }

// WithTLSConfig uses cfg for TLS connections. Ignored with WithHTTPClient;
// combined with WithCAFile, the CA file's certificates replace cfg.RootCAs.
func WithTLSConfig(cfg *tls.Config) Option { return func(o *options) { o.tlsConfig = cfg } }

// WithHTTPClient sends every request through c.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(o *options) { o.userAgent = ua } }

// New returns a client of the Trove server at addr ("https://host:port";
// a bare "host:port" means https) that authenticates with token (none if
// empty).
func New(addr, token string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	base, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, registry.Errorf(registry.Invalid, "the token contains a line break")
	}
	c := &Client{base: base, token: token, http: o.httpClient, userAgent: o.userAgent}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Bounds the wait after a request was sent in full; a publish's
		// final checks take seconds, not minutes.
		tr.ResponseHeaderTimeout = responseHeaderTimeout
		if o.tlsConfig != nil {
			tr.TLSClientConfig = o.tlsConfig.Clone()
		}
		if o.caFile != "" {
			pool, err := loadCAFile(o.caFile)
			if err != nil {
				return nil, err
			}
			if tr.TLSClientConfig == nil {
				tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		c.http = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	}
	return c, nil
}

// checkRedirect follows at most 10 redirects and keeps the token only on
// the server's own origin: net/http would keep it for another scheme or
// port of the same host, and for its subdomains.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Scheme != c.base.Scheme || !strings.EqualFold(req.URL.Host, c.base.Host) {
		req.Header.Del("Authorization")
	}
	return nil
}

func parseAddr(addr string) (*url.URL, error) {
	if addr == "" {
		return nil, registry.Errorf(registry.Invalid, "the server address is empty: want https://host[:port]")
	}
	if !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "invalid server address")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, registry.Errorf(registry.Invalid, "invalid server address %q: the scheme must be https", addr)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, registry.Errorf(registry.Invalid, "invalid server address %q: want https://host[:port]", addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func loadCAFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "reading the CA file")
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, registry.Errorf(registry.Invalid, "CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Addr returns the server address the client talks to.
func (c *Client) Addr() string { return c.base.String() }

// Error is an error answer from the server.
type Error struct {
	Status   int      // HTTP status code
	Messages []string // the server's messages, or a description of the answer
}

func (e *Error) Error() string {
	if len(e.Messages) == 0 {
		return fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return strings.Join(e.Messages, "; ")
}

// StatusCode returns the HTTP status of err if it is (or wraps) an *Error,
// and 0 otherwise.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether the server answered 404 Not Found.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsConflict reports whether the server answered 409 Conflict.
func IsConflict(err error) bool { return StatusCode(err) == http.StatusConflict }

// IsUnauthenticated reports whether the server answered 401 Unauthorized.
func IsUnauthenticated(err error) bool { return StatusCode(err) == http.StatusUnauthorized }

// IsUntrustedCertificate reports whether err is the failure to verify the
// server's TLS certificate: its authority is not trusted (a Trove with its
// self-signed certificate, before its CA file is given), or it does not
// verify otherwise.
func IsUntrustedCertificate(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &verify)
}

// IsForbidden reports whether the server answered 403 Forbidden.
func IsForbidden(err error) bool { return StatusCode(err) == http.StatusForbidden }

// IsInvalid reports whether the request was refused for its input: by
// the server (400 Bad Request, 413 Content Too Large, 422) or by the
// client before anything was sent (the same checks, from apispec's
// Validate methods and the client's own). Outside this module it is the
// way to tell such errors apart, whose kinds are internal.
func IsInvalid(err error) bool {
	switch StatusCode(err) {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	case 0:
		return registry.IsKind(err, registry.Invalid) || registry.IsKind(err, registry.TooLarge)
	}
	return false
}

// apiURL returns the absolute URL of an apispec route pattern with its
// {placeholders} replaced by params (name, value pairs), each value escaped
// on its own. Empty, "." and ".." values are refused: a server would
// resolve them to another route. Path and query values longer than their
// limits are refused with the server's message, before any request.
func (c *Client) apiURL(route string, nameValues []string, query url.Values) (string, error) {
	raw := route
	for i := 0; i+1 < len(nameValues); i += 2 {
		name, v := nameValues[i], nameValues[i+1]
		if v == "" || v == "." || v == ".." {
			return "", registry.Errorf(registry.Invalid, "invalid %s %q", strings.ReplaceAll(name, "_", " "), v)
		}
		if err := apispec.CheckPathValue(name, v); err != nil {
			return "", err
		}
		raw = strings.Replace(raw, "{"+name+"}", url.PathEscape(v), 1)
	}
	if strings.ContainsAny(raw, "{}") {
		return "", fmt.Errorf("route %s: missing path parameters", route)
	}
	if err := apispec.CheckQuery(query); err != nil {
		return "", err
	}
	u := *c.base
	u.RawPath = c.base.EscapedPath() + raw
	path, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return "", err
	}
	u.Path = path
	u.RawQuery = query.Encode()
	return u.String(), nil
}

// validator is a request document that checks its own fields, as the
// requests of apispec check their limits.
type validator interface{ Validate() error }

// do sends a request to an apispec route (see apiURL for params), with an
// optional JSON body (in), and decodes a JSON answer into out (if not nil).
// A body that is a validator is validated first: a field the server would
// refuse fails here with the server's message, before anything is sent.
func (c *Client) do(ctx context.Context, method, route string, nameValues []string, query url.Values, in, out any) error {
	if v, ok := in.(validator); ok {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	target, err := c.apiURL(route, nameValues, query)
	if err != nil {
		return err
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// send adds the common headers, sends req and decodes the answer.
func (c *Client) send(req *http.Request, out any) error {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return &Error{Status: resp.StatusCode, Messages: []string{fmt.Sprintf("server answered %s with Content-Type %q instead of JSON: is %s a Trove server?", resp.Status, resp.Header.Get("Content-Type"), c.base)}}
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// decodeError turns a non-2xx answer into an *Error.
func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	e := &Error{Status: resp.StatusCode}
	var body struct {
		Errors []string `json:"errors"`
	}
	if err := json.Unmarshal(data, &body); err == nil {
		for _, m := range body.Errors {
			if m = strings.TrimSpace(m); m != "" {
				e.Messages = append(e.Messages, m)
			}
		}
	}
	if len(e.Messages) == 0 {
		e.Messages = []string{fmt.Sprintf("server answered %s without an error message", resp.Status)}
		if resp.Request != nil && resp.Request.URL.Scheme == "http" && bytes.Contains(data, []byte("HTTPS server")) {
			// net/http's plain-text answer to plain HTTP on its TLS port.
			e.Messages = []string{"the server speaks HTTPS, not plain HTTP: use the address https://" + resp.Request.URL.Host}
		}
	}
	return e
}

// CreateNamespace creates a namespace (admin).
func (c *Client) CreateNamespace(ctx context.Context, req apispec.CreateNamespaceRequest) (apispec.Namespace, error) {
	var out apispec.Namespace
	err := c.do(ctx, http.MethodPost, apispec.RouteNamespaces, nil, nil, req, &out)
	return out, err
}

// ListNamespaces returns every namespace, ordered by name.
func (c *Client) ListNamespaces(ctx context.Context) ([]apispec.Namespace, error) {
	var out apispec.NamespaceList
	err := c.do(ctx, http.MethodGet, apispec.RouteNamespaces, nil, nil, nil, &out)
	return out.Namespaces, err
}

// GetNamespace returns one namespace.
func (c *Client) GetNamespace(ctx context.Context, name string) (apispec.Namespace, error) {
	var out apispec.Namespace
	err := c.do(ctx, http.MethodGet, apispec.RouteNamespace, params("namespace", name), nil, nil, &out)
	return out, err
}

// UpdateNamespace changes the mutable fields set in req and returns the
// updated namespace.
func (c *Client) UpdateNamespace(ctx context.Context, name string, req apispec.UpdateNamespaceRequest) (apispec.Namespace, error) {
	var out apispec.Namespace
	err := c.do(ctx, http.MethodPatch, apispec.RouteNamespace, params("namespace", name), nil, req, &out)
	return out, err
}

// DeleteNamespace deletes an empty namespace with its keys and tokens.
func (c *Client) DeleteNamespace(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteNamespace, params("namespace", name), nil, nil, nil)
}

// AddSigningKey adds an ASCII-armored GPG public key to a namespace.
func (c *Client) AddSigningKey(ctx context.Context, namespace string, req apispec.AddSigningKeyRequest) (apispec.SigningKey, error) {
	var out apispec.SigningKey
	err := c.do(ctx, http.MethodPost, apispec.RouteKeys, params("namespace", namespace), nil, req, &out)
	return out, err
}

// GenerateSigningKey makes Trove generate the namespace's registry-managed
// signing key and returns its public half.
func (c *Client) GenerateSigningKey(ctx context.Context, namespace string) (apispec.SigningKey, error) {
	return c.AddSigningKey(ctx, namespace, apispec.AddSigningKeyRequest{Managed: true})
}

// ListSigningKeys returns the signing keys of a namespace.
func (c *Client) ListSigningKeys(ctx context.Context, namespace string) ([]apispec.SigningKey, error) {
	var out apispec.SigningKeyList
	err := c.do(ctx, http.MethodGet, apispec.RouteKeys, params("namespace", namespace), nil, nil, &out)
	return out.Keys, err
}

// GetSigningKey returns one signing key of a namespace.
func (c *Client) GetSigningKey(ctx context.Context, namespace, keyID string) (apispec.SigningKey, error) {
	var out apispec.SigningKey
	err := c.do(ctx, http.MethodGet, apispec.RouteKey, params("namespace", namespace, "key_id", keyID), nil, nil, &out)
	return out, err
}

// DeleteSigningKey removes a signing key from a namespace.
func (c *Client) DeleteSigningKey(ctx context.Context, namespace, keyID string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteKey, params("namespace", namespace, "key_id", keyID), nil, nil, nil)
}

// CreateToken creates a token; the answer holds its secret, shown only once.
func (c *Client) CreateToken(ctx context.Context, req apispec.CreateTokenRequest) (apispec.CreatedToken, error) {
	var out apispec.CreatedToken
	err := c.do(ctx, http.MethodPost, apispec.RouteTokens, nil, nil, req, &out)
	return out, err
}

// ListTokens returns the tokens bound to namespace (alone or among
// others), or every token the caller may see when namespace is "".
func (c *Client) ListTokens(ctx context.Context, namespace string) ([]apispec.Token, error) {
	var q url.Values
	if namespace != "" {
		q = url.Values{"namespace": {namespace}}
	}
	var out apispec.TokenList
	err := c.do(ctx, http.MethodGet, apispec.RouteTokens, nil, q, nil, &out)
	return out.Tokens, err
}

// GetToken returns one token's description.
func (c *Client) GetToken(ctx context.Context, id string) (apispec.Token, error) {
	var out apispec.Token
	err := c.do(ctx, http.MethodGet, apispec.RouteToken, params("id", id), nil, nil, &out)
	return out, err
}

// RevokeToken revokes a token.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteToken, params("id", id), nil, nil, nil)
}

// ListProviders returns the providers of a namespace.
func (c *Client) ListProviders(ctx context.Context, namespace string) ([]apispec.Provider, error) {
	var out apispec.ProviderList
	err := c.do(ctx, http.MethodGet, apispec.RouteProviders, params("namespace", namespace), nil, nil, &out)
	return out.Providers, err
}

// GetProvider returns a provider with its versions, newest first.
func (c *Client) GetProvider(ctx context.Context, namespace, typ string) (apispec.ProviderDetail, error) {
	var out apispec.ProviderDetail
	err := c.do(ctx, http.MethodGet, apispec.RouteProvider, params("namespace", namespace, "type", typ), nil, nil, &out)
	return out, err
}

// GetProviderVersion returns one published version with its platforms.
func (c *Client) GetProviderVersion(ctx context.Context, namespace, typ, version string) (apispec.ProviderVersion, error) {
	var out apispec.ProviderVersion
	err := c.do(ctx, http.MethodGet, apispec.RouteProviderVersion, params("namespace", namespace, "type", typ, "version", version), nil, nil, &out)
	return out, err
}

// WhoAmI returns the token the client authenticates with.
func (c *Client) WhoAmI(ctx context.Context) (apispec.Token, error) {
	var out apispec.Token
	err := c.do(ctx, http.MethodGet, apispec.RouteWhoAmI, nil, nil, nil, &out)
	return out, err
}

// params lists the path parameters of a route as name, value pairs.
func params(nameValues ...string) []string { return nameValues }

// ExpiresIn returns a pointer to the time d from now, for
// CreateTokenRequest.ExpiresAt; nil when d is zero.
func ExpiresIn(d time.Duration) *time.Time {
	if d == 0 {
		return nil
	}
	t := time.Now().Add(d).UTC().Truncate(time.Second)
	return &t
}
