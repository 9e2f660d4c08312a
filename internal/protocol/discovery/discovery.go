// Package discovery serves Terraform's remote service discovery document,
// GET /.well-known/terraform.json, which tells Terraform and OpenTofu where
// each native service (providers.v1, later modules.v1 and login.v1) lives
// on this host.
package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// Path is where clients fetch the discovery document.
const Path = "/.well-known/terraform.json"

// ProvidersV1 is the service identifier of the provider registry protocol.
const ProvidersV1 = "providers.v1"

// Handler serves a discovery document rendered once at construction.
// It is safe for concurrent use.
type Handler struct {
	body          []byte
	etag          []string
	contentLength []string
}

// Shared header values; net/http never modifies them, and their capacity
// equals their length so an append by a middleware copies instead of
// writing into them.
var (
	contentTypeJSON = []string{"application/json"}
	// Clients cache the document per process; a short max-age lets proxies
	// help without delaying a service move for long.
	cacheControl = []string{"public, max-age=300"}
)

// New returns a Handler for services, a map from service identifier (such
// as ProvidersV1) to its value: a base URL string, or an object for
// services like login.v1. A string value must be an absolute path ending
// in "/" or an absolute http(s) URL: clients resolve relative values
// against the discovery URL and append paths to them without adding a
// slash.
func New(services map[string]any) (*Handler, error) {
	for id, v := range services {
		if id == "" {
			return nil, registry.Errorf(registry.Invalid, "discovery: empty service identifier")
		}
		if s, ok := v.(string); ok {
			if err := checkBase(id, s); err != nil {
				return nil, err
			}
		}
	}
	if services == nil {
		services = map[string]any{}
	}
	body, err := json.Marshal(services) // map keys are sorted: the body is deterministic
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "discovery: services do not encode as JSON")
	}
	sum := sha256.Sum256(body)
	return &Handler{
		body:          body,
		etag:          []string{`"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`},
		contentLength: []string{fmt.Sprint(len(body))},
	}, nil
}

func checkBase(id, s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return registry.Errorf(registry.Invalid, "discovery: service %s: invalid URL %q: %v", id, s, err)
	}
	switch {
	case u.IsAbs() && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "":
	case !u.IsAbs() && u.Host == "" && strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//"):
	default:
		return registry.Errorf(registry.Invalid, "discovery: service %s: %q must be an absolute path or an http(s) URL", id, s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return registry.Errorf(registry.Invalid, "discovery: service %s: %q must not carry a query, fragment or user info", id, s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		return registry.Errorf(registry.Invalid, "discovery: service %s: %q must end with \"/\"", id, s)
	}
	return nil
}

// Body returns the rendered document. The caller must not modify it.
func (h *Handler) Body() []byte { return h.body }

// ServeHTTP answers with the document (mount it for GET, which includes
// HEAD), and 304 when the
// request's If-None-Match names its ETag.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr["Etag"] = h.etag
	hdr["Cache-Control"] = cacheControl
	if httpjson.MatchETag(r.Header.Get("If-None-Match"), h.etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr["Content-Type"] = contentTypeJSON
	hdr["Content-Length"] = h.contentLength
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(h.body)
	}
}
