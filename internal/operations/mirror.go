package operations

import (
	"context"
	"fmt"
	"strings"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// The mirror's upstream registries and the holding back of their
// versions (docs/mirror.md). Only global admins read or change them: an
// upstream's configuration names private hosts and decides what Trove
// downloads, and an approval or denial decides what every client gets.

// MirrorHost checks that a is a global admin and returns host in the
// form Trove stores and compares. Entrances call it before they read a
// request's body; every mirror operation calls it again.
func (o *Operations) MirrorHost(a Actor, host string) (string, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return "", err
	}
	return NormalizeHost(host)
}

// NormalizeHost returns the form of a registry host name that Trove
// stores and compares: svchost.ForComparison's (lowercase, Punycode, no
// default port). The Punycode form it answers is accepted too, so that a
// host read from an answer can be sent back.
func NormalizeHost(given string) (string, error) {
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

// checkNewHost refuses an upstream host (normalized) that could never
// resolve: svchost does not bound labels, and DNS carries none over
// maxDNSLabel. Only a new or replaced upstream is checked, so that one
// stored before the rule can still be read and removed.
func checkNewHost(host string) error {
	name, _, _ := strings.Cut(host, ":")
	for label := range strings.SplitSeq(name, ".") {
		if len(label) > maxDNSLabel {
			return registry.Errorf(registry.Invalid, "host %.300q is not a registry host name: a DNS label is at most %d characters", host, maxDNSLabel)
		}
	}
	return nil
}

// maxDNSLabel bounds each dot-separated label of a host name (RFC 1035).
const maxDNSLabel = 63

// PutMirrorUpstream creates the upstream of host (created true) or
// replaces its whole configuration with req, keeping its creation time,
// for global admins. It returns the upstream as stored and tells the
// running mirror to read its upstreams again (Options.OnMirrorChange).
func (o *Operations) PutMirrorUpstream(ctx context.Context, a Actor, host string, req apispec.PutMirrorUpstreamRequest) (u registry.MirrorUpstream, created bool, err error) {
	if host, err = o.MirrorHost(a, host); err != nil {
		return u, false, err
	}
	if err := checkNewHost(host); err != nil {
		return u, false, err
	}
	if err := req.Validate(); err != nil {
		return u, false, err
	}
	if u, err = checkUpstream(host, req); err != nil {
		return u, false, err
	}
	now := o.opt.Now().UTC()
	u.CreatedAt, u.UpdatedAt = now, now
	switch old, err := o.opt.Index.GetMirrorUpstream(ctx, host); {
	case registry.IsKind(err, registry.NotFound):
		created = true
	case err != nil:
		return u, false, err
	default:
		u.CreatedAt = old.CreatedAt
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditMirrorUpstreamPut, Target: host, Details: describeUpstream(u, created)}})
	if err := o.opt.Index.PutMirrorUpstream(store.WithEffects(ctx, fx), u); err != nil {
		return u, false, err
	}
	o.mirrorChanged()
	o.done(ctx, fx)
	stored, err := o.opt.Index.GetMirrorUpstream(ctx, host)
	return stored, created, err
}

// DeleteMirrorUpstream removes the upstream of host (not what was
// mirrored from it), for global admins.
func (o *Operations) DeleteMirrorUpstream(ctx context.Context, a Actor, host string) error {
	host, err := o.MirrorHost(a, host)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditMirrorUpstreamDelete, Target: host}})
	if err := o.opt.Index.DeleteMirrorUpstream(store.WithEffects(ctx, fx), host); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "mirror upstream %s not found", host)
		}
		return err
	}
	o.mirrorChanged()
	o.done(ctx, fx)
	return nil
}

// mirrorChanged tells the running mirror to read its upstreams again.
func (o *Operations) mirrorChanged() {
	if o.opt.OnMirrorChange != nil {
		o.opt.OnMirrorChange()
	}
}

// MirroredProvider names a provider of an upstream registry: host,
// namespace and type, as Operations.MirroredProvider normalizes them.
type MirroredProvider struct{ Host, Namespace, Type string }

// String is "host/namespace/type".
func (p MirroredProvider) String() string { return p.Host + "/" + p.Namespace + "/" + p.Type }

// MirroredProvider checks that a is a global admin and returns the
// provider host/namespace/type normalized. Entrances call it before they
// read a request's body; Decide and Withdraw call it again.
func (o *Operations) MirroredProvider(a Actor, host, namespace, typ string) (MirroredProvider, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return MirroredProvider{}, err
	}
	return o.MirroredName(host, namespace, typ)
}

// MirroredName returns the provider host/namespace/type normalized, for
// reads of the mirror that need no admin right (the caller decides who
// may read).
func (o *Operations) MirroredName(host, namespace, typ string) (MirroredProvider, error) {
	host, err := NormalizeHost(host)
	if err != nil {
		return MirroredProvider{}, err
	}
	ns, err := registry.ParseNamespace(namespace)
	if err != nil {
		return MirroredProvider{}, err
	}
	t, err := registry.ParseProviderType(typ)
	if err != nil {
		return MirroredProvider{}, err
	}
	return MirroredProvider{host, strings.ToLower(ns), strings.ToLower(t)}, nil
}

// decisionEffects returns the audit action and webhook event type of
// making (withdraw false) or withdrawing a decision of kind.
func decisionEffects(kind registry.MirrorDecisionKind, withdraw bool) (action, event string) {
	switch {
	case kind == registry.MirrorDeny && withdraw:
		return registry.AuditMirrorUndeny, registry.EventMirrorUndenied
	case kind == registry.MirrorDeny:
		return registry.AuditMirrorDeny, registry.EventMirrorDenied
	case withdraw:
		return registry.AuditMirrorUnapprove, registry.EventMirrorUnapproved
	}
	return registry.AuditMirrorApprove, registry.EventMirrorApproved
}

// DecideMirror stores an approval (of one version, released before its
// minimum age) or a denial (of a version or constraint) of provider p,
// for global admins, with its audit entry and mirror.approved or
// mirror.denied event in the same transaction; the index announces the
// change to the caches. created is false when it replaced the reason of
// the same decision. A decision the checks refuse stores nothing.
func (o *Operations) DecideMirror(ctx context.Context, a Actor, p MirroredProvider, kind registry.MirrorDecisionKind, versions, reason string) (d registry.MirrorDecision, created bool, err error) {
	if p, err = o.MirroredProvider(a, p.Host, p.Namespace, p.Type); err != nil {
		return d, false, err
	}
	if kind == registry.MirrorDeny {
		versions = strings.TrimSpace(versions)
	}
	d = registry.MirrorDecision{Host: p.Host, Namespace: p.Namespace, Type: p.Type, Kind: kind, Versions: versions,
		Reason: reason, CreatedBy: a.name(), CreatedAt: o.opt.Now().UTC()}
	if err := registry.CheckMirrorDecision(d); err != nil {
		return d, false, err
	}
	action, event := decisionEffects(kind, false)
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: action, Target: p.String() + " " + d.Versions, Details: reason}},
		webhook.Event{Type: event, Host: p.Host, MirrorNamespace: p.Namespace, Name: p.Type, Version: d.Versions, Reason: reason})
	if created, err = o.opt.Index.PutMirrorDecision(store.WithEffects(ctx, fx), d); err != nil {
		return d, false, err
	}
	o.done(ctx, fx)
	return d, created, nil
}

// WithdrawMirror withdraws the approval or denial of kind of provider p
// written as versions was when it was made, for global admins, audited
// with a mirror.unapproved or mirror.undenied event. NotFound if there
// is no such decision.
func (o *Operations) WithdrawMirror(ctx context.Context, a Actor, p MirroredProvider, kind registry.MirrorDecisionKind, versions string) error {
	p, err := o.MirroredProvider(a, p.Host, p.Namespace, p.Type)
	if err != nil {
		return err
	}
	if kind != registry.MirrorApprove && kind != registry.MirrorDeny {
		return registry.Errorf(registry.Invalid, "unknown mirror decision %q: approve or deny", registry.Elide(string(kind)))
	}
	versions = strings.TrimSpace(versions)
	if versions == "" {
		return registry.Errorf(registry.Invalid, "name the %s decision to withdraw by its version or constraint, as it was given", kind)
	}
	if err := registry.VersionConstraintLimit.CheckText(versions); err != nil {
		return err
	}
	action, event := decisionEffects(kind, true)
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: action, Target: p.String() + " " + versions}},
		webhook.Event{Type: event, Host: p.Host, MirrorNamespace: p.Namespace, Name: p.Type, Version: versions})
	if err := o.opt.Index.DeleteMirrorDecision(store.WithEffects(ctx, fx), p.Host, p.Namespace, p.Type, kind, versions); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// checkUpstream validates the meaning of req (req.Validate checked its
// limits) and returns the upstream it configures.
func checkUpstream(host string, req apispec.PutMirrorUpstreamRequest) (registry.MirrorUpstream, error) {
	u := registry.MirrorUpstream{Host: host, ServiceURL: req.ServiceURL, CACertificates: req.CACertificates, Description: req.Description}
	if err := registry.CheckMirrorServiceURL(req.ServiceURL); err != nil {
		return u, err
	}
	if err := registry.CheckMirrorCACertificates(req.CACertificates); err != nil {
		return u, err
	}
	for _, rule := range req.Allow {
		r := registry.MirrorRule{Provider: rule.Provider, Versions: rule.Versions}
		age, err := registry.ParseAge(rule.MinAge)
		if err != nil {
			return u, registry.Errorf(registry.Invalid, "mirror rule %q: %s", registry.Elide(rule.Provider), registry.Message(err))
		}
		r.MinAge = age
		if err := registry.CheckMirrorRule(r); err != nil {
			return u, err
		}
		u.Allow = append(u.Allow, r)
	}
	return u, nil
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
