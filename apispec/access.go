package apispec

import "time"

// Routes of users, memberships and the audit log.
const (
	RouteUsers = "/api/v1/users"        // GET list, POST create (global admins)
	RouteUser  = "/api/v1/users/{user}" // GET, PATCH (password, admin, disabled)

	RouteMembers = "/api/v1/namespaces/{namespace}/members"        // GET list (namespace admins)
	RouteMember  = "/api/v1/namespaces/{namespace}/members/{user}" // PUT role, DELETE

	// RouteAudit lists audit events, newest first. Query parameters:
	// namespace, actor, action, since and until (RFC 3339), before (an
	// event ID, for paging) and limit (default 100, at most 1000).
	RouteAudit = "/api/v1/audit"
)

// User is a user account; the password (hash) is never part of it.
type User struct {
	Name        string       `json:"name"`
	Admin       bool         `json:"admin"` // global administrator
	Disabled    bool         `json:"disabled"`
	HasPassword bool         `json:"has_password"` // can log in with a password
	CreatedAt   time.Time    `json:"created_at"`
	Memberships []Membership `json:"memberships,omitempty"` // on GET RouteUser
}

// CreateUserRequest creates a user. Password may be empty: the user then
// cannot log in until one is set, but can be given personal tokens.
type CreateUserRequest struct {
	Name     string `json:"name"`
	Password string `json:"password,omitempty"`
	Admin    bool   `json:"admin,omitempty"`
}

// UpdateUserRequest changes the fields that are set. A user changing
// their own password must send CurrentPassword; global admins need not.
// Admin and Disabled are for global admins, who cannot change them on
// themselves.
type UpdateUserRequest struct {
	Password        *string `json:"password,omitempty"`
	CurrentPassword *string `json:"current_password,omitempty"`
	Admin           *bool   `json:"admin,omitempty"`
	Disabled        *bool   `json:"disabled,omitempty"`
}

// UserList is the answer of GET RouteUsers.
type UserList struct {
	Users []User `json:"users"`
}

// Membership gives a user a role in a namespace: reader, publisher or
// admin.
type Membership struct {
	User      string    `json:"user"`
	Namespace string    `json:"namespace"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// SetMembershipRequest is the body of PUT RouteMember: it adds the user to
// the namespace or changes their role.
type SetMembershipRequest struct {
	Role string `json:"role"`
}

// MembershipList is the answer of GET RouteMembers.
type MembershipList struct {
	Members []Membership `json:"members"`
}

// UpdateTokenRequest is the body of PATCH RouteToken. ExpiresAt moves the
// token's expiry earlier (never later); a time in the past expires it at
// once.
type UpdateTokenRequest struct {
	ExpiresAt *time.Time `json:"expires_at"`
}

// AuditEvent is one entry of the audit log.
type AuditEvent struct {
	ID         int64     `json:"id"`
	Time       time.Time `json:"time"`
	Action     string    `json:"action"`
	Actor      string    `json:"actor"`
	SourceAddr string    `json:"source_addr,omitempty"`
	Namespace  string    `json:"namespace,omitempty"`
	Target     string    `json:"target,omitempty"`
	Details    string    `json:"details,omitempty"`
}

// AuditList is the answer of GET RouteAudit.
type AuditList struct {
	Events []AuditEvent `json:"events"`
}
