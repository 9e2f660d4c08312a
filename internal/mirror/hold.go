package mirror

import (
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
