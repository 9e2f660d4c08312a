package api

import (
	"net/http"
	"strconv"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
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
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.CreateUserRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	name, err := registry.ParseUserName(req.Name)
	if err != nil {
		return err
	}
	u := registry.User{Name: name, Admin: req.Admin, CreatedAt: h.Now().UTC()}
	if req.Password != "" {
		if h.NoLocalPasswords {
			return errPasswordsOff
		}
		if err := registry.CheckPassword(req.Password); err != nil {
			return err
		}
		if u.PasswordHash, err = auth.HashPassword(req.Password); err != nil {
			return err
		}
	}
	acc := h.Index
	details := "user"
	if u.Admin {
		details = "global admin"
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditUserCreate, Target: name, Details: details})
	if err := acc.CreateUser(store.WithEffects(r.Context(), fx), u); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return registry.Errorf(registry.Conflict, "user %q already exists", name)
		}
		return err
	}
	h.done(r.Context(), fx)
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
	p := auth.FromContext(r.Context())
	isAdmin := p.Allows(registry.ScopeAdmin, "", h.Now())
	self := p.Token.User == name
	acc := h.Index
	u, err := acc.GetUser(r.Context(), name)
	if err != nil {
		return err
	}
	var changes []string
	if req.Admin != nil || req.Disabled != nil {
		if !isAdmin {
			return registry.Errorf(registry.Forbidden, "only global admins change the admin and disabled flags of users")
		}
		if self {
			return registry.Errorf(registry.Invalid, "you cannot change the admin or disabled flag of your own user: ask another global admin")
		}
		if req.Admin != nil && *req.Admin != u.Admin {
			u.Admin = *req.Admin
			changes = append(changes, "admin="+strconv.FormatBool(u.Admin))
		}
		if req.Disabled != nil && *req.Disabled != u.Disabled {
			u.Disabled = *req.Disabled
			changes = append(changes, "disabled="+strconv.FormatBool(u.Disabled))
		}
	}
	passwordChanged := false
	if req.Password != nil {
		if h.NoLocalPasswords {
			return errPasswordsOff
		}
		if !isAdmin || self {
			// Users prove who they are, even with a valid token: a stolen
			// token must not be enough to take over the account, nor to
			// guess its password faster than the login page allows.
			if req.CurrentPassword == nil {
				return registry.Errorf(registry.Forbidden, "changing your own password needs your current password (current_password)")
			}
			source := audit.SourceAddr(r)
			if ok, wait, limit := h.Auth.PasswordLimiter().Take(name, source, h.Now()); !ok {
				h.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginFailure, Target: name,
					Details: "password change through the API: rate limited (" + limit + ")"})
				secs := int(wait/time.Second) + 1
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				return httpjson.Write(w, http.StatusTooManyRequests, httpjson.ErrorBody{Errors: []string{
					"too many password attempts for this " + limit + ": try again in " + strconv.Itoa(secs) + " seconds"}})
			}
			if !auth.VerifyPassword(u.PasswordHash, *req.CurrentPassword) {
				h.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginFailure, Target: name,
					Details: "password change through the API: wrong current password"})
				return registry.Errorf(registry.Forbidden, "changing your own password needs your current password (current_password), and it did not match")
			}
		}
		if err := registry.CheckPassword(*req.Password); err != nil {
			return err
		}
		if u.PasswordHash, err = auth.HashPassword(*req.Password); err != nil {
			return err
		}
		passwordChanged = true
	}
	if len(changes) == 0 && !passwordChanged {
		return httpjson.Write(w, http.StatusOK, userDoc(u))
	}
	fx := &store.Effects{}
	if passwordChanged {
		h.Audit.Add(fx, r, registry.AuditEvent{Action: registry.AuditPasswordChange, Target: name})
	}
	if len(changes) > 0 {
		details := ""
		for i, c := range changes {
			if i > 0 {
				details += ", "
			}
			details += c
		}
		h.Audit.Add(fx, r, registry.AuditEvent{Action: registry.AuditUserUpdate, Target: name, Details: details})
	}
	if err := acc.UpdateUser(store.WithEffects(r.Context(), fx), u); err != nil {
		return err
	}
	h.Access.Authenticator().Invalidate()
	h.done(r.Context(), fx)
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

// errPasswordsOff answers a password set through the API while local
// passwords are switched off (Options.NoLocalPasswords).
var errPasswordsOff = registry.Errorf(registry.Forbidden, "local passwords are switched off on this registry (--local-passwords=false): people sign in through an identity provider; use tokens for automation")
