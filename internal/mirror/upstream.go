package mirror

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"
	"github.com/hashicorp/terraform-svchost/disco"

	"trove.dev/trove/internal/registry"
)

// Limits of what an upstream may send.
const (
	maxVersionsDoc  = 8 << 20 // hashicorp/aws lists hundreds of versions (a few hundred KB)
	maxVersions     = 10_000  // versions kept of one versions document
	maxPlatforms    = 64      // platforms kept of one version
	maxDownloadDoc  = 1 << 20
	maxSHASums      = 1 << 20
	maxSignature    = 64 << 10
	requestTimeout  = time.Minute // one JSON document, SHA256SUMS or signature
	userAgentPrefix = "Trove/"
)

// upstream is one configured upstream registry with its HTTP client and
// the providers.v1 base URL service discovery found for it.
type upstream struct {
	cfg       registry.MirrorUpstream
	client    *http.Client
	allowHTTP bool // the configured service URL is plain http (loopback)

	mu   sync.Mutex
	base *url.URL // providers.v1 base, found once
}

func newUpstream(cfg registry.MirrorUpstream, userAgent string) (*upstream, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = 30 * time.Second
	if cfg.CACertificates != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(cfg.CACertificates)) {
			return nil, registry.Errorf(registry.Invalid, "upstream %s: its CA certificates hold no PEM certificate", cfg.Host)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	// Plain http only where the operator configured it (a loopback
	// service URL): documents and redirects may not downgrade to it.
	allowHTTP := strings.HasPrefix(cfg.ServiceURL, "http://")
	u := &upstream{cfg: cfg, allowHTTP: allowHTTP, client: &http.Client{
		Transport: &userAgentTransport{next: tr, agent: userAgent},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if req.URL.Scheme != "https" && !allowHTTP {
				return fmt.Errorf("refusing a redirect to %s: the upstream is reached over https only", req.URL.Scheme)
			}
			return nil
		},
	}}
	return u, nil
}

// userAgentTransport names Trove in every upstream request.
type userAgentTransport struct {
	next  http.RoundTripper
	agent string
}

func (t *userAgentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", t.agent)
	return t.next.RoundTrip(r)
}

// providersBase returns the upstream's providers.v1 base URL: the
// configured ServiceURL, or what service discovery on its host says.
func (u *upstream) providersBase(ctx context.Context) (*url.URL, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.base != nil {
		return u.base, nil
	}
	if u.cfg.ServiceURL != "" {
		base, err := url.Parse(u.cfg.ServiceURL)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "upstream %s: service URL %q does not parse: %v", u.cfg.Host, u.cfg.ServiceURL, err)
		}
		if !strings.HasSuffix(base.Path, "/") {
			base.Path += "/"
		}
		u.base = base
		return base, nil
	}
	host, err := svchost.ForComparison(u.cfg.Host)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "upstream %q is not a host name: %v", u.cfg.Host, err)
	}
	d := disco.New()
	d.Transport = u.client.Transport
	d.SetUserAgent(userAgent(u.client))
	base, err := d.DiscoverServiceURL(host, "providers.v1")
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, fmt.Sprintf("upstream %s: service discovery failed", u.cfg.Host))
	}
	if base.Scheme != "https" {
		return nil, registry.Errorf(registry.Unavailable, "upstream %s: service discovery gives %s, which is not an https URL", u.cfg.Host, redact(base))
	}
	if !strings.HasSuffix(base.Path, "/") { // as the clients do
		base.Path += "/"
	}
	u.base = base
	_ = ctx
	return base, nil
}

// forgetBase makes the next request discover the base URL again (after a
// request to it failed, the upstream may have moved).
func (u *upstream) forgetBase() {
	u.mu.Lock()
	if u.cfg.ServiceURL == "" {
		u.base = nil
	}
	u.mu.Unlock()
}

func userAgent(c *http.Client) string {
	if t, ok := c.Transport.(*userAgentTransport); ok {
		return t.agent
	}
	return userAgentPrefix + "dev"
}

// errNotFound marks an upstream's 404.
var errNotFound = errors.New("not found upstream")

// get fetches target and returns its body, at most limit bytes. A 404 is
// errNotFound; any other failure is Unavailable, naming the upstream.
func (u *upstream) get(ctx context.Context, target *url.URL, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := u.open(ctx, target)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, u.unavailable(target, err)
	}
	if int64(len(body)) > limit {
		return nil, registry.Errorf(registry.Unavailable, "upstream %s: %s is larger than %d bytes", u.cfg.Host, redact(target), limit)
	}
	return body, nil
}

// open sends GET target and returns the response of a 2xx answer.
func (u *upstream) open(ctx context.Context, target *url.URL) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "building an upstream request")
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, u.unavailable(target, err)
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		return nil, registry.Errorf(registry.Unavailable, "upstream %s answered %s for %s", u.cfg.Host, resp.Status, redact(target))
	}
	return resp, nil
}

func (u *upstream) unavailable(target *url.URL, err error) error {
	return registry.Wrap(registry.Unavailable, redactErr(err), fmt.Sprintf("upstream %s is unreachable (%s)", u.cfg.Host, redact(target)))
}

// redactErr returns err without the URL an *url.Error names (its query
// may hold a signed URL's credentials; the message names the URL
// redacted already), keeping the cause: "dial tcp ...: connection
// refused", a TLS or timeout error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// withCause returns an error of kind with message whose chain ends at
// the cause of err (its innermost error that is no *registry.Error):
// registry.Message shows message alone to clients, the logs (Error())
// name the cause an operator needs, such as a refused connection.
func withCause(kind registry.Kind, err error, message string) error {
	return &registry.Error{Kind: kind, Message: message, Err: causeOf(err)}
}

// causeOf returns the innermost error of err's chain that is no
// *registry.Error, or nil when there is none.
func causeOf(err error) error {
	for err != nil {
		var e *registry.Error
		if !errors.As(err, &e) {
			return err
		}
		err = e.Err
	}
	return nil
}

// causeText is the text of err's cause for a log line, "" if none.
func causeText(err error) string {
	if c := causeOf(err); c != nil {
		return c.Error()
	}
	return ""
}

// getJSON fetches target into v.
func (u *upstream) getJSON(ctx context.Context, target *url.URL, limit int64, v any) error {
	body, err := u.get(ctx, target, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return registry.Errorf(registry.Unavailable, "upstream %s sent an invalid document for %s: %v", u.cfg.Host, redact(target), err)
	}
	return nil
}

// redact drops a URL's query (signed URLs carry credentials there).
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User = "", nil
	return c.String()
}

// The providers.v1 documents read from upstreams.
type (
	versionsDoc struct {
		Versions []versionEntry `json:"versions"`
	}
	versionEntry struct {
		Version   string          `json:"version"`
		Protocols []string        `json:"protocols"`
		Platforms []platformEntry `json:"platforms"`
		// PublishedAt is the upstream's publish time of the version
		// (RFC 3339), where it gives one: not part of providers.v1, so
		// usually absent; a minimum age then counts from first sight.
		PublishedAt string `json:"published_at,omitempty"`
	}
	platformEntry struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	downloadDoc struct {
		Protocols           []string `json:"protocols"`
		OS                  string   `json:"os"`
		Arch                string   `json:"arch"`
		Filename            string   `json:"filename"`
		DownloadURL         string   `json:"download_url"`
		SHASumsURL          string   `json:"shasums_url"`
		SHASumsSignatureURL string   `json:"shasums_signature_url"`
		SHASum              string   `json:"shasum"`
		SigningKeys         struct {
			GPGPublicKeys []struct {
				KeyID      string `json:"key_id"`
				ASCIIArmor string `json:"ascii_armor"`
			} `json:"gpg_public_keys"`
		} `json:"signing_keys"`
	}
)

// versions fetches the versions document of namespace/typ.
func (u *upstream) versions(ctx context.Context, namespace, typ string) (versionsDoc, error) {
	base, err := u.providersBase(ctx)
	if err != nil {
		return versionsDoc{}, err
	}
	var doc versionsDoc
	err = u.getJSON(ctx, base.JoinPath(namespace, typ, "versions"), maxVersionsDoc, &doc)
	if err != nil && !errors.Is(err, errNotFound) {
		u.forgetBase()
	}
	// Keep what a registry can sensibly list, with valid platforms only
	// (they become archive keys, file names and URL segments).
	doc.Versions = doc.Versions[:min(len(doc.Versions), maxVersions)]
	for i := range doc.Versions {
		ps := doc.Versions[i].Platforms
		ps = slices.DeleteFunc(ps, func(p platformEntry) bool { return registry.ValidatePlatform(p.OS, p.Arch) != nil })
		doc.Versions[i].Platforms = ps[:min(len(ps), maxPlatforms)]
	}
	return doc, err
}

// download fetches the download document of one package, and returns it
// with the URL it came from (its URLs may be relative to it).
func (u *upstream) download(ctx context.Context, namespace, typ, version, os, arch string) (downloadDoc, *url.URL, error) {
	base, err := u.providersBase(ctx)
	if err != nil {
		return downloadDoc{}, nil, err
	}
	target := base.JoinPath(namespace, typ, version, "download", os, arch)
	var doc downloadDoc
	if err := u.getJSON(ctx, target, maxDownloadDoc, &doc); err != nil {
		return downloadDoc{}, nil, err
	}
	return doc, target, nil
}

// resolve returns ref resolved against the URL of the document that
// named it.
func (u *upstream) resolve(doc *url.URL, ref string) (*url.URL, error) {
	r, err := url.Parse(ref)
	if err != nil {
		return nil, err
	}
	abs := doc.ResolveReference(r)
	if abs.Scheme != "https" && (abs.Scheme != "http" || !u.allowHTTP) {
		return nil, fmt.Errorf("%q is not an https URL", redact(abs))
	}
	return abs, nil
}
