package web

import "trove.dev/trove/internal/registry"

// lifecycle is the deprecation and revocation of the version a provider
// or module page shows (docs/lifecycle.md); both nil for an active one.
type lifecycle struct {
	Deprecation *registry.Deprecation
	Revocation  *registry.Revocation
}

// listedVersions returns the versions a page's selector offers: the newest maxSelectorVersions versions but the
// revoked ones, and cur (a revoked or old version's page stays reachable
// by its address and lists itself).
func listedVersions(names []string, revoked map[string]bool, cur string) []string {
	out := make([]string, 0, min(len(names), maxSelectorVersions+1))
	for _, n := range names {
		if n == cur || !revoked[n] && len(out) < maxSelectorVersions {
			out = append(out, n)
		}
	}
	return out
}

// unrevoked returns names without the revoked ones, or names itself when
// every version is revoked (so that a page still has a latest version).
func unrevoked(names []string, revoked map[string]bool) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !revoked[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return names
	}
	return out
}
