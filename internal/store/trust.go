package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
)

// TrustPolicies stores the trust policies of keyless publishing
// (registry.TrustPolicy), each belonging to one namespace. The store keeps
// what it is given: the caller validates policies
// (registry.CheckTrustPolicy). Deleting a namespace deletes its policies.
type TrustPolicies interface {
	// CreateTrustPolicy stores p with its Conditions. NotFound if its
	// namespace does not exist; Conflict if its ID is taken.
	CreateTrustPolicy(ctx context.Context, p registry.TrustPolicy) error
	// GetTrustPolicy returns the policy id of namespace, or NotFound
	// (also for a policy of another namespace).
	GetTrustPolicy(ctx context.Context, namespace, id string) (registry.TrustPolicy, error)
	// ListTrustPolicies returns the policies of namespace ordered by
	// CreatedAt then ID. An unknown namespace has none: never NotFound.
	ListTrustPolicies(ctx context.Context, namespace string) ([]registry.TrustPolicy, error)
	// DeleteTrustPolicy removes the policy id of namespace. NotFound if
	// there is none. Tokens issued under it stay until they expire.
	DeleteTrustPolicy(ctx context.Context, namespace, id string) error
}

// ReplayGuard remembers the IDs (the "jti" claim) of the ID tokens that
// were exchanged, so that each is exchanged once, on every replica
// sharing the index.
type ReplayGuard interface {
	// UseTokenID records the token ID jti of issuer as used until
	// expiresAt (the token's own expiry), atomically: of concurrent calls
	// with the same issuer and jti exactly one succeeds, the others get
	// Conflict, as does every later call while the record is kept. A
	// record is kept at least until expiresAt; each call removes the
	// records that expired before now, after which the same issuer and
	// jti may be recorded again (the token itself is refused by then).
	// The same jti of two issuers are two records. An empty issuer or
	// jti, or a zero expiresAt, is Invalid.
	UseTokenID(ctx context.Context, issuer, jti string, expiresAt, now time.Time) error
}
