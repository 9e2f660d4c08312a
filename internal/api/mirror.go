package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerMirror mounts the routes of the provider mirror's upstream
// registries. Only global admins may read or change them: an upstream's
// configuration names private hosts and decides what Trove downloads.
func (h *handler) registerMirror(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteMirrorUpstreams, h.listMirrorUpstreams)
	route("GET "+apispec.RouteMirrorUpstream, h.getMirrorUpstream)
	route("PUT "+apispec.RouteMirrorUpstream, h.putMirrorUpstream)
	route("DELETE "+apispec.RouteMirrorUpstream, h.deleteMirrorUpstream)
}

func (h *handler) listMirrorUpstreams(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	ups, err := h.Index.ListMirrorUpstreams(r.Context())
	if err != nil {
		return err
	}
	out := apispec.MirrorUpstreamList{Upstreams: make([]apispec.MirrorUpstream, 0, len(ups))}
	for _, u := range ups {
		out.Upstreams = append(out.Upstreams, upstreamDoc(u))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	host, err := h.upstreamParam(r)
	if err != nil {
		return err
	}
	u, err := h.Index.GetMirrorUpstream(r.Context(), host)
	if err != nil {
		return upstreamNotFound(err, host)
	}
	return httpjson.Write(w, http.StatusOK, upstreamDoc(u))
}

// putMirrorUpstream creates the upstream (201) or replaces its whole
// configuration (200), keeping its creation time
// (operations.PutMirrorUpstream).
func (h *handler) putMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	host, err := h.upstreamParam(r)
	if err != nil {
		return err
	}
	var req apispec.PutMirrorUpstreamRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	stored, created, err := h.Ops.PutMirrorUpstream(r.Context(), actor(r), host, req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return httpjson.Write(w, status, upstreamDoc(stored))
}

func (h *handler) deleteMirrorUpstream(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteMirrorUpstream(r.Context(), actor(r), r.PathValue("host")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// upstreamParam checks that the caller is a global admin and returns the
// {host} path value normalized.
func (h *handler) upstreamParam(r *http.Request) (string, error) {
	return h.Ops.MirrorHost(actor(r), r.PathValue("host"))
}

func upstreamNotFound(err error, host string) error {
	if registry.IsKind(err, registry.NotFound) {
		return registry.Errorf(registry.NotFound, "mirror upstream %s not found", host)
	}
	return err
}

func upstreamDoc(u registry.MirrorUpstream) apispec.MirrorUpstream {
	doc := apispec.MirrorUpstream{Host: u.Host, ServiceURL: u.ServiceURL, CACertificates: u.CACertificates,
		Allow: make([]apispec.MirrorRule, 0, len(u.Allow)), Description: u.Description, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
	for _, rule := range u.Allow {
		doc.Allow = append(doc.Allow, ruleDoc(rule))
	}
	return doc
}

func ruleDoc(rule registry.MirrorRule) apispec.MirrorRule {
	r := apispec.MirrorRule{Provider: rule.Provider, Versions: rule.Versions}
	if rule.MinAge > 0 {
		r.MinAge = registry.FormatAge(rule.MinAge)
	}
	return r
}
