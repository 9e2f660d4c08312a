package api

import (
	"net/http"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// registerSSO mounts the routes of single sign-on's identity providers
// and role mappings. Only global admins may read or change them: they
// decide who becomes a user and which rights people get.
func (h *handler) registerSSO(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteIdentityProviders, h.listIdentityProviders)
	route("GET "+apispec.RouteIdentityProvider, h.getIdentityProvider)
	route("PUT "+apispec.RouteIdentityProvider, h.putIdentityProvider)
	route("DELETE "+apispec.RouteIdentityProvider, h.deleteIdentityProvider)
	route("GET "+apispec.RouteRoleMappings, h.listRoleMappings)
	route("POST "+apispec.RouteRoleMappings, h.createRoleMapping)
	route("GET "+apispec.RouteRoleMapping, h.getRoleMapping)
	route("DELETE "+apispec.RouteRoleMapping, h.deleteRoleMapping)
}

func (h *handler) identityProviderDoc(p registry.IdentityProvider) apispec.IdentityProvider {
	redirect := ""
	if h.PublicURL != nil {
		redirect = strings.TrimSuffix(h.PublicURL.String(), "/") + strings.Replace(apispec.SSOCallbackPattern, "{name}", p.Name, 1)
	}
	scopes := p.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return apispec.IdentityProvider{Name: p.Name, DisplayName: p.DisplayName, Issuer: p.Issuer, ClientID: p.ClientID,
		ClientSecretEnv: p.ClientSecretEnv, Scopes: scopes, UsernameClaim: p.UsernameClaim, RedirectURI: redirect,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// providerParam checks that the caller is a global admin and returns the
// {name} path value.
func (h *handler) providerParam(r *http.Request) (string, error) {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return "", err
	}
	return registry.ParseIdentityProviderName(r.PathValue("name"))
}

func (h *handler) listIdentityProviders(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	ps, err := h.Index.ListIdentityProviders(r.Context())
	if err != nil {
		return err
	}
	out := apispec.IdentityProviderList{Providers: make([]apispec.IdentityProvider, 0, len(ps))}
	for _, p := range ps {
		out.Providers = append(out.Providers, h.identityProviderDoc(p))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	name, err := h.providerParam(r)
	if err != nil {
		return err
	}
	p, err := h.Index.GetIdentityProvider(r.Context(), name)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.identityProviderDoc(p))
}

// putIdentityProvider creates the provider (201) or replaces its whole
// configuration (200).
func (h *handler) putIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	name, err := h.providerParam(r)
	if err != nil {
		return err
	}
	var req apispec.PutIdentityProviderRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	p := req.Provider(name)
	if err := p.Check(); err != nil {
		return err
	}
	var warnings []string
	if h.CheckIssuer != nil {
		warning, err := h.CheckIssuer(r.Context(), p.Issuer)
		if err != nil {
			return err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	now := h.Now().UTC()
	p.CreatedAt, p.UpdatedAt = now, now
	// Whether the provider is created is known before the write, for
	// the audit entry that commits with it (as for mirror upstreams).
	verb := "replaced"
	if _, err := h.Index.GetIdentityProvider(r.Context(), name); registry.IsKind(err, registry.NotFound) {
		verb = "created"
	} else if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditIdentityProviderPut, Target: name,
		Details: verb + ": issuer " + p.Issuer + ", client " + p.ClientID + ", scopes " + strings.Join(p.Scopes, " ")})
	created, err := h.Index.PutIdentityProvider(store.WithEffects(r.Context(), fx), p)
	if err != nil {
		return err
	}
	h.done(r.Context(), fx)
	stored, err := h.Index.GetIdentityProvider(r.Context(), name)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	doc := h.identityProviderDoc(stored)
	doc.Warnings = warnings
	return httpjson.Write(w, status, doc)
}

func (h *handler) deleteIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	name, err := h.providerParam(r)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditIdentityProviderDelete, Target: name,
		Details: "with its role mappings; the users it created stay"})
	if err := h.Index.DeleteIdentityProvider(store.WithEffects(r.Context(), fx), name); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func roleMappingDoc(m registry.RoleMapping) apispec.RoleMapping {
	return apispec.RoleMapping{ID: m.ID, Provider: m.Provider, Claim: m.Claim, Value: m.Value, Namespace: m.Namespace,
		Role: string(m.Role), CreatedAt: m.CreatedAt}
}

func (h *handler) listRoleMappings(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	provider := r.URL.Query().Get(apispec.QueryProvider)
	if provider != "" {
		if _, err := registry.ParseIdentityProviderName(provider); err != nil {
			return err
		}
	}
	ms, err := h.Index.ListRoleMappings(r.Context(), provider)
	if err != nil {
		return err
	}
	out := apispec.RoleMappingList{Mappings: make([]apispec.RoleMapping, 0, len(ms))}
	for _, m := range ms {
		out.Mappings = append(out.Mappings, roleMappingDoc(m))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createRoleMapping(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.CreateRoleMappingRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	m := req.Mapping()
	if err := m.Check(); err != nil {
		return err
	}
	if m.Namespace != registry.GlobalAdminNamespace {
		if _, err := h.Index.GetNamespace(r.Context(), m.Namespace); err != nil {
			return err
		}
	}
	if existing, err := h.Index.ListRoleMappings(r.Context(), m.Provider); err == nil && len(existing) >= registry.MaxRoleMappingsPerProvider {
		return registry.Errorf(registry.Invalid, "identity provider %q has %d role mappings, the limit", m.Provider, len(existing))
	}
	m.CreatedAt = h.Now().UTC()
	e := registry.AuditEvent{Action: registry.AuditRoleMappingCreate,
		Details: "identity provider " + m.Provider + ": " + m.Claim + "=" + m.Value + " gives " + string(m.Role) + " in " + m.Namespace}
	if m.Namespace != registry.GlobalAdminNamespace {
		e.Namespace = m.Namespace
	}
	fx := h.effects(r, e)
	fx.Bind = func(record any) { // the ID, assigned by the store
		if stored, ok := record.(registry.RoleMapping); ok {
			fx.Audit[0].Target = strconv.FormatInt(stored.ID, 10)
		}
	}
	m, err := h.Index.CreateRoleMapping(store.WithEffects(r.Context(), fx), m)
	if err != nil {
		return err
	}
	h.done(r.Context(), fx)
	return httpjson.Write(w, http.StatusCreated, roleMappingDoc(m))
}

func (h *handler) mappingParam(r *http.Request) (int64, error) {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, registry.Errorf(registry.Invalid, "invalid role mapping ID %q: use the number trove sso mapping list shows", r.PathValue("id"))
	}
	return id, nil
}

func (h *handler) getRoleMapping(w http.ResponseWriter, r *http.Request) error {
	id, err := h.mappingParam(r)
	if err != nil {
		return err
	}
	m, err := h.Index.GetRoleMapping(r.Context(), id)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, roleMappingDoc(m))
}

func (h *handler) deleteRoleMapping(w http.ResponseWriter, r *http.Request) error {
	id, err := h.mappingParam(r)
	if err != nil {
		return err
	}
	m, err := h.Index.GetRoleMapping(r.Context(), id)
	if err != nil {
		return err
	}
	e := registry.AuditEvent{Action: registry.AuditRoleMappingDelete, Target: strconv.FormatInt(id, 10),
		Details: "identity provider " + m.Provider + ": " + m.Claim + "=" + m.Value + " gave " + string(m.Role) + " in " + m.Namespace + "; granted roles stay until each user's next sign-in"}
	if m.Namespace != registry.GlobalAdminNamespace {
		e.Namespace = m.Namespace
	}
	fx := h.effects(r, e)
	if err := h.Index.DeleteRoleMapping(store.WithEffects(r.Context(), fx), id); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
