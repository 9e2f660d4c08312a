package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// registerLifecycle mounts the routes that deprecate, undeprecate, revoke
// and restore provider and module versions (docs/lifecycle.md); the rules
// are operations.ProviderLifecycle and ModuleLifecycle.
func (h *handler) registerLifecycle(route func(string, httpjson.HandlerFunc)) {
	route("PUT "+apispec.RouteProviderDeprecation, h.providerLifecycle(operations.Deprecate))
	route("DELETE "+apispec.RouteProviderDeprecation, h.providerLifecycle(operations.Undeprecate))
	route("PUT "+apispec.RouteProviderRevocation, h.providerLifecycle(operations.Revoke))
	route("DELETE "+apispec.RouteProviderRevocation, h.providerLifecycle(operations.Restore))
	route("PUT "+apispec.RouteModuleDeprecation, h.moduleLifecycle(operations.Deprecate))
	route("DELETE "+apispec.RouteModuleDeprecation, h.moduleLifecycle(operations.Undeprecate))
	route("PUT "+apispec.RouteModuleRevocation, h.moduleLifecycle(operations.Revoke))
	route("DELETE "+apispec.RouteModuleRevocation, h.moduleLifecycle(operations.Restore))
}

// lifecycleBody decodes the request body of c: the reason and link.
func lifecycleBody(w http.ResponseWriter, r *http.Request, c operations.LifecycleChange) (operations.Why, error) {
	switch c {
	case operations.Deprecate:
		var req apispec.DeprecateRequest
		if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
			return operations.Why{}, err
		}
		return operations.Why{Reason: req.Reason, Link: req.Link}, req.Validate()
	case operations.Revoke:
		var req apispec.RevokeRequest
		if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
			return operations.Why{}, err
		}
		return operations.Why{Reason: req.Reason}, req.Validate()
	}
	return operations.Why{}, nil
}

// providerLifecycle changes the lifecycle of a provider version and
// answers the version document.
func (h *handler) providerLifecycle(c operations.LifecycleChange) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		// Rights and path first, then the body.
		ns, typ, ver, err := h.providerVersionParams(r, c.Scope())
		if err != nil {
			return err
		}
		why, err := lifecycleBody(w, r, c)
		if err != nil {
			return err
		}
		ctx := r.Context()
		if err := h.Ops.ProviderLifecycle(ctx, actor(r), c, operations.VersionRef{Namespace: ns, Name: typ, Version: ver}, why); err != nil {
			return err
		}
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
func (h *handler) moduleLifecycle(c operations.LifecycleChange) httpjson.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ns, err := h.namespaceParam(r, c.Scope())
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
		why, err := lifecycleBody(w, r, c)
		if err != nil {
			return err
		}
		ctx := r.Context()
		ref := operations.VersionRef{Namespace: ns, Name: name, System: system, Version: ver}
		if err := h.Ops.ModuleLifecycle(ctx, actor(r), c, ref, why); err != nil {
			return err
		}
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
