package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"trove.dev/trove/apispec"
)

// CreateUser creates a user (global admins).
func (c *Client) CreateUser(ctx context.Context, req apispec.CreateUserRequest) (apispec.User, error) {
	var out apispec.User
	err := c.do(ctx, http.MethodPost, apispec.RouteUsers, nil, nil, req, &out)
	return out, err
}

// ListUsers returns every user ordered by name (global admins).
func (c *Client) ListUsers(ctx context.Context) ([]apispec.User, error) {
	var out apispec.UserList
	err := c.do(ctx, http.MethodGet, apispec.RouteUsers, nil, nil, nil, &out)
	return out.Users, err
}

// GetUser returns a user with their memberships.
func (c *Client) GetUser(ctx context.Context, name string) (apispec.User, error) {
	var out apispec.User
	err := c.do(ctx, http.MethodGet, apispec.RouteUser, params("user", name), nil, nil, &out)
	return out, err
}

// UpdateUser changes the fields set in req and returns the user.
func (c *Client) UpdateUser(ctx context.Context, name string, req apispec.UpdateUserRequest) (apispec.User, error) {
	var out apispec.User
	err := c.do(ctx, http.MethodPatch, apispec.RouteUser, params("user", name), nil, req, &out)
	return out, err
}

// ListMembers returns the members of a namespace (its admins).
func (c *Client) ListMembers(ctx context.Context, namespace string) ([]apispec.Membership, error) {
	var out apispec.MembershipList
	err := c.do(ctx, http.MethodGet, apispec.RouteMembers, params("namespace", namespace), nil, nil, &out)
	return out.Members, err
}

// SetMember adds a user to a namespace with a role, or changes their role.
func (c *Client) SetMember(ctx context.Context, namespace, user, role string) (apispec.Membership, error) {
	var out apispec.Membership
	err := c.do(ctx, http.MethodPut, apispec.RouteMember, params("namespace", namespace, "user", user), nil,
		apispec.SetMembershipRequest{Role: role}, &out)
	return out, err
}

// RemoveMember removes a user from a namespace.
func (c *Client) RemoveMember(ctx context.Context, namespace, user string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteMember, params("namespace", namespace, "user", user), nil, nil, nil)
}

// ListUserTokens returns the personal tokens of a user.
func (c *Client) ListUserTokens(ctx context.Context, user string) ([]apispec.Token, error) {
	var out apispec.TokenList
	err := c.do(ctx, http.MethodGet, apispec.RouteTokens, nil, url.Values{"user": {user}}, nil, &out)
	return out.Tokens, err
}

// ExpireToken moves a token's expiry to at (earlier only; a time in the
// past expires it at once) and returns the token.
func (c *Client) ExpireToken(ctx context.Context, id string, at time.Time) (apispec.Token, error) {
	var out apispec.Token
	at = at.UTC()
	err := c.do(ctx, http.MethodPatch, apispec.RouteToken, params("id", id), nil, apispec.UpdateTokenRequest{ExpiresAt: &at}, &out)
	return out, err
}

// AuditQuery selects audit events; zero fields do not filter.
type AuditQuery struct {
	Namespace, Actor, Action string
	Since, Until             time.Time
	Before                   int64 // events with a smaller ID
	Limit                    int
}

// ListAudit returns audit events, newest first.
func (c *Client) ListAudit(ctx context.Context, q AuditQuery) ([]apispec.AuditEvent, error) {
	v := url.Values{}
	set := func(name, value string) {
		if value != "" {
			v.Set(name, value)
		}
	}
	set("namespace", q.Namespace)
	set("actor", q.Actor)
	set("action", q.Action)
	if !q.Since.IsZero() {
		set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if !q.Until.IsZero() {
		set("until", q.Until.UTC().Format(time.RFC3339))
	}
	if q.Before > 0 {
		set("before", strconv.FormatInt(q.Before, 10))
	}
	if q.Limit > 0 {
		set("limit", strconv.Itoa(q.Limit))
	}
	var out apispec.AuditList
	err := c.do(ctx, http.MethodGet, apispec.RouteAudit, nil, v, nil, &out)
	return out.Events, err
}
