package registry

import (
	"regexp"
	"strings"
	"time"
)

// Visibility says who may read a namespace.
type Visibility string

// The visibilities of a namespace. A public namespace is readable by
// anyone who can reach the server, without credentials; a private one only
// with a token allowed to read it. New namespaces are private unless
// created public.
const (
	VisibilityPublic  Visibility = "public"
	VisibilityPrivate Visibility = "private"
)

// ParseVisibility validates a visibility keyword.
func ParseVisibility(s string) (Visibility, error) {
	switch v := Visibility(s); v {
	case VisibilityPublic, VisibilityPrivate:
		return v, nil
	}
	return "", Errorf(Invalid, "invalid visibility %s: use public or private", quote(s))
}

// Public reports whether the namespace is readable anonymously. Only the
// exact value VisibilityPublic is; anything else counts as private.
func (n Namespace) Public() bool { return n.Visibility == VisibilityPublic }

// Role is what a user may do in a namespace they are a member of.
type Role string

// The roles of a namespace member: a reader reads, a publisher also
// publishes, an admin also manages keys, tokens and members.
const (
	RoleReader    Role = "reader"
	RolePublisher Role = "publisher"
	RoleAdmin     Role = "admin"
)

// ParseRole validates a role keyword.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleReader, RolePublisher, RoleAdmin:
		return r, nil
	}
	return "", Errorf(Invalid, "invalid role %s: use reader, publisher or admin", quote(s))
}

// Scope returns the scope a role grants on its namespace, or "" for an
// unknown role.
func (r Role) Scope() Scope {
	switch r {
	case RoleReader:
		return ScopeRead
	case RolePublisher:
		return ScopePublish
	case RoleAdmin:
		return ScopeAdmin
	}
	return ""
}

// User is a local account. Users log in with a password (on the login
// page of `terraform login`) and act through personal tokens.
type User struct {
	Name string // normalized (lowercase); see ParseUserName
	// PasswordHash is the encoded argon2id hash of the password (see
	// package auth); "" means the user cannot log in with a password.
	PasswordHash string
	// Admin makes the user a global administrator: every right on every
	// namespace, and the management of users.
	Admin bool
	// Disabled users cannot log in and their tokens are refused.
	Disabled  bool
	CreatedAt time.Time
}

var userNamePattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$`)

// ParseUserName validates a user name and returns it lowercased: 1 to 64
// letters, digits, '.', '_' and '-', starting and ending with a letter or
// digit.
func ParseUserName(name string) (string, error) {
	if err := UserNameLimit.Check(name); err != nil {
		return "", err
	}
	norm := strings.ToLower(name)
	if !userNamePattern.MatchString(norm) {
		return "", Errorf(Invalid, "invalid user name %q: use 1 to 64 letters, digits, '.', '_' and '-', starting and ending with a letter or digit", name)
	}
	return norm, nil
}

// Membership gives a user a role in a namespace.
type Membership struct {
	User      string
	Namespace string
	Role      Role
	CreatedAt time.Time // when the user became a member; a role change keeps it
}

// AuthCode is an OAuth 2.0 authorization code issued by the login page
// to a CLI (login.v1). Only a hash of the code is stored; a code is
// short-lived and can be exchanged for a token once.
type AuthCode struct {
	Hash        string // hex SHA-256 of the code
	ClientID    string
	RedirectURI string
	// Challenge is the PKCE S256 code challenge: base64url(SHA-256(verifier)).
	Challenge string
	User      string
	Scopes    []Scope // the scopes of the token the code is exchanged for
	// TokenID is the ID the token issued for this code gets, chosen up
	// front so that a replayed code can revoke it.
	TokenID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero until the code is exchanged
}

// DeviceCode is a pending login of the OAuth 2.0 device authorization
// grant (RFC 8628): a CLI without a browser holds the device code and
// polls with it; its user types the user code into a page of this
// registry, signed in, and approves or denies. Only hashes of both codes
// are stored; a code is short-lived and gives one token.
type DeviceCode struct {
	DeviceHash string // hex SHA-256 of the device code
	UserHash   string // hex SHA-256 of the normalized user code
	ClientID   string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastPollAt time.Time // zero until the first poll
	DeviceDecision
	UsedAt time.Time // zero until the token is issued
}

// The decisions on a device code.
const (
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
)

// DeviceDecision is what the person who typed the user code decided.
type DeviceDecision struct {
	Decision string // "" while pending, DeviceApproved or DeviceDenied
	// User is who decided (the token's owner when approved).
	User string
	// Scopes are the scopes of the token, when approved.
	Scopes []Scope
	// TokenID is the ID the token gets, chosen at the approval.
	TokenID   string
	DecidedAt time.Time
}

// AuditEvent is one entry of the audit log of security-relevant events.
type AuditEvent struct {
	ID     int64 // assigned by the store, increasing with every event
	Time   time.Time
	Action string // what happened, e.g. "login.failure", "token.create"
	// Actor is who did it: "user:<name>", "token:<id>" or "anonymous".
	// A failed login is "anonymous", with the name that was tried as its
	// Target, so that typing a name cannot forge that user's events.
	Actor      string
	SourceAddr string // the client's network address (IP), if known
	Namespace  string // the namespace concerned, "" if none
	Target     string // what was acted on, e.g. a token ID or "acme/widget 1.0.0"
	Details    string // free text for people; never secrets
}

// AuditFilter selects audit events. Zero fields do not filter.
type AuditFilter struct {
	Action    string
	Actor     string
	Namespace string
	Since     time.Time // events at or after
	Until     time.Time // events before
	BeforeID  int64     // events with a smaller ID (paging, newest first)
	Limit     int       // <= 0 means a backend default (100)
}

// Audit actions recorded by Trove.
const (
	AuditLoginSuccess    = "login.success"
	AuditLoginFailure    = "login.failure"
	AuditTokenCreate     = "token.create"
	AuditTokenRevoke     = "token.revoke"
	AuditTokenExpire     = "token.expire"
	AuditTokenReplay     = "token.code_replayed"
	AuditNamespaceCreate = "namespace.create"
	AuditNamespaceUpdate = "namespace.update"
	AuditNamespaceDelete = "namespace.delete"
	AuditKeyAdd          = "key.add"
	AuditKeyGenerate     = "key.generate" // a registry-managed key
	AuditKeyRemove       = "key.remove"
	AuditProviderPublish = "provider.publish"
	AuditProviderDocs    = "provider.docs" // documentation uploaded for a provider version
	AuditModulePublish   = "module.publish"
	AuditModuleDelete    = "module.delete"
	// The lifecycle of provider and module versions (docs/lifecycle.md).
	AuditProviderDeprecate   = "provider.deprecate"
	AuditProviderUndeprecate = "provider.undeprecate"
	AuditProviderRevoke      = "provider.revoke"
	AuditProviderRestore     = "provider.restore"
	AuditModuleDeprecate     = "module.deprecate"
	AuditModuleUndeprecate   = "module.undeprecate"
	AuditModuleRevoke        = "module.revoke"
	AuditModuleRestore       = "module.restore"
	// Deleting provider versions, whole providers and whole modules
	// (module.delete is one module version), and garbage collection runs
	// (docs/lifecycle.md).
	AuditProviderDelete    = "provider.delete"
	AuditProviderDeleteAll = "provider.delete_all"
	AuditModuleDeleteAll   = "module.delete_all"
	AuditGC                = "gc.run"
	AuditRetentionPut      = "retention.put"
	AuditRetentionDelete   = "retention.delete"
	AuditUserCreate        = "user.create"
	AuditUserUpdate        = "user.update"
	AuditPasswordChange    = "user.password"
	AuditMembershipSet     = "membership.set"
	AuditMembershipDelete  = "membership.delete"
	// AuditMirrorUpstreamPut and AuditMirrorUpstreamDelete record changes
	// of the provider mirror's upstream registries.
	AuditMirrorUpstreamPut    = "mirror_upstream.put"
	AuditMirrorUpstreamDelete = "mirror_upstream.delete"
	// AuditMirrorApprove, AuditMirrorUnapprove, AuditMirrorDeny and
	// AuditMirrorUndeny record approvals and denials of mirrored provider
	// versions (docs/mirror.md).
	AuditMirrorApprove   = "mirror.approve"
	AuditMirrorUnapprove = "mirror.unapprove"
	AuditMirrorDeny      = "mirror.deny"
	AuditMirrorUndeny    = "mirror.undeny"
	// AuditBundleExport and AuditBundleImport record air-gap bundles
	// written and imported.
	AuditBundleExport = "bundle.export"
	AuditBundleImport = "bundle.import"
)
