// Package retention decides which versions of one provider or module a
// registry.RetentionRule deletes. It is pure logic (no storage, no
// clock): the garbage collector (package gc) feeds it the versions and
// deletes what it returns.
package retention

import (
	"slices"
	"time"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
)

// Version is what a rule looks at of one version.
type Version struct {
	Version     string
	PublishedAt time.Time
	Deprecated  bool
	Revoked     bool
}

// Expired returns the versions (of one provider or module) that rule
// deletes at now, highest first: those no keep of the rule holds (see
// registry.RetentionRule). A version that does not parse is never
// deleted. Invalid if the rule is (registry.CheckRetentionRule).
func Expired(rule registry.RetentionRule, versions []Version, now time.Time) ([]string, error) {
	if err := registry.CheckRetentionRule(rule); err != nil {
		return nil, err
	}
	pins := make([]version.Constraints, 0, len(rule.Pin))
	for _, p := range rule.Pin {
		c, err := registry.ParsePin(p)
		if err != nil {
			return nil, err
		}
		pins = append(pins, c)
	}
	type parsed struct {
		Version
		sv *version.Version
	}
	var vs []parsed
	for _, v := range versions {
		if sv, err := version.NewSemver(v.Version); err == nil {
			vs = append(vs, parsed{v, sv})
		}
	}
	if len(vs) == 0 {
		return nil, nil
	}
	// Highest first; the newest publication among equals first.
	slices.SortStableFunc(vs, func(a, b parsed) int {
		if c := b.sv.Compare(a.sv); c != 0 {
			return c
		}
		return b.PublishedAt.Compare(a.PublishedAt)
	})
	latest := 0
	for i, v := range vs {
		if v.PublishedAt.After(vs[latest].PublishedAt) {
			latest = i
		}
	}
	var out []string
	for i, v := range vs {
		keep := i == 0 || i == latest || // the highest and the newest
			(rule.KeepLast > 0 && i < rule.KeepLast) ||
			(rule.KeepWithin > 0 && now.Sub(v.PublishedAt) < rule.KeepWithin) ||
			(v.Deprecated && !v.Revoked)
		for _, c := range pins {
			if keep {
				break
			}
			keep = c.Check(v.sv)
		}
		if !keep {
			out = append(out, v.Version.Version)
		}
	}
	return out, nil
}
