package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

// The environment of keyless publishing (docs/keyless.md).
const (
	// envIDToken holds an OpenID Connect ID token for Trove: the name of
	// the GitLab CI/CD id_tokens entry, and what any other CI system sets.
	envIDToken = "TROVE_ID_TOKEN"
	// envOIDCAudience overrides the audience requested from GitHub
	// Actions (the default is the server's URL).
	envOIDCAudience = "TROVE_OIDC_AUDIENCE"
	// GitHub Actions' variables of a job with "permissions: id-token: write".
	envGitHubRequestURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	envGitHubRequestToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// idTokenTimeout bounds the request of an ID token from GitHub Actions.
const idTokenTimeout = 30 * time.Second

// defineOIDCFlags defines --oidc-audience on a publishing command.
func (c *cli) defineOIDCFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.oidcAudience, "oidc-audience", "", "the `aud` to request a GitHub Actions ID token for, when no token is set "+
		"(default $"+envOIDCAudience+", else the server's URL)")
}

// publishClient returns the client of a publish to namespace: the one of
// client() when a token is set (--token, TROVE_TOKEN, one stored for the
// host); otherwise, in a CI job that can present an OpenID Connect ID
// token ($TROVE_ID_TOKEN, or GitHub Actions' token request variables),
// one with a token of namespace exchanged for it under the namespace's
// trust policies. It says so in one line on stderr.
func (c *cli) publishClient(ctx context.Context, namespace string) (*client.Client, error) {
	cl, err := c.client()
	if err != nil || c.tokenSource != "" {
		return cl, err
	}
	idToken, from, err := c.ciIDToken(ctx, cl.Addr())
	if err != nil || idToken == "" {
		return cl, err
	}
	res, err := cl.ExchangeIDToken(ctx, namespace, idToken)
	if err != nil {
		return nil, fmt.Errorf("no token is set, so the %s was exchanged for a token of namespace %s at %s, which refused it: %w\n"+
			"(an admin of %s sets up trust policies with trove trust-policy create; see docs/keyless.md)",
			from, namespace, cl.Addr(), err, namespace)
	}
	c.tokenSource = fmt.Sprintf("the %s, exchanged under trust policy %s", from, res.PolicyID)
	fmt.Fprintf(c.stderr, "Exchanged the %s for a %s token of namespace %s (trust policy %s, expires %s)\n",
		from, strings.Join(res.Scopes, ","), res.Namespace, res.PolicyID, when(res.ExpiresAt))
	return cl.WithToken(res.Token), nil
}

// ciIDToken returns an ID token of the CI job and where it came from, or
// "" when the job has none: $TROVE_ID_TOKEN, else one requested from
// GitHub Actions for the audience (--oidc-audience, $TROVE_OIDC_AUDIENCE
// or the server's URL addr).
func (c *cli) ciIDToken(ctx context.Context, addr string) (token, from string, err error) {
	if t := strings.TrimSpace(c.getenv(envIDToken)); t != "" {
		return t, "ID token in $" + envIDToken, nil
	}
	reqURL, reqToken := c.getenv(envGitHubRequestURL), c.getenv(envGitHubRequestToken)
	if reqURL == "" || reqToken == "" {
		return "", "", nil
	}
	aud := c.oidcAudience
	if aud == "" {
		aud = c.getenv(envOIDCAudience)
	}
	if aud == "" {
		aud = audienceOf(addr)
	}
	t, err := githubIDToken(ctx, reqURL, reqToken, aud)
	if err != nil {
		return "", "", fmt.Errorf("requesting a GitHub Actions ID token for audience %s: %w (the job needs \"permissions: id-token: write\")", aud, err)
	}
	return t, "GitHub Actions ID token (audience " + aud + ")", nil
}

// audienceOf returns the default audience of the server at addr: its
// origin, scheme://host[:port], as Trove's public URL is written.
func audienceOf(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return strings.TrimSuffix(addr, "/")
	}
	return u.Scheme + "://" + u.Host
}

// githubIDToken requests an ID token for aud from GitHub Actions' token
// endpoint, as actions/core's getIDToken does.
func githubIDToken(ctx context.Context, reqURL, reqToken, aud string) (string, error) {
	sep := "&"
	if !strings.Contains(reqURL, "?") {
		sep = "?"
	}
	ctx, cancel := context.WithTimeout(ctx, idTokenTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reqURL+sep+"audience="+url.QueryEscape(aud), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "bearer "+reqToken)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 2*registry.MaxIDTokenBytes))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the token endpoint answered %s", resp.Status)
	}
	var doc struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Value == "" {
		return "", errors.New("the token endpoint's answer holds no token (want {\"value\": \"<jwt>\"})")
	}
	return doc.Value, nil
}
