package sso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// issuerCheckTimeout bounds the discovery request of CheckIssuer.
const issuerCheckTimeout = 10 * time.Second

// maxDiscoveryBytes bounds a discovery document read by CheckIssuer.
const maxDiscoveryBytes = 1 << 20

// CheckIssuer reads the OpenID Connect discovery document of issuer
// (issuer + "/.well-known/openid-configuration", as the sign-in reads
// it) and checks that its "issuer" is issuer exactly: the ID tokens of
// a provider whose document names another issuer are refused at every
// sign-in, so a provider set that way could never sign anyone in.
//
// A document that names another issuer is Invalid, with a message naming
// both values (and saying so when they differ only by a trailing slash).
// A document that cannot be read (the provider is unreachable from
// Trove, answers an error, or sends no JSON) is no refusal: the provider
// may not be up yet. Then warning says what was not checked and why, and
// err is nil.
func CheckIssuer(ctx context.Context, client *http.Client, issuer string) (warning string, err error) {
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, issuerCheckTimeout)
	defer cancel()
	docURL := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	unchecked := func(why string) (string, error) {
		return fmt.Sprintf("the issuer was not checked: its discovery document %s %s; sign-ins through this provider fail until Trove can read it", docURL, why), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, docURL, nil)
	if err != nil {
		return "", registry.Errorf(registry.Invalid, "issuer %q does not make a discovery URL: %v", issuer, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return unchecked(fmt.Sprintf("could not be read (%s)", requestCause(err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return unchecked("was answered " + resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes+1))
	if err != nil {
		return unchecked(fmt.Sprintf("could not be read (%s)", requestCause(err)))
	}
	if len(body) > maxDiscoveryBytes {
		return unchecked(fmt.Sprintf("is larger than %d bytes", maxDiscoveryBytes))
	}
	var doc struct {
		Issuer *string `json:"issuer"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return unchecked("is not a JSON document")
	}
	if doc.Issuer == nil {
		return unchecked("names no issuer")
	}
	if got := *doc.Issuer; got != issuer {
		return "", registry.Errorf(registry.Invalid, "%s", issuerMismatch(issuer, got, docURL))
	}
	return "", nil
}

// issuerMismatch says that the discovery document at docURL names the
// issuer got instead of the configured one, and what to configure.
func issuerMismatch(configured, got, docURL string) string {
	msg := fmt.Sprintf("the issuer does not match: configured %q, but the provider's discovery document (%s) names %q; they must be equal character for character, or every ID token is refused",
		printable(configured), docURL, printable(got))
	switch {
	case strings.TrimSuffix(configured, "/") == strings.TrimSuffix(got, "/") && strings.HasSuffix(configured, "/"):
		msg += "; they differ only by the trailing slash: drop it, --issuer " + printable(got)
	case strings.TrimSuffix(configured, "/") == strings.TrimSuffix(got, "/"):
		msg += "; they differ only by the trailing slash: add it, --issuer " + printable(got)
	case strings.EqualFold(configured, got):
		msg += "; they differ only in upper and lower case: use --issuer " + printable(got)
	default:
		msg += "; set the issuer the provider names (--issuer " + printable(got) + ") if it is the one you mean"
	}
	return msg
}

// printable cuts a value from a remote document to something safe to
// show: printable ASCII, at most 200 bytes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// requestCause is the cause of a failed request without the URL the
// net/http error repeats.
func requestCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
