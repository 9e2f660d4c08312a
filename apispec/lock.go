package apispec

import (
	"fmt"
	"strings"
)

// RouteLock writes a dependency lock file (POST): the providers Trove
// serves, its own and mirrored, with the hashes of every platform.
const RouteLock = "/api/v1/lock"

// Bounds of a lock request.
const (
	MaxLockProviders = 100
	MaxLockPlatforms = 50
)

// LockRequest asks for a dependency lock file (.terraform.lock.hcl).
type LockRequest struct {
	// Providers to lock, each by its source address as a configuration's
	// required_providers writes it.
	Providers []LockProvider `json:"providers"`
	// Platforms ("linux_amd64", ...) whose h1 hashes the lock file must
	// hold; empty: every platform of each locked version.
	Platforms []string `json:"platforms,omitempty"`
}

// LockProvider is one provider of a LockRequest.
type LockProvider struct {
	// Source is the provider's source address: "host/namespace/type", or
	// "namespace/type" for the public registry's
	// (registry.terraform.io, as Terraform reads it).
	Source string `json:"source"`
	// Versions is the version constraint ("~> 5.0"); empty: any release.
	Versions string `json:"versions,omitempty"`
	// Pinned, if set, is the version an existing lock file holds: it is
	// locked again (with the hashes of every platform) instead of the
	// newest. 404 if this registry no longer offers it (held or denied by
	// the mirror, revoked, gone upstream), 400 if Versions does not allow
	// it.
	Pinned string `json:"pinned,omitempty"`
}

// LockResponse is the lock file and what it locks.
type LockResponse struct {
	// LockFile is the text of .terraform.lock.hcl, as terraform init
	// writes it.
	LockFile  string           `json:"lock_file"`
	Providers []LockedProvider `json:"providers"`
}

// LockedProvider is one provider entry of a lock file.
type LockedProvider struct {
	Source      string   `json:"source"` // fully qualified: host/namespace/type
	Version     string   `json:"version"`
	Constraints string   `json:"constraints,omitempty"`
	Hashes      []string `json:"hashes"` // sorted: h1: of each platform's package, zh: of each SHA256SUMS line
}

// Validate checks the request's shape (the server parses the addresses,
// constraints and platforms).
func (r LockRequest) Validate() error {
	switch {
	case len(r.Providers) == 0:
		return fmt.Errorf("name at least one provider to lock")
	case len(r.Providers) > MaxLockProviders:
		return fmt.Errorf("at most %d providers per lock file, got %d", MaxLockProviders, len(r.Providers))
	case len(r.Platforms) > MaxLockPlatforms:
		return fmt.Errorf("at most %d platforms, got %d", MaxLockPlatforms, len(r.Platforms))
	}
	for _, p := range r.Providers {
		if strings.TrimSpace(p.Source) == "" {
			return fmt.Errorf("a provider has no source address")
		}
		if len(p.Source) > 300 || len(p.Versions) > 200 || len(p.Pinned) > 128 {
			return fmt.Errorf("provider %.40q: source or versions too long", p.Source)
		}
	}
	for _, pl := range r.Platforms {
		if len(pl) > 64 {
			return fmt.Errorf("platform %.40q too long", pl)
		}
	}
	return nil
}
