package api

import (
	"net/http"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
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

// The rules of identity providers and role mappings are
// operations.IdentityProviders, IdentityProvider, PutIdentityProvider,
// DeleteIdentityProvider, RoleMappings, RoleMapping, CreateRoleMapping
// and DeleteRoleMapping: these handlers decode, call and encode.

func (h *handler) listIdentityProviders(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.Ops.IdentityProviders(r.Context(), actor(r))
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
	p, err := h.Ops.IdentityProvider(r.Context(), actor(r), r.PathValue("name"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.identityProviderDoc(p))
}

// putIdentityProvider creates the provider (201) or replaces its whole
// configuration (200).
func (h *handler) putIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	// Rights and name first, then the body (operations.PutIdentityProvider
	// checks them again).
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	name, err := registry.ParseIdentityProviderName(r.PathValue("name"))
	if err != nil {
		return err
	}
	var req apispec.PutIdentityProviderRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	res, err := h.Ops.PutIdentityProvider(r.Context(), actor(r), identityProvider(req, name))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	doc := h.identityProviderDoc(res.Provider)
	doc.Warnings = res.Warnings
	return httpjson.Write(w, status, doc)
}

func (h *handler) deleteIdentityProvider(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteIdentityProvider(r.Context(), actor(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func roleMappingDoc(m registry.RoleMapping) apispec.RoleMapping {
	return apispec.RoleMapping{ID: m.ID, Provider: m.Provider, Claim: m.Claim, Value: m.Value, Namespace: m.Namespace,
		Role: string(m.Role), CreatedAt: m.CreatedAt}
}

func (h *handler) listRoleMappings(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.Ops.RoleMappings(r.Context(), actor(r), r.URL.Query().Get(apispec.QueryProvider))
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
	// Rights first, then the body (operations.CreateRoleMapping checks
	// them again).
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.CreateRoleMappingRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	m, err := h.Ops.CreateRoleMapping(r.Context(), actor(r), roleMapping(req))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, roleMappingDoc(m))
}

func (h *handler) getRoleMapping(w http.ResponseWriter, r *http.Request) error {
	m, err := h.Ops.RoleMapping(r.Context(), actor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, roleMappingDoc(m))
}

func (h *handler) deleteRoleMapping(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteRoleMapping(r.Context(), actor(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
