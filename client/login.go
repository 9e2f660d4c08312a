package client

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// DiscoveryPath is where Terraform and OpenTofu look up a host's services.
const DiscoveryPath = "/.well-known/terraform.json"

// maxDiscoveryBytes bounds the discovery document (the clients read 1 MiB).
const maxDiscoveryBytes = 1 << 20

// LoginService is the login.v1 service a host announces in its discovery
// document: an OAuth 2.0 authorization server for a public client using
// the authorization code grant with PKCE, whose redirect URI must be
// http://localhost:<port>/login with <port> from MinPort to MaxPort.
type LoginService struct {
	ClientID         string
	AuthzURL         *url.URL // absolute
	TokenURL         *url.URL // absolute
	MinPort, MaxPort int
}

// DiscoverLogin reads the discovery document of the client's host and
// returns its login.v1 service. Relative authz and token URLs are resolved
// against the discovery URL, as Terraform does.
func (c *Client) DiscoverLogin(ctx context.Context) (LoginService, error) {
	u := url.URL{Scheme: c.base.Scheme, Host: c.base.Host, Path: DiscoveryPath}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return LoginService{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return LoginService{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return LoginService{}, fmt.Errorf("service discovery at %s answered %s: is %s a Terraform registry?", u.String(), resp.Status, c.base.Host)
	}
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDiscoveryBytes)).Decode(&doc); err != nil {
		return LoginService{}, fmt.Errorf("reading the discovery document %s: %w", u.String(), err)
	}
	raw, ok := doc["login.v1"]
	if !ok {
		return LoginService{}, registry.Errorf(registry.Invalid, "%s offers no login (no login.v1 in %s): ask its administrators for a token", c.base.Host, u.String())
	}
	var v struct {
		Client     string   `json:"client"`
		GrantTypes []string `json:"grant_types"`
		Authz      string   `json:"authz"`
		Token      string   `json:"token"`
		Ports      []int    `json:"ports"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return LoginService{}, fmt.Errorf("reading login.v1 of %s: %w", u.String(), err)
	}
	if v.Client == "" || v.Authz == "" || v.Token == "" {
		return LoginService{}, fmt.Errorf("login.v1 of %s lacks client, authz or token", u.String())
	}
	if len(v.GrantTypes) > 0 && !slices.Contains(v.GrantTypes, "authz_code") {
		return LoginService{}, fmt.Errorf("login.v1 of %s offers grant types %v, not authz_code", u.String(), v.GrantTypes)
	}
	s := LoginService{ClientID: v.Client, MinPort: 1024, MaxPort: 65535}
	if len(v.Ports) == 2 {
		s.MinPort, s.MaxPort = v.Ports[0], v.Ports[1]
	}
	if s.MinPort < 1024 || s.MaxPort > 65535 || s.MinPort > s.MaxPort {
		return LoginService{}, fmt.Errorf("login.v1 of %s has an invalid port range %v", u.String(), v.Ports)
	}
	final := resp.Request.URL // after redirects
	for _, p := range []struct {
		ref string
		dst **url.URL
	}{{v.Authz, &s.AuthzURL}, {v.Token, &s.TokenURL}} {
		ref, err := url.Parse(p.ref)
		if err != nil {
			return LoginService{}, fmt.Errorf("login.v1 of %s: invalid URL %q", u.String(), p.ref)
		}
		abs := final.ResolveReference(ref)
		if abs.Scheme != "https" && abs.Scheme != c.base.Scheme {
			return LoginService{}, fmt.Errorf("login.v1 of %s: %s is not an https URL", u.String(), abs)
		}
		*p.dst = abs
	}
	return s, nil
}

// LoginRequest is one authorization code flow in progress: the URL the
// user opens and the secrets that go with it.
type LoginRequest struct {
	URL         string // the authorization URL to open in a browser
	RedirectURI string // http://localhost:<port>/login
	State       string
	verifier    string
}

// NewLoginRequest starts a flow whose browser comes back to port on the
// local machine: it draws the state and the PKCE verifier.
func (s LoginService) NewLoginRequest(port int) (LoginRequest, error) {
	state, err := randomToken()
	if err != nil {
		return LoginRequest{}, err
	}
	verifier, err := randomToken()
	if err != nil {
		return LoginRequest{}, err
	}
	sum := sha256.Sum256([]byte(verifier))
	r := LoginRequest{RedirectURI: "http://localhost:" + strconv.Itoa(port) + "/login", State: state, verifier: verifier}
	u := *s.AuthzURL
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", s.ClientID)
	q.Set("redirect_uri", r.RedirectURI)
	q.Set("state", state)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	u.RawQuery = q.Encode()
	r.URL = u.String()
	return r, nil
}

// randomToken returns 256 random bits, base64url-encoded (43 characters,
// a valid PKCE verifier).
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ExchangeLoginCode redeems the authorization code the browser brought
// back for r, and returns the token.
func (c *Client) ExchangeLoginCode(ctx context.Context, s LoginService, r LoginRequest, code string) (string, error) {
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"client_id":     {s.ClientID},
		"code":          {code},
		"redirect_uri":  {r.RedirectURI},
		"code_verifier": {r.verifier},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenURL.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return "", &Error{Status: resp.StatusCode, Messages: []string{fmt.Sprintf("the token endpoint %s answered %s with Content-Type %q instead of JSON", s.TokenURL, resp.Status, resp.Header.Get("Content-Type"))}}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxErrorBytes)).Decode(&out); err != nil {
		return "", fmt.Errorf("reading the answer of the token endpoint %s: %w", s.TokenURL, err)
	}
	if resp.StatusCode != http.StatusOK || out.Error != "" {
		msg := "the token endpoint refused the code"
		if out.Error != "" {
			msg += ": " + out.Error
		}
		if out.Description != "" {
			msg += ": " + out.Description
		}
		return "", &Error{Status: resp.StatusCode, Messages: []string{msg}}
	}
	if out.AccessToken == "" || strings.ContainsAny(out.AccessToken, "\r\n") || !strings.EqualFold(out.TokenType, "bearer") && out.TokenType != "" {
		return "", fmt.Errorf("the token endpoint %s answered no usable bearer token", s.TokenURL)
	}
	return out.AccessToken, nil
}

// StartDeviceLogin starts a login by the device authorization grant
// (RFC 8628) at the host of s: the answer names the page where a person
// signed in to the registry types its UserCode. Then PollDeviceLogin.
func (c *Client) StartDeviceLogin(ctx context.Context, s LoginService) (apispec.DeviceAuthorization, error) {
	u := url.URL{Scheme: c.base.Scheme, Host: c.base.Host, Path: apispec.DeviceAuthorizationPath}
	var out apispec.DeviceAuthorization
	status, oe, err := c.postForm(ctx, u.String(), url.Values{"client_id": {s.ClientID}}, &out)
	if err != nil {
		return out, err
	}
	if status == http.StatusNotFound {
		return out, &Error{Status: status, Messages: []string{c.base.Host + " offers no device login (it answered 404 at " + u.String() + "): log in with a browser on this machine, or create a token in its web UI"}}
	}
	if oe.Error != "" || status != http.StatusOK {
		return out, &Error{Status: status, Messages: []string{"the device login could not start: " + oe.text()}}
	}
	if out.DeviceCode == "" || out.UserCode == "" || out.VerificationURI == "" || strings.ContainsAny(out.UserCode+out.VerificationURI, "\r\n\x1b") {
		return out, fmt.Errorf("the device authorization endpoint %s answered no usable codes", u.String())
	}
	if out.Interval <= 0 {
		out.Interval = 5
	}
	return out, nil
}

// PollDeviceLogin polls the token endpoint of s for the device login d
// every d.Interval seconds (5 more after each slow_down) until the login
// is approved, denied or expired, or ctx ends, and returns the token.
func (c *Client) PollDeviceLogin(ctx context.Context, s LoginService, d apispec.DeviceAuthorization) (string, error) {
	interval := time.Duration(d.Interval) * time.Second
	form := url.Values{"grant_type": {apispec.DeviceGrantType}, "client_id": {s.ClientID}, "device_code": {d.DeviceCode}}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(interval):
		}
		var out struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
		}
		status, oe, err := c.postForm(ctx, s.TokenURL.String(), form, &out)
		if err != nil {
			return "", err
		}
		switch oe.Error {
		case "authorization_pending":
			continue
		case "slow_down":
			interval += 5 * time.Second
			continue
		case "access_denied":
			return "", &Error{Status: status, Messages: []string{"the login was denied in the browser"}}
		case "expired_token":
			return "", &Error{Status: status, Messages: []string{"the code expired before it was approved: run the login again"}}
		case "":
		default:
			return "", &Error{Status: status, Messages: []string{"the token endpoint refused the device code: " + oe.text()}}
		}
		if status != http.StatusOK || out.AccessToken == "" || strings.ContainsAny(out.AccessToken, "\r\n") || !strings.EqualFold(out.TokenType, "bearer") && out.TokenType != "" {
			return "", fmt.Errorf("the token endpoint %s answered no usable bearer token", s.TokenURL)
		}
		return out.AccessToken, nil
	}
}

// oauthAnswerError is the error of an OAuth endpoint's JSON answer.
type oauthAnswerError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func (e oauthAnswerError) text() string {
	if e.Description == "" {
		return e.Error
	}
	return e.Error + ": " + e.Description
}

// postForm posts form to target and decodes a JSON answer into out (a
// success) and its OAuth error; a 404 is returned as its status alone.
func (c *Client) postForm(ctx context.Context, target string, form url.Values, out any) (int, oauthAnswerError, error) {
	var oe oauthAnswerError
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, oe, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, oe, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return resp.StatusCode, oe, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return resp.StatusCode, oe, &Error{Status: resp.StatusCode, Messages: []string{fmt.Sprintf("%s answered %s with Content-Type %q instead of JSON", target, resp.Status, resp.Header.Get("Content-Type"))}}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	if err != nil {
		return resp.StatusCode, oe, err
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, oe, fmt.Errorf("reading the answer of %s: %w", target, err)
		}
		return resp.StatusCode, oe, nil
	}
	if err := json.Unmarshal(body, &oe); err != nil || oe.Error == "" {
		return resp.StatusCode, oe, &Error{Status: resp.StatusCode, Messages: []string{fmt.Sprintf("%s answered %s", target, resp.Status)}}
	}
	return resp.StatusCode, oe, nil
}
