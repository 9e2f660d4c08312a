package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
)

// Access is the part of an Index that access control needs besides
// namespaces and tokens: users, their memberships of namespaces, personal
// tokens, OAuth authorization codes and the audit log. It is kept in the
// index, not in a replica's memory, so that every replica sharing the
// index sees the same accounts, codes and events.
//
// Namespace visibility is a field of registry.Namespace: CreateNamespace
// stores an empty Visibility as registry.VisibilityPrivate, and
// UpdateNamespace leaves the visibility unchanged when it is empty.
// DeleteNamespace also deletes the namespace's memberships.
type Access interface {
	Users
	Memberships
	PersonalTokens
	AuthCodes
	DeviceCodes
	AuditLog
}

// Users stores local accounts by name. Users are never deleted (disable
// them instead), so that tokens and audit events keep naming them.
type Users interface {
	// CreateUser stores u. Conflict if a user of that name exists.
	CreateUser(ctx context.Context, u registry.User) error
	// GetUser returns the user, or NotFound.
	GetUser(ctx context.Context, name string) (registry.User, error)
	// ListUsers returns every user ordered by name.
	ListUsers(ctx context.Context) ([]registry.User, error)
	// UpdateUser replaces the mutable fields (PasswordHash, Admin,
	// Disabled) of an existing user. NotFound if there is none.
	UpdateUser(ctx context.Context, u registry.User) error
}

// Memberships stores the roles of users in namespaces: at most one
// membership per user and namespace.
type Memberships interface {
	// SetMembership adds m, or changes the Role of the existing
	// membership of m.User in m.Namespace (keeping its CreatedAt).
	// NotFound if the user or the namespace does not exist; Invalid if
	// the role is not one of the registry's roles.
	SetMembership(ctx context.Context, m registry.Membership) error
	// DeleteMembership removes the membership of user in namespace.
	// NotFound if there is none.
	DeleteMembership(ctx context.Context, user, namespace string) error
	// ListMemberships returns memberships ordered by namespace, then
	// user. user and namespace filter by equality when not "". An
	// unknown user or namespace matches nothing: never NotFound.
	ListMemberships(ctx context.Context, user, namespace string) ([]registry.Membership, error)
}

// PersonalTokens complements Tokens for tokens that act for a user
// (registry.Token.User). CreateToken of a token with a User fails with
// NotFound if that user does not exist.
type PersonalTokens interface {
	// ListUserTokens returns the tokens of user ordered by CreatedAt then
	// ID, revoked and expired ones included. An unknown user has none.
	ListUserTokens(ctx context.Context, user string) ([]registry.Token, error)
	// ExpireToken moves the token's ExpiresAt to at unless it already
	// expires earlier: a token's lifetime can be shortened, never
	// extended. NotFound if there is no token with that ID.
	ExpireToken(ctx context.Context, id string, at time.Time) error
}

// AuthCodes stores OAuth 2.0 authorization codes by the hash of the code.
type AuthCodes interface {
	// CreateAuthCode stores c. Conflict if its Hash is taken; NotFound if
	// its user does not exist; Invalid if one of c.Scopes is not a
	// registry scope (registry.ParseScope).
	CreateAuthCode(ctx context.Context, c registry.AuthCode) error
	// UseAuthCode marks the code with that hash as used at time at and
	// returns it as it was before, atomically: of two concurrent calls
	// exactly one sees a zero UsedAt. A code used already is returned
	// with its first UsedAt and left unchanged. NotFound if there is no
	// such code.
	UseAuthCode(ctx context.Context, hash string, at time.Time) (registry.AuthCode, error)
	// DeleteAuthCodes removes every code that expired before the given
	// time and returns how many it removed.
	DeleteAuthCodes(ctx context.Context, expiredBefore time.Time) (int, error)
}

// DeviceCodes stores the pending logins of the OAuth 2.0 device
// authorization grant (RFC 8628) by the hashes of their device code and
// of their user code, so that any replica can show, decide and redeem
// them.
type DeviceCodes interface {
	// CreateDeviceCode stores d. Conflict if its DeviceHash or its
	// UserHash is taken (by a code not yet deleted, expired or not).
	CreateDeviceCode(ctx context.Context, d registry.DeviceCode) error
	// DecideDeviceCode records dec on the code whose user code has the
	// hash userHash, if that code is still undecided and unexpired at
	// dec.DecidedAt, and returns the code as it was before, atomically:
	// of two concurrent calls exactly one decides. A code decided
	// already or expired is returned unchanged, and the caller tells by
	// its Decision and ExpiresAt. NotFound if there is no such code;
	// NotFound also if dec approves for a user that does not exist.
	DecideDeviceCode(ctx context.Context, userHash string, dec registry.DeviceDecision) (registry.DeviceCode, error)
	// PollDeviceCode records a poll of the code whose device code has the
	// hash deviceHash at time at, and returns the code as it was before
	// (with the previous LastPollAt). If the code is approved and not
	// used yet, it is marked used at at, atomically: of two concurrent
	// calls exactly one sees a zero UsedAt. NotFound if there is no such
	// code.
	PollDeviceCode(ctx context.Context, deviceHash string, at time.Time) (registry.DeviceCode, error)
	// DeleteDeviceCodes removes every code that expired before the given
	// time and returns how many it removed.
	DeleteDeviceCodes(ctx context.Context, expiredBefore time.Time) (int, error)
}

// AuditLog is an append-only log of security-relevant events.
type AuditLog interface {
	// AppendAudit stores e with a new ID greater than every ID before it
	// and returns that ID (e.ID is ignored).
	AppendAudit(ctx context.Context, e registry.AuditEvent) (int64, error)
	// ListAudit returns the events matching f, newest (highest ID) first.
	// Action, Actor and Namespace filter by equality; Since and Until
	// bound Time ([Since, Until)); BeforeID returns only events with a
	// smaller ID. Limit <= 0 means 100, and at most 1000 are returned.
	ListAudit(ctx context.Context, f registry.AuditFilter) ([]registry.AuditEvent, error)
}
