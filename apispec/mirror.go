package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of the provider mirror's upstream registries, for global admins
// only. {host} is the upstream's host name as provider source addresses
// write it (with a port if it has one); Trove normalizes it (lowercase,
// Punycode) and answers the normalized form.
const (
	RouteMirrorUpstreams = "/api/v1/mirror/upstreams"        // GET list
	RouteMirrorUpstream  = "/api/v1/mirror/upstreams/{host}" // GET, PUT (create or replace), DELETE
)

// MirrorUpstream is an upstream registry the provider mirror may fetch
// providers from.
type MirrorUpstream struct {
	Host string `json:"host"`
	// ServiceURL, if set, is the upstream's providers.v1 base URL, used
	// instead of service discovery on Host.
	ServiceURL string `json:"service_url"`
	// CACertificates, if set, are PEM certificates trusted (besides the
	// system's) for the upstream's TLS connections.
	CACertificates string `json:"ca_certificates"`
	// Allow lists the providers that may be mirrored; empty: none.
	Allow       []MirrorRule `json:"allow"`
	Description string       `json:"description"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
}

// MirrorRule allows the providers whose "namespace/type" matches
// Provider, where "*" as a whole namespace or type matches any
// ("hashicorp/*", "*/*"), at the versions the constraint Versions allows
// ("~> 5.0"; empty: every version).
type MirrorRule struct {
	Provider string `json:"provider"`
	Versions string `json:"versions,omitempty"`
	// MinAge holds new versions back until they are this old ("7d",
	// "36h", "1d12h"; empty or "0": at once), counted from the upstream's
	// publish time where it gives one, else from this Trove's first sight
	// of the version.
	MinAge string `json:"min_age,omitempty"`
}

// PutMirrorUpstreamRequest is the body of PUT RouteMirrorUpstream: the
// whole configuration of the upstream, which replaces the stored one.
// ServiceURL is empty or an absolute https URL (http only for loopback
// hosts); CACertificates empty or PEM holding at least one certificate.
type PutMirrorUpstreamRequest struct {
	ServiceURL     string       `json:"service_url,omitempty"`
	CACertificates string       `json:"ca_certificates,omitempty"`
	Allow          []MirrorRule `json:"allow"`
	Description    string       `json:"description,omitempty"`
}

// MirrorUpstreamList is the answer of GET RouteMirrorUpstreams, ordered by
// host.
type MirrorUpstreamList struct {
	Upstreams []MirrorUpstream `json:"upstreams"`
}

// Validate checks the limits of the request's fields: the number of
// rules, the lengths, and the text of the service URL, the certificates
// and the description (registry.CheckText, CheckLines for the
// certificates). The server checks their meaning.
func (r PutMirrorUpstreamRequest) Validate() error {
	if len(r.Allow) > registry.MaxMirrorRules {
		return registry.Errorf(registry.Invalid, "an upstream has at most %d allow rules, not %d: use patterns such as hashicorp/*",
			registry.MaxMirrorRules, len(r.Allow))
	}
	for _, rule := range r.Allow {
		if err := firstError(registry.MirrorProviderLimit.CheckText(rule.Provider), registry.VersionConstraintLimit.CheckText(rule.Versions),
			registry.MinAgeLimit.CheckText(rule.MinAge)); err != nil {
			return err
		}
	}
	return firstError(registry.ServiceURLLimit.CheckText(r.ServiceURL), registry.CACertificatesLimit.CheckLines(r.CACertificates),
		registry.DescriptionLimit.CheckText(r.Description))
}
