package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
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

// confirmParts checks that the confirm parameter names want (parts of an
// address, compared after parse normalizes each; the version exactly),
// and refuses the delete with what to add otherwise.
func confirmParts(r *http.Request, what, cli string, want []string, parse []func(string) (string, error)) error {
	address := strings.Join(want, "/")
	refuse := registry.Errorf(registry.Invalid,
		"deleting %s %s breaks every configuration and lock file that uses it; to delete it anyway, repeat the request with %s=%s (%s --confirm)",
		what, address, apispec.ConfirmParam, address, cli)
	got := strings.Split(r.URL.Query().Get(apispec.ConfirmParam), "/")
	if len(got) != len(want) {
		return refuse
	}
	for i := range got {
		v := got[i]
		if parse[i] != nil {
			var err error
			if v, err = parse[i](v); err != nil {
				return refuse
			}
		}
		if v != want[i] {
			return refuse
		}
	}
	return nil
}

func parseVersion(v string) (string, error) {
	_, err := registry.ParseVersion(v)
	return v, err
}

func (h *handler) deleteProviderVersion(w http.ResponseWriter, r *http.Request) error {
	ns, typ, ver, err := h.providerVersionParams(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	if err := confirmParts(r, "provider version", "trove provider delete", []string{ns, typ, ver},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseProviderType, parseVersion}); err != nil {
		return err
	}
	ctx := r.Context()
	v, err := h.Index.GetProviderVersion(ctx, ns, typ, ver)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditProviderDelete, Namespace: ns,
		Target: ns + "/" + typ + " " + ver, Details: "sha256sums " + v.SHASumsDigest},
		webhook.Event{Type: registry.EventProviderDeleted, Namespace: ns, Name: typ, Version: ver})
	if err := h.Index.DeleteProviderVersion(store.WithEffects(ctx, fx), ns, typ, ver); err != nil {
		return err
	}
	h.done(ctx, fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) deleteProvider(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	typ, err := registry.ParseProviderType(r.PathValue("type"))
	if err != nil {
		return err
	}
	if err := confirmParts(r, "provider", "trove provider delete", []string{ns, typ},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseProviderType}); err != nil {
		return err
	}
	ctx := r.Context()
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditProviderDeleteAll, Namespace: ns, Target: ns + "/" + typ},
		webhook.Event{Type: registry.EventProviderDeleted, Namespace: ns, Name: typ})
	fx.Bind = countVersions(fx)
	n, err := h.Index.DeleteProvider(store.WithEffects(ctx, fx), ns, typ)
	if err != nil {
		return err
	}
	h.done(ctx, fx)
	return httpjson.Write(w, http.StatusOK, apispec.DeleteResult{Versions: n})
}

func (h *handler) deleteModule(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	name, system, err := moduleParams(r)
	if err != nil {
		return err
	}
	if err := confirmParts(r, "module", "trove module delete", []string{ns, name, system},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseModuleName, registry.ParseModuleSystem}); err != nil {
		return err
	}
	ctx := r.Context()
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditModuleDeleteAll, Namespace: ns, Target: ns + "/" + name + "/" + system},
		webhook.Event{Type: registry.EventModuleDeleted, Namespace: ns, Name: name, System: system})
	fx.Bind = countVersions(fx)
	n, err := h.Index.DeleteModule(store.WithEffects(ctx, fx), ns, name, system)
	if err != nil {
		return err
	}
	h.done(ctx, fx)
	return httpjson.Write(w, http.StatusOK, apispec.DeleteResult{Versions: n})
}

// countVersions returns an Effects.Bind that names the number of versions
// a whole delete removed in the details of its audit entry.
func countVersions(fx *store.Effects) func(any) {
	return func(record any) {
		if n, ok := record.(store.DeletedVersions); ok && len(fx.Audit) > 0 {
			fx.Audit[0].Details = strconv.Itoa(int(n)) + " versions"
		}
	}
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
	if h.GC == nil {
		return registry.Errorf(registry.Internal, "garbage collection is not configured on this server")
	}
	// A collection the client stops waiting for (trove gc waits 5
	// minutes for an answer) runs to its end and is audited all the same.
	ctx := context.WithoutCancel(r.Context())
	rep, err := h.GC.Run(ctx, GCEffects(gc.Run{DryRun: req.DryRun, Grace: grace}, h.Audit, h.Events, r, ""))
	RecordGC(ctx, h.Audit, r, "", rep, err)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, GCReportDoc(rep))
}

// GCEffects returns run with the effects of the versions its retention
// rules delete: each deletion commits its audit entry (provider.delete,
// module.delete) and its webhook event (provider.deleted,
// module.deleted) in its own transaction. actor is for collections
// without a request (r nil).
func GCEffects(run gc.Run, rec *audit.Recorder, events *webhook.Emitter, r *http.Request, actor string) gc.Run {
	run.Effects = func(e gc.Expired) *store.Effects {
		action := registry.AuditProviderDelete
		if e.Kind == "module" {
			action = registry.AuditModuleDelete
		}
		fx := &store.Effects{}
		rec.Add(fx, r, registry.AuditEvent{Action: action, Actor: actor, Namespace: e.Namespace,
			Target: e.Address() + " " + e.Version, Details: "retention rule of namespace " + e.Namespace})
		ev := webhook.Event{Type: registry.EventProviderDeleted, Namespace: e.Namespace, Name: e.Name, Version: e.Version,
			Actor: actor, Reason: "retention rule of namespace " + e.Namespace}
		if e.Kind == "module" {
			ev.Type, ev.System = registry.EventModuleDeleted, e.System
		}
		ctx := context.Background()
		if r != nil {
			ctx = r.Context()
		}
		events.Add(ctx, fx, r, ev)
		return fx
	}
	run.Done = func(ctx context.Context, fx *store.Effects) {
		rec.Done(ctx, fx)
		events.Done(ctx, fx)
	}
	return run
}

// RecordGC records a collection that was not a dry run and completed in
// the audit log (gc.run). It deletes no index row: the versions deleted
// by retention rules were recorded with their deletion (GCEffects).
// actor is for collections without a request (r nil).
func RecordGC(ctx context.Context, rec *audit.Recorder, r *http.Request, actor string, rep gc.Report, runErr error) {
	if rep.DryRun || runErr != nil {
		return
	}
	rec.Record(ctx, r, registry.AuditEvent{Action: registry.AuditGC, Actor: actor, Target: "blobs", Details: gcDetails(rep)})
}

// gcDetails sums up a collection for the audit log.
func gcDetails(rep gc.Report) string {
	return "reclaimed " + strconv.Itoa(len(rep.Reclaimed)) + " blobs, " + strconv.FormatInt(rep.ReclaimedBytes, 10) +
		" bytes; " + strconv.Itoa(len(rep.Expired)) + " versions deleted by retention rules; grace " + rep.Grace.String() +
		"; " + strconv.Itoa(rep.Stored) + " stored, " + strconv.Itoa(rep.Referenced) + " referenced"
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
