package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerRetention mounts the retention rule of a namespace: read rights
// to see it, admin rights to set or remove it (the collector deletes what
// it expires).
func (h *handler) registerRetention(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteRetention, h.getRetention)
	route("PUT "+apispec.RouteRetention, h.putRetention)
	route("DELETE "+apispec.RouteRetention, h.deleteRetention)
}

// RetentionDoc renders a rule as the API shows it.
func RetentionDoc(r registry.RetentionRule) apispec.RetentionRule {
	return apispec.RetentionRule{Namespace: r.Namespace, KeepLast: r.KeepLast,
		KeepWithin: apispec.FormatRetentionDuration(r.KeepWithin), Pin: r.Pin, UpdatedAt: r.UpdatedAt, UpdatedBy: r.UpdatedBy}
}

// The rules of retention rules are operations.RetentionRule,
// SetRetentionRule and DeleteRetentionRule: these handlers decode, call
// and encode.

func (h *handler) getRetention(w http.ResponseWriter, r *http.Request) error {
	rule, err := h.Ops.RetentionRule(r.Context(), actor(r), r.PathValue("namespace"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, RetentionDoc(rule))
}

func (h *handler) putRetention(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (operations.SetRetentionRule checks
	// them again).
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	var req apispec.RetentionRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	rule, err := retentionRule(req, ns)
	if err != nil {
		return err
	}
	if rule, err = h.Ops.SetRetentionRule(r.Context(), actor(r), ns, rule); err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, RetentionDoc(rule))
}

func (h *handler) deleteRetention(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteRetentionRule(r.Context(), actor(r), r.PathValue("namespace")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
