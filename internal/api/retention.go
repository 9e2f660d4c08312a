package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
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

func (h *handler) getRetention(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeRead)
	if err != nil {
		return err
	}
	rule, err := h.Index.GetRetentionRule(r.Context(), ns)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, RetentionDoc(rule))
}

func (h *handler) putRetention(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	var req apispec.RetentionRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	rule, err := req.Rule(ns)
	if err != nil {
		return err
	}
	// Microseconds, as the index stores it: the answer equals a later GET.
	rule.UpdatedAt, rule.UpdatedBy = h.Now().UTC().Truncate(time.Microsecond), auth.FromContext(r.Context()).Actor()
	doc := RetentionDoc(rule)
	details := "keep_last " + strconv.Itoa(rule.KeepLast) + " keep_within " + doc.KeepWithin + " pin [" + strings.Join(rule.Pin, "; ") + "]"
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditRetentionPut, Namespace: ns, Target: ns, Details: details})
	if err := h.Index.PutRetentionRule(store.WithEffects(r.Context(), fx), rule); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	return httpjson.Write(w, http.StatusOK, doc)
}

func (h *handler) deleteRetention(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditRetentionDelete, Namespace: ns, Target: ns})
	if err := h.Index.DeleteRetentionRule(store.WithEffects(r.Context(), fx), ns); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
