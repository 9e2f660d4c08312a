package api

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// registerMirror mounts the routes of the provider mirror's upstream
// registries. Only global admins may read or change them: an upstream's
// configuration names private hosts and decides what Trove downloads.
func (h *handler) registerMirror(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteMirrorUpstreams, h.listMirrorUpstreams)
	route("GET "+apispec.RouteMirrorUpstream, h.getMirrorUpstream)
	route("PUT "+apispec.RouteMirrorUpstream, h.putMirrorUpstream)
	route("DELETE "+apispec.RouteMirrorUpstream, h.deleteMirrorUpstream)
}

func (h *handler) listMirrorUpstreams(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	ups, err := h.Index.ListMirrorUpstreams(r.Context())
	if err != nil {
		return err
	}
	out := apispec.MirrorUpstreamList{Upstreams: make([]apispec.MirrorUpstream, 0, len(ups))}
	for _, u := range ups {
		out.Upstreams = append(out.Upstreams, upstreamDoc(u))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	host, err := h.upstreamParam(r)
	if err != nil {
		return err
	}
	u, err := h.Index.GetMirrorUpstream(r.Context(), host)
	if err != nil {
		return upstreamNotFound(err, host)
	}
	return httpjson.Write(w, http.StatusOK, upstreamDoc(u))
}

// putMirrorUpstream creates the upstream (201) or replaces its whole
// configuration (200), keeping its creation time.
func (h *handler) putMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	host, err := h.upstreamParam(r)
	if err != nil {
		return err
	}
	var req apispec.PutMirrorUpstreamRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	u, err := checkUpstream(host, req)
	if err != nil {
		return err
	}
	ctx := r.Context()
	created := false
	now := h.Now().UTC()
	u.CreatedAt, u.UpdatedAt = now, now
	switch old, err := h.Index.GetMirrorUpstream(ctx, host); {
	case registry.IsKind(err, registry.NotFound):
		created = true
	case err != nil:
		return err
	default:
		u.CreatedAt = old.CreatedAt
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditMirrorUpstreamPut, Target: host, Details: describeUpstream(u, created)})
	if err := h.Index.PutMirrorUpstream(store.WithEffects(ctx, fx), u); err != nil {
		return err
	}
	h.mirrorChanged()
	h.done(ctx, fx)
	stored, err := h.Index.GetMirrorUpstream(ctx, host)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return httpjson.Write(w, status, upstreamDoc(stored))
}

func (h *handler) deleteMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	host, err := h.upstreamParam(r)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditMirrorUpstreamDelete, Target: host})
	if err := h.Index.DeleteMirrorUpstream(store.WithEffects(r.Context(), fx), host); err != nil {
		return upstreamNotFound(err, host)
	}
	h.mirrorChanged()
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// mirrorChanged tells the running mirror to read its upstreams again.
func (h *handler) mirrorChanged() {
	if h.OnMirrorChange != nil {
		h.OnMirrorChange()
	}
}

// upstreamParam checks that the caller is a global admin and returns the
// {host} path value normalized.
func (h *handler) upstreamParam(r *http.Request) (string, error) {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return "", err
	}
	return normalizeHost(r.PathValue("host"))
}

// normalizeHost returns the form of a registry host name that Trove
// stores and compares: svchost.ForComparison's (lowercase, Punycode, no
// default port). The Punycode form it answers is accepted too, so that a
// host read from an answer can be sent back.
func normalizeHost(given string) (string, error) {
	h, err := svchost.ForComparison(given)
	if err != nil {
		if h2, err2 := svchost.ForComparison(svchost.ForDisplay(given)); err2 == nil {
			return h2.String(), nil
		}
		return "", registry.Errorf(registry.Invalid, "host %.300q is not a registry host name (such as registry.example.com or registry.example.com:8443): %v", given, err)
	}
	if err := registry.HostLimit.Check(h.String()); err != nil {
		return "", err
	}
	return h.String(), nil
}

func upstreamNotFound(err error, host string) error {
	if registry.IsKind(err, registry.NotFound) {
		return registry.Errorf(registry.NotFound, "mirror upstream %s not found", host)
	}
	return err
}

// checkUpstream validates the meaning of req (apispec checked its limits)
// and returns the upstream it configures.
func checkUpstream(host string, req apispec.PutMirrorUpstreamRequest) (registry.MirrorUpstream, error) {
	u := registry.MirrorUpstream{Host: host, ServiceURL: req.ServiceURL, CACertificates: req.CACertificates, Description: req.Description}
	if err := checkServiceURL(req.ServiceURL); err != nil {
		return u, err
	}
	if err := checkCACertificates(req.CACertificates); err != nil {
		return u, err
	}
	for _, rule := range req.Allow {
		r := registry.MirrorRule{Provider: rule.Provider, Versions: rule.Versions}
		age, err := registry.ParseAge(rule.MinAge)
		if err != nil {
			return u, registry.Errorf(registry.Invalid, "mirror rule %q: %s", registry.Elide(rule.Provider), registry.Message(err))
		}
		r.MinAge = age
		if err := mirror.CheckRule(r); err != nil {
			return u, err
		}
		u.Allow = append(u.Allow, r)
	}
	return u, nil
}

// checkServiceURL accepts "" or an absolute https URL without user
// information, query or fragment; http only for a loopback host (a test
// upstream on this machine), since the mirror trusts what it fetches
// only as far as its signature and TLS go.
func checkServiceURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return registry.Errorf(registry.Invalid, "service_url %.300q is not an absolute URL: write the upstream's providers.v1 base URL, such as https://registry.example.com/v1/providers/", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return registry.Errorf(registry.Invalid, "service_url %.300q: a service URL has no user information, query or fragment", s)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return registry.Errorf(registry.Invalid, "service_url %.300q: http is only allowed for a loopback host (localhost, 127.0.0.1, ::1); use https", s)
		}
	default:
		return registry.Errorf(registry.Invalid, "service_url %.300q: the scheme must be https", s)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkCACertificates accepts "" or PEM whose blocks are all
// certificates, at least one. Any other block (a private key pasted by
// mistake) is refused: the configuration is shown to every global admin.
func checkCACertificates(s string) error {
	if s == "" {
		return nil
	}
	n := 0
	for rest := []byte(s); ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return registry.Errorf(registry.Invalid, "ca_certificates: PEM block %d is a %.40q, not a CERTIFICATE: only the CA certificates to trust belong there", n, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return registry.Errorf(registry.Invalid, "ca_certificates: certificate %d does not parse: %v", n, err)
		}
	}
	if n == 0 {
		return registry.Errorf(registry.Invalid, "ca_certificates holds no PEM certificate: paste the CA certificates, each from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----")
	}
	return nil
}

// describeUpstream says what an upstream allows, for the audit log.
func describeUpstream(u registry.MirrorUpstream, created bool) string {
	var b strings.Builder
	if created {
		b.WriteString("created")
	} else {
		b.WriteString("replaced")
	}
	if u.ServiceURL != "" {
		b.WriteString("; service URL " + u.ServiceURL)
	}
	if u.CACertificates != "" {
		b.WriteString("; own CA certificates")
	}
	if len(u.Allow) == 0 {
		b.WriteString("; allows nothing")
		return b.String()
	}
	b.WriteString("; allows ")
	for i, rule := range u.Allow {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(u.Allow)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(rule.Provider)
		if rule.Versions != "" {
			b.WriteString(" " + rule.Versions)
		}
		if rule.MinAge > 0 {
			b.WriteString(" min age " + registry.FormatAge(rule.MinAge))
		}
	}
	return b.String()
}

func upstreamDoc(u registry.MirrorUpstream) apispec.MirrorUpstream {
	doc := apispec.MirrorUpstream{Host: u.Host, ServiceURL: u.ServiceURL, CACertificates: u.CACertificates,
		Allow: make([]apispec.MirrorRule, 0, len(u.Allow)), Description: u.Description, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
	for _, rule := range u.Allow {
		doc.Allow = append(doc.Allow, ruleDoc(rule))
	}
	return doc
}

func ruleDoc(rule registry.MirrorRule) apispec.MirrorRule {
	r := apispec.MirrorRule{Provider: rule.Provider, Versions: rule.Versions}
	if rule.MinAge > 0 {
		r.MinAge = registry.FormatAge(rule.MinAge)
	}
	return r
}
