package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
)

// IdentityProviderCreated is what SSO.PutIdentityProvider binds
// (Effects.Bind) in its transaction: whether it creates the provider
// rather than replacing it.
type IdentityProviderCreated bool

// SSO stores what single sign-on with OpenID Connect needs: identity
// providers, their role mappings, the identities linked to users and the
// roles the mappings granted. It is kept in the index so that every
// replica signs people in the same way.
type SSO interface {
	// PutIdentityProvider creates p, or replaces every field of the
	// provider of that name except CreatedAt. It reports whether it
	// created it, also to the effects' Bind in its transaction (an
	// IdentityProviderCreated), so that the audit entry that commits
	// with it says which. Invalid if p does not pass p.Check.
	PutIdentityProvider(ctx context.Context, p registry.IdentityProvider) (created bool, err error)
	// GetIdentityProvider returns the provider, or NotFound.
	GetIdentityProvider(ctx context.Context, name string) (registry.IdentityProvider, error)
	// ListIdentityProviders returns every provider ordered by name.
	ListIdentityProviders(ctx context.Context) ([]registry.IdentityProvider, error)
	// DeleteIdentityProvider removes the provider and its role mappings;
	// identities and users stay (a provider added again under another
	// name with the same issuer finds them). NotFound if there is none.
	DeleteIdentityProvider(ctx context.Context, name string) error

	// CreateRoleMapping stores m with a new ID, which it returns with the
	// mapping. NotFound if its provider does not exist; Conflict if the
	// provider has a mapping of the same claim, value and namespace;
	// Invalid if m does not pass m.Check.
	CreateRoleMapping(ctx context.Context, m registry.RoleMapping) (registry.RoleMapping, error)
	// GetRoleMapping returns the mapping, or NotFound.
	GetRoleMapping(ctx context.Context, id int64) (registry.RoleMapping, error)
	// ListRoleMappings returns the mappings of provider ("" for every
	// provider) ordered by ID. An unknown provider has none.
	ListRoleMappings(ctx context.Context, provider string) ([]registry.RoleMapping, error)
	// DeleteRoleMapping removes the mapping; NotFound if there is none.
	// The roles it granted stay until the next sign-in of each user.
	DeleteRoleMapping(ctx context.Context, id int64) error

	// GetIdentity returns the identity of issuer and subject, or NotFound.
	GetIdentity(ctx context.Context, issuer, subject string) (registry.Identity, error)
	// CreateIdentityUser creates the user u and links id to it, in one
	// transaction (id.User is ignored: u.Name is linked). Conflict if the
	// identity is linked already or the user name is taken; which one is
	// told apart with GetIdentity.
	CreateIdentityUser(ctx context.Context, id registry.Identity, u registry.User) error
	// TouchIdentity sets the identity's LastLoginAt; NotFound if there is
	// no such identity.
	TouchIdentity(ctx context.Context, issuer, subject string, at time.Time) error

	// ReconcileRoles makes user's rights what the role mappings grant
	// now, in one transaction, and returns what it changed:
	//   - a granted membership is set (created at time now) unless the
	//     user has one the mappings did not grant (set by an admin), which
	//     is left as it is;
	//   - a membership granted at an earlier call and not granted now is
	//     removed if its role is still the one granted; a role changed
	//     since (by an admin) is left as it is;
	//   - admin true sets the user's admin flag (if not set); a flag set by
	//     an earlier call and not granted now is cleared; a flag set by an
	//     admin is never cleared;
	//   - grants of namespaces that do not exist are ignored.
	// NotFound if the user does not exist.
	ReconcileRoles(ctx context.Context, user string, grants []registry.RoleGrant, admin bool, now time.Time) ([]registry.RoleChange, error)
}
