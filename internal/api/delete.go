package api

import (
	"context"
	"net/http"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerDeletes mounts the deletes of provider versions, whole
// providers and whole modules (a module version's is in modules.go) and
// the garbage collection route (docs/lifecycle.md). Deletes need admin
// rights on the namespace and a confirm parameter naming what goes; they
// remove index rows only, and the garbage collector reclaims the blobs.
func (h *handler) registerDeletes(route func(string, httpjson.HandlerFunc)) {
	route("DELETE "+apispec.RouteProviderVersion, h.deleteProviderVersion)
	route("DELETE "+apispec.RouteProvider, h.deleteProvider)
	route("DELETE "+apispec.RouteModule, h.deleteModule)
	route("POST "+apispec.RouteGC, h.runGC)
}

// The deletes' rules (rights, the confirmation, audit entries and
// events) are operations.DeleteProviderVersion, DeleteProvider,
// DeleteModule and DeleteModuleVersion; the collection's
// operations.CollectGarbage.

// inUseParam reads the in-use flag of a delete (apispec.InUseParam):
// absent, "false" or "true".
func inUseParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get(apispec.InUseParam)
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, registry.Errorf(registry.Invalid, "%s must be true or false, got %q", apispec.InUseParam, registry.Elide(v))
}

func (h *handler) deleteProviderVersion(w http.ResponseWriter, r *http.Request) error {
	inUse, err := inUseParam(r)
	if err != nil {
		return err
	}
	if err := h.Ops.DeleteProviderVersion(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("type"), r.PathValue("version"),
		r.URL.Query().Get(apispec.ConfirmParam), inUse); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) deleteProvider(w http.ResponseWriter, r *http.Request) error {
	inUse, err := inUseParam(r)
	if err != nil {
		return err
	}
	n, err := h.Ops.DeleteProvider(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("type"), r.URL.Query().Get(apispec.ConfirmParam), inUse)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, apispec.DeleteResult{Versions: n})
}

func (h *handler) deleteModule(w http.ResponseWriter, r *http.Request) error {
	inUse, err := inUseParam(r)
	if err != nil {
		return err
	}
	n, err := h.Ops.DeleteModule(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("system"),
		r.URL.Query().Get(apispec.ConfirmParam), inUse)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, apispec.DeleteResult{Versions: n})
}

// runGC runs one garbage collection (global admins).
func (h *handler) runGC(w http.ResponseWriter, r *http.Request) error {
	if err := h.require(r, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	var req apispec.GCRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	grace, err := req.GraceDuration()
	if err != nil {
		return err
	}
	// A collection the client stops waiting for (trove gc waits 5
	// minutes for an answer) runs to its end and is audited all the same.
	rep, err := h.Ops.CollectGarbage(context.WithoutCancel(r.Context()), actor(r), gc.Run{DryRun: req.DryRun, Grace: grace})
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, GCReportDoc(rep))
}

// GCReportDoc renders a collection's report as the API shows it.
func GCReportDoc(rep gc.Report) apispec.GCReport {
	doc := apispec.GCReport{DryRun: rep.DryRun, Grace: rep.Grace.Round(time.Second).String(), StoredBlobs: rep.Stored,
		ReferencedBlobs: rep.Referenced, ReclaimedBytes: rep.ReclaimedBytes, YoungBlobs: rep.Young, RescuedBlobs: rep.Rescued,
		Reclaimed: []apispec.GCBlob{}, ExpiredVersions: []apispec.ExpiredVersion{}}
	for _, e := range rep.Expired {
		doc.ExpiredVersions = append(doc.ExpiredVersions, apispec.ExpiredVersion{Kind: e.Kind, Namespace: e.Namespace,
			Name: e.Name, System: e.System, Version: e.Version})
	}
	for _, b := range rep.Reclaimed {
		doc.Reclaimed = append(doc.Reclaimed, apispec.GCBlob{Digest: b.Digest, Size: b.Size})
	}
	return doc
}
