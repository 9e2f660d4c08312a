package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// registerAccess mounts the routes of users, memberships and the audit log.
func (h *handler) registerAccess(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteUsers, h.listUsers)
	route("POST "+apispec.RouteUsers, h.createUser)
	route("GET "+apispec.RouteUser, h.getUser)
	route("PATCH "+apispec.RouteUser, h.updateUser)

	route("GET "+apispec.RouteMembers, h.listMembers)
	route("PUT "+apispec.RouteMember, h.setMember)
	route("DELETE "+apispec.RouteMember, h.deleteMember)

	route("GET "+apispec.RouteAudit, h.listAudit)
}

// requireSelfOrAdmin allows global admins, and the user name acting with
// a personal token.
func (h *handler) requireSelfOrAdmin(r *http.Request, name string) error {
	return h.Ops.RequireSelfOrAdmin(actor(r), name)
}

// userParam validates the {user} path value.
func userParam(r *http.Request) (string, error) {
	return registry.ParseUserName(r.PathValue("user"))
}

func userDoc(u registry.User) apispec.User {
	return apispec.User{Name: u.Name, Admin: u.Admin, Disabled: u.Disabled, HasPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt}
}

func membershipDoc(m registry.Membership) apispec.Membership {
	return apispec.Membership{User: m.User, Namespace: m.Namespace, Role: string(m.Role), CreatedAt: m.CreatedAt}
}

// Users.

func (h *handler) listUsers(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	acc := h.Index
	users, err := acc.ListUsers(r.Context())
	if err != nil {
		return err
	}
	out := apispec.UserList{Users: []apispec.User{}}
	for _, u := range users {
		out.Users = append(out.Users, userDoc(u))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createUser(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (operations.CreateUser checks them
	// again).
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.CreateUserRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	u, err := h.Ops.CreateUser(r.Context(), actor(r), req.Name, req.Password, req.Admin)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, userDoc(u))
}

func (h *handler) getUser(w http.ResponseWriter, r *http.Request) error {
	name, err := userParam(r)
	if err != nil {
		return err
	}
	if err := h.requireSelfOrAdmin(r, name); err != nil {
		return err
	}
	acc := h.Index
	u, err := acc.GetUser(r.Context(), name)
	if err != nil {
		return err
	}
	ms, err := acc.ListMemberships(r.Context(), name, "")
	if err != nil {
		return err
	}
	doc := userDoc(u)
	for _, m := range ms {
		doc.Memberships = append(doc.Memberships, membershipDoc(m))
	}
	return httpjson.Write(w, http.StatusOK, doc)
}

func (h *handler) updateUser(w http.ResponseWriter, r *http.Request) error {
	name, err := userParam(r)
	if err != nil {
		return err
	}
	if err := h.requireSelfOrAdmin(r, name); err != nil {
		return err
	}
	var req apispec.UpdateUserRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	u, err := h.Ops.UpdateUser(r.Context(), actor(r), name, operations.UserChange{
		Admin: req.Admin, Disabled: req.Disabled, Password: req.Password, CurrentPassword: req.CurrentPassword})
	var limited *operations.RateLimited
	if errors.As(err, &limited) {
		w.Header().Set("Retry-After", strconv.Itoa(limited.Seconds()))
		return httpjson.Write(w, http.StatusTooManyRequests, httpjson.ErrorBody{Errors: []string{limited.Error()}})
	}
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, userDoc(u))
}

// Memberships.

func (h *handler) listMembers(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.Ops.Members(r.Context(), actor(r), r.PathValue("namespace"))
	if err != nil {
		return err
	}
	out := apispec.MembershipList{Members: []apispec.Membership{}}
	for _, m := range ms {
		out.Members = append(out.Members, membershipDoc(m))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) setMember(w http.ResponseWriter, r *http.Request) error {
	// Rights and path first, then the body (operations.SetMember checks
	// all of them again).
	if _, err := h.namespaceParam(r, registry.ScopeAdmin); err != nil {
		return err
	}
	if _, err := userParam(r); err != nil {
		return err
	}
	var req apispec.SetMembershipRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	m, err := h.Ops.SetMember(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("user"), req.Role)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, membershipDoc(m))
}

func (h *handler) deleteMember(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.RemoveMember(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Audit log.

func (h *handler) listAudit(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var f registry.AuditFilter
	if ns := q.Get("namespace"); ns != "" {
		name, err := registry.ParseNamespace(ns)
		if err != nil {
			return err
		}
		f.Namespace = name
	}
	// Global admins read the whole log, namespace admins the events of
	// their namespace.
	if err := h.require(r, registry.ScopeAdmin, f.Namespace); err != nil {
		return err
	}
	f.Actor, f.Action = q.Get("actor"), q.Get("action")
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return registry.Errorf(registry.Invalid, "invalid %s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", t.name, v)
			}
			*t.dst = at
		}
	}
	for _, n := range []struct {
		name string
		dst  *int64
		max  int64
	}{{"before", &f.BeforeID, 1 << 62}, {"limit", nil, 1000}} {
		v := q.Get(n.name)
		if v == "" {
			continue
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 1 || i > n.max {
			return registry.Errorf(registry.Invalid, "invalid %s %q: want a whole number from 1 to %d", n.name, v, n.max)
		}
		if n.dst != nil {
			*n.dst = i
		} else {
			f.Limit = int(i)
		}
	}
	acc := h.Index
	events, err := acc.ListAudit(r.Context(), f)
	if err != nil {
		return err
	}
	out := apispec.AuditList{Events: []apispec.AuditEvent{}}
	for _, e := range events {
		out.Events = append(out.Events, apispec.AuditEvent{ID: e.ID, Time: e.Time, Action: e.Action, Actor: e.Actor,
			SourceAddr: e.SourceAddr, Namespace: e.Namespace, Target: e.Target, Details: e.Details})
	}
	return httpjson.Write(w, http.StatusOK, out)
}
