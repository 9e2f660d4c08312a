package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goversion "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
)

// HoldStatus is whether the mirror serves an upstream version.
type HoldStatus string

// The statuses Judge gives a version.
const (
	// Available: listed, fetched and served.
	Available HoldStatus = "available"
	// Held: younger than its rule's minimum age and not approved; it
	// becomes available at Verdict.Until.
	Held HoldStatus = "held"
	// Denied: a denial matches it (or it is not a version); never served
	// while the denial stands.
	Denied HoldStatus = "denied"
)

// Seen is what the mirror knows of when an upstream version appeared:
// the upstream's publish time (zero when the upstream gives none) and
// when this Trove first saw the version listed (zero: not yet).
type Seen struct {
	PublishedAt time.Time
	FirstSeen   time.Time
}

// Verdict is Judge's answer for one version.
type Verdict struct {
	Status HoldStatus
	// Reason says why, for clients, operators and the web UI.
	Reason string
	// Since is when the version's age is counted from (its publish time
	// or first sight; zero without a minimum age).
	Since time.Time
	// Until is when a held version becomes available.
	Until time.Time
	// Approved is set when an approval released the version early.
	Approved bool
	// Decision is the denial or approval that decided, if any.
	Decision *registry.MirrorDecision
}

// Judge decides whether the mirror serves version of a provider at now,
// under the allow rule that matched it and the operators' decisions about
// that provider (decisions of other providers are ignored):
//
//   - a version that is not a semantic version is Denied;
//   - a denial whose constraint matches the version is Denied, whatever
//     approvals say; a pre-release is matched by a denial of its release
//     too ("5.81.0" denies "5.81.0-rc1"), and a denial whose constraint
//     does not parse denies everything (it cannot have been stored
//     through the checks; failing closed is the safe reading);
//   - an approval of exactly that version makes it Available;
//   - with a minimum age, a version is Held until MinAge after its
//     upstream publish time, or after its first sight when the upstream
//     gives none (or not seen yet: counted from now);
//   - anything else is Available.
//
// Judge is pure: no clock, no storage.
func Judge(now time.Time, rule registry.MirrorRule, decisions []registry.MirrorDecision, namespace, typ, version string, seen Seen) Verdict {
	v, err := goversion.NewSemver(version)
	if err != nil {
		return Verdict{Status: Denied, Reason: fmt.Sprintf("%q is not a semantic version", registry.Elide(version))}
	}
	var approval *registry.MirrorDecision
	for i := range decisions {
		d := &decisions[i]
		if !sameProvider(d, namespace, typ) {
			continue
		}
		switch d.Kind {
		case registry.MirrorDeny:
			if denies(d.Versions, v) {
				return Verdict{Status: Denied, Reason: denyReason(d), Decision: d}
			}
		case registry.MirrorApprove:
			if d.Versions == version {
				approval = d
			}
		}
	}
	if approval != nil {
		reason := "approved by " + orSomeone(approval.CreatedBy)
		if approval.Reason != "" {
			reason += ": " + approval.Reason
		}
		return Verdict{Status: Available, Reason: reason, Approved: true, Decision: approval}
	}
	if rule.MinAge <= 0 {
		return Verdict{Status: Available}
	}
	since, from := seen.PublishedAt, "published upstream"
	if since.IsZero() {
		since, from = seen.FirstSeen, "first seen by this mirror"
	}
	if since.IsZero() {
		since, from = now, "first seen by this mirror"
	}
	until := since.Add(rule.MinAge)
	if now.Before(until) {
		return Verdict{Status: Held, Since: since, Until: until, Reason: fmt.Sprintf("held until %s: %s %s, rule %s requires a minimum age of %s; an admin may approve it earlier",
			until.UTC().Format(time.RFC3339), from, since.UTC().Format(time.RFC3339), rule.Provider, registry.FormatAge(rule.MinAge))}
	}
	return Verdict{Status: Available, Since: since, Until: until}
}

func sameProvider(d *registry.MirrorDecision, namespace, typ string) bool {
	return strings.EqualFold(d.Namespace, namespace) && strings.EqualFold(d.Type, typ)
}

// denies reports whether the denied constraint matches v (or, for a
// pre-release, its release). A constraint that does not parse matches.
func denies(constraint string, v *goversion.Version) bool {
	c, err := goversion.NewConstraint(constraint)
	if err != nil {
		return true
	}
	if c.Check(v) {
		return true
	}
	return v.Prerelease() != "" && c.Check(v.Core())
}

func denyReason(d *registry.MirrorDecision) string {
	s := "denied (" + d.Versions + ") by " + orSomeone(d.CreatedBy)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

func orSomeone(s string) string {
	if s == "" {
		return "an admin"
	}
	return s
}

// verdicts judges versions of p under rule (the zero rule for a host
// that is not an upstream: denials apply, no minimum age) at the mirror's
// clock, with the decisions of p read from the index (an index that
// cannot be read fails the request: nothing is served unjudged).
//
// The publish times come from the upstream's versions document the mirror
// holds in memory (fetched at most every VersionsTTL); the first sights
// from the index. A version held by its first sight while no document is
// in memory is judged again with a fresh one, so that a publish time the
// upstream gives is never missed; with the upstream down, it stays held.
func (m *Mirror) verdicts(ctx context.Context, u *upstream, p provider, rule registry.MirrorRule, versions []string) (map[string]Verdict, error) {
	decisions, err := m.opt.Index.ListMirrorDecisions(ctx, p.host, p.namespace, p.typ)
	if err != nil {
		return nil, err
	}
	now := m.opt.Now()
	seen := make(map[string]Seen, len(versions))
	if rule.MinAge > 0 {
		m.verMu.Lock()
		c, cached := m.versions[p]
		m.verMu.Unlock()
		if err := m.sights(ctx, p, c, versions, seen); err != nil {
			return nil, err
		}
		if !cached && u != nil {
			for _, v := range versions {
				if s := seen[v]; s.PublishedAt.IsZero() && Judge(now, rule, decisions, p.namespace, p.typ, v, s).Status == Held {
					if c, err := m.upstreamVersionsSeen(ctx, u, p); err == nil {
						if err := m.sights(ctx, p, c, versions, seen); err != nil {
							return nil, err
						}
					}
					break
				}
			}
		}
	}
	out := make(map[string]Verdict, len(versions))
	for _, v := range versions {
		out[v] = Judge(now, rule, decisions, p.namespace, p.typ, v, seen[v])
	}
	return out, nil
}

// sights fills seen with the publish times c gives and the first sights
// of versions (those c lacks read from, or recorded in, the index).
func (m *Mirror) sights(ctx context.Context, p provider, c cachedVersions, versions []string, seen map[string]Seen) error {
	published := make(map[string]time.Time, len(c.doc.Versions))
	for _, e := range c.doc.Versions {
		if e.PublishedAt == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, e.PublishedAt); err == nil {
			published[e.Version] = t
		}
	}
	var missing []string
	for _, v := range versions {
		s := Seen{PublishedAt: published[v]}
		if t, ok := c.seen[v]; ok {
			s.FirstSeen = t
		} else {
			missing = append(missing, v)
		}
		seen[v] = s
	}
	if len(missing) == 0 {
		return nil
	}
	got, err := m.opt.Index.SeeMirroredVersions(ctx, p.host, p.namespace, p.typ, missing, m.opt.Now())
	if err != nil {
		return err
	}
	for v, t := range got {
		s := seen[v]
		s.FirstSeen = t
		seen[v] = s
	}
	return nil
}

// available returns the versions of versions that verdicts serves, in
// their order, and an error for when none is left that says why.
func (m *Mirror) available(ctx context.Context, u *upstream, p provider, rule registry.MirrorRule, versions []string) ([]string, error) {
	vs, err := m.verdicts(ctx, u, p, rule, versions)
	if err != nil {
		return nil, err
	}
	var out []string
	held, denied := 0, 0
	var next time.Time
	for _, v := range versions {
		switch vd := vs[v]; vd.Status {
		case Available:
			out = append(out, v)
		case Held:
			held++
			if next.IsZero() || vd.Until.Before(next) {
				next = vd.Until
			}
		default:
			denied++
		}
	}
	if len(out) == 0 && len(versions) > 0 {
		msg := fmt.Sprintf("provider %s/%s/%s has no version this mirror may serve yet: %d held back by a minimum age, %d denied",
			p.host, p.namespace, p.typ, held, denied)
		if !next.IsZero() {
			msg += "; the first is released at " + next.UTC().Format(time.RFC3339)
		}
		return nil, registry.Errorf(registry.NotFound, "%s (an admin sees why with: trove mirror hold list %s/%s/%s)", msg, p.host, p.namespace, p.typ)
	}
	return out, nil
}

// check returns nil if version of p may be served now, else NotFound
// saying why (held until when, or denied by whom).
func (m *Mirror) check(ctx context.Context, u *upstream, p provider, rule registry.MirrorRule, version string) error {
	vs, err := m.verdicts(ctx, u, p, rule, []string{version})
	if err != nil {
		return err
	}
	if vd := vs[version]; vd.Status != Available {
		return registry.Errorf(registry.NotFound, "provider %s/%s/%s %s is %s by this mirror: %s", p.host, p.namespace, p.typ, registry.Elide(version), vd.Status, vd.Reason)
	}
	return nil
}

// VersionHold is one version of a mirrored provider with its Verdict.
type VersionHold struct {
	Version string
	Verdict
}

// ProviderHolds is what the mirror serves of one provider and why
// (Holds): for operators, the API and the web UI.
type ProviderHolds struct {
	// Rule is the allow rule that matches the provider; nil when its host
	// is not an upstream (what the mirror holds of it is judged by the
	// denials only).
	Rule *registry.MirrorRule
	// Versions are those the upstream lists that Rule allows (those the
	// mirror holds a package of when the upstream cannot be reached or
	// the host is not an upstream), newest first.
	Versions []VersionHold
	// Decisions are the approvals and denials of the provider.
	Decisions []registry.MirrorDecision
	// Unreachable says why the upstream's list could not be read; "" if
	// it was.
	Unreachable string
}

// Holds reports every version of a provider with whether the mirror
// serves it now, and why not. NotFound when no rule of the host's
// upstream allows the provider, or the host is not an upstream and the
// mirror holds nothing of it.
func (m *Mirror) Holds(ctx context.Context, host, namespace, typ string) (ProviderHolds, error) {
	p := provider{host, namespace, typ}
	u, rule, err := m.upstream(ctx, p)
	if err != nil {
		return ProviderHolds{}, err
	}
	var out ProviderHolds
	var versions []string
	if u != nil {
		out.Rule = &rule
		c, err := m.upstreamVersionsSeen(ctx, u, p)
		switch {
		case errors.Is(err, errNotFound):
			return ProviderHolds{}, registry.Errorf(registry.NotFound, "provider %s/%s/%s not found: upstream %s does not know it", host, namespace, typ, host)
		case err != nil:
			out.Unreachable = registry.Message(err)
		default:
			for _, v := range c.doc.Versions {
				if allows(rule, v.Version) {
					versions = append(versions, v.Version)
				}
			}
		}
	}
	if u == nil || out.Unreachable != "" {
		if versions, err = m.heldVersions(ctx, p, rule); err != nil && !registry.IsKind(err, registry.NotFound) {
			return ProviderHolds{}, err
		}
		if u == nil && len(versions) == 0 {
			return ProviderHolds{}, notUpstream(p)
		}
	}
	verdicts, err := m.verdicts(ctx, u, p, rule, versions)
	if err != nil {
		return ProviderHolds{}, err
	}
	for _, v := range versions {
		out.Versions = append(out.Versions, VersionHold{Version: v, Verdict: verdicts[v]})
	}
	registry.SortNewestFirst(out.Versions, func(v VersionHold) string { return v.Version })
	if out.Decisions, err = m.opt.Index.ListMirrorDecisions(ctx, host, namespace, typ); err != nil {
		return ProviderHolds{}, err
	}
	return out, nil
}
