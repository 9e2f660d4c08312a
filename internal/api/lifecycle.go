package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// registerLifecycle mounts the routes that deprecate, undeprecate, revoke
// and restore provider and module versions (docs/lifecycle.md).
// Deprecating is a publisher's call (it only warns); revoking changes what
// new resolutions choose, so it needs admin rights on the namespace.
func (h *handler) registerLifecycle(route func(string, httpjson.HandlerFunc)) {
	route("PUT "+apispec.RouteProviderDeprecation, h.providerLifecycle(opDeprecate))
	route("DELETE "+apispec.RouteProviderDeprecation, h.providerLifecycle(opUndeprecate))
	route("PUT "+apispec.RouteProviderRevocation, h.providerLifecycle(opRevoke))
	route("DELETE "+apispec.RouteProviderRevocation, h.providerLifecycle(opRestore))
	route("PUT "+apispec.RouteModuleDeprecation, h.moduleLifecycle(opDeprecate))
	route("DELETE "+apispec.RouteModuleDeprecation, h.moduleLifecycle(opUndeprecate))
	route("PUT "+apispec.RouteModuleRevocation, h.moduleLifecycle(opRevoke))
	route("DELETE "+apispec.RouteModuleRevocation, h.moduleLifecycle(opRestore))
}

// lifecycleOp is one change of a version's lifecycle.
type lifecycleOp int

const (
	opDeprecate lifecycleOp = iota
	opUndeprecate
	opRevoke
	opRestore
)

// scope is the right the operation needs on the namespace.
func (op lifecycleOp) scope() registry.Scope {
	if op == opRevoke || op == opRestore {
		return registry.ScopeAdmin
	}
	return registry.ScopePublish
}

// audit returns the audit action of op for a provider or a module.
func (op lifecycleOp) audit(module bool) string {
	actions := [2][4]string{
		{registry.AuditProviderDeprecate, registry.AuditProviderUndeprecate, registry.AuditProviderRevoke, registry.AuditProviderRestore},
		{registry.AuditModuleDeprecate, registry.AuditModuleUndeprecate, registry.AuditModuleRevoke, registry.AuditModuleRestore},
	}
	i := 0
	if module {
		i = 1
	}
	return actions[i][op]
}

// event returns the webhook event of op for a provider or a module
// version, with the reason and link of d or rv.
func (op lifecycleOp) event(module bool, namespace, name, system, version string, d *registry.Deprecation, rv *registry.Revocation) webhook.Event {
	types := [2][4]string{
		{registry.EventProviderDeprecated, registry.EventProviderUndeprecated, registry.EventProviderRevoked, registry.EventProviderRestored},
		{registry.EventModuleDeprecated, registry.EventModuleUndeprecated, registry.EventModuleRevoked, registry.EventModuleRestored},
	}
	i := 0
	if module {
		i = 1
	}
	ev := webhook.Event{Type: types[i][op], Namespace: namespace, Name: name, System: system, Version: version}
	if d != nil {
		ev.Reason, ev.Link = d.Reason, d.Link
	}
	if rv != nil {
		ev.Reason = rv.Reason
	}
	return ev
}

// lifecycleChange decodes the request body of op and returns the
// deprecation or revocation to store (nil clears it) and the audit
// details.
func (h *handler) lifecycleChange(w http.ResponseWriter, r *http.Request, op lifecycleOp) (*registry.Deprecation, *registry.Revocation, string, error) {
	by := auth.FromContext(r.Context()).Actor()
	switch op {
	case opDeprecate:
		var req apispec.DeprecateRequest
		if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
			return nil, nil, "", err
		}
		if err := req.Validate(); err != nil {
			return nil, nil, "", err
		}
		details := "reason: " + req.Reason
		if req.Link != "" {
			details += " link: " + req.Link
		}
		return &registry.Deprecation{Reason: req.Reason, Link: req.Link, At: h.Now(), By: by}, nil, details, nil
	case opRevoke:
		var req apispec.RevokeRequest
		if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
			return nil, nil, "", err
		}
		if err := req.Validate(); err != nil {
			return nil, nil, "", err
		}
		return nil, &registry.Revocation{Reason: req.Reason, At: h.Now(), By: by}, "reason: " + req.Reason, nil
	}
	return nil, nil, "", nil
}

// providerLifecycle changes the lifecycle of a provider version and
// answers the version document.
func (h *handler) providerLifecycle(op lifecycleOp) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ns, typ, ver, err := h.providerVersionParams(r, op.scope())
		if err != nil {
			return err
		}
		d, rv, details, err := h.lifecycleChange(w, r, op)
		if err != nil {
			return err
		}
		ctx := r.Context()
		fx := h.effects(r, registry.AuditEvent{Action: op.audit(false), Namespace: ns,
			Target: ns + "/" + typ + " " + ver, Details: details}, op.event(false, ns, typ, "", ver, d, rv))
		wctx := store.WithEffects(ctx, fx)
		switch op {
		case opDeprecate, opUndeprecate:
			err = h.Index.SetProviderDeprecation(wctx, ns, typ, ver, d)
		default:
			err = h.Index.SetProviderRevocation(wctx, ns, typ, ver, rv)
		}
		if err != nil {
			return err
		}
		h.done(ctx, fx)
		v, err := h.Index.GetProviderVersion(ctx, ns, typ, ver)
		if err != nil {
			return err
		}
		counts, err := h.providerDownloads(ctx, ns, typ)
		if err != nil {
			return err
		}
		return httpjson.Write(w, http.StatusOK, withDownloads(VersionDoc(v), counts))
	}
}

// moduleLifecycle changes the lifecycle of a module version and answers
// the version document (without metadata).
func (h *handler) moduleLifecycle(op lifecycleOp) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ns, err := h.namespaceParam(r, op.scope())
		if err != nil {
			return err
		}
		name, system, err := moduleParams(r)
		if err != nil {
			return err
		}
		ver := r.PathValue("version")
		if _, err := registry.ParseVersion(ver); err != nil {
			return err
		}
		d, rv, details, err := h.lifecycleChange(w, r, op)
		if err != nil {
			return err
		}
		ctx := r.Context()
		fx := h.effects(r, registry.AuditEvent{Action: op.audit(true), Namespace: ns,
			Target: ns + "/" + name + "/" + system + " " + ver, Details: details}, op.event(true, ns, name, system, ver, d, rv))
		wctx := store.WithEffects(ctx, fx)
		switch op {
		case opDeprecate, opUndeprecate:
			err = h.Index.SetModuleDeprecation(wctx, ns, name, system, ver, d)
		default:
			err = h.Index.SetModuleRevocation(wctx, ns, name, system, ver, rv)
		}
		if err != nil {
			return err
		}
		h.done(ctx, fx)
		v, err := h.Index.GetModuleVersion(ctx, ns, name, system, ver)
		if err != nil {
			return err
		}
		counts, err := h.moduleDownloads(ctx, ns, name, system)
		if err != nil {
			return err
		}
		doc := ModuleVersionDoc(v)
		doc.Metadata = nil
		doc.Downloads = counts[registry.ModuleDownload(ns, name, system, v.Version)]
		return httpjson.Write(w, http.StatusOK, doc)
	}
}
