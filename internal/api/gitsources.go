package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// registerGitSources mounts the git source routes; the webhook takes no
// token (open).
func (h *handler) registerGitSources(route, open func(pattern string, fn httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteGitSources, h.listGitSources)
	route("GET "+apispec.RouteGitSource, h.getGitSource)
	route("POST "+apispec.RouteGitSource, h.createGitSource)
	route("DELETE "+apispec.RouteGitSource, h.deleteGitSource)
	route("POST "+apispec.RouteGitSourceSync, h.syncGitSource)
	open("POST "+apispec.RouteGitSourceHook, h.gitSourceHook)
}

// gitSources returns the service, or an error if this server has none.
func (h *handler) gitSources() (*gitsource.Service, error) {
	if h.GitSources == nil {
		return nil, registry.Errorf(registry.Unavailable, "this Trove does not take modules from git repositories")
	}
	return h.GitSources, nil
}

// gitSourceParams returns the namespace (checked for scope) and the
// module name and system of a git source route.
func (h *handler) gitSourceParams(r *http.Request, scope registry.Scope) (ns, name, system string, err error) {
	if ns, err = h.namespaceParam(r, scope); err != nil {
		return "", "", "", err
	}
	if name, system, err = moduleParams(r); err != nil {
		return "", "", "", err
	}
	return ns, name, system, nil
}

func (h *handler) listGitSources(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	ns, err := h.namespaceParam(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	all, err := svc.List(r.Context(), ns)
	if err != nil {
		return err
	}
	out := apispec.GitSourceList{GitSources: make([]apispec.GitSource, 0, len(all))}
	for _, g := range all {
		out.GitSources = append(out.GitSources, h.gitSourceDoc(g))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getGitSource(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	ns, name, system, err := h.gitSourceParams(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	g, err := svc.Get(r.Context(), ns, name, system)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.gitSourceDoc(g))
}

func (h *handler) createGitSource(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	ns, name, system, err := h.gitSourceParams(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	var req apispec.CreateGitSourceRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	poll := time.Duration(req.PollIntervalSeconds) * time.Second
	if req.PollIntervalSeconds < 0 {
		poll = -1
	}
	target := ns + "/" + name + "/" + system
	details := "url " + registry.Elide(req.URL)
	if req.Subdir != "" {
		details += ", subdir " + registry.Elide(req.Subdir)
	}
	if req.Auth != "" {
		details += ", auth " + registry.Elide(req.Auth) // never the credentials
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditGitSourceCreate, Namespace: ns, Target: target, Details: details})
	created, err := svc.Create(store.WithEffects(r.Context(), fx), gitsource.Source{
		Namespace: ns, Name: name, System: system, URL: req.URL, Subdir: req.Subdir, TagPrefix: req.TagPrefix,
		Auth: req.Auth, Username: req.Username, Password: req.Password, SSHKey: req.SSHPrivateKey, KnownHosts: req.KnownHosts,
		PollInterval: poll, CreatedBy: auth.FromContext(r.Context()).Actor(),
	})
	if err != nil {
		return err
	}
	h.done(r.Context(), fx)
	h.Logger.InfoContext(r.Context(), "created git source", "namespace", ns, "name", name, "system", system, "url", created.Source.URL)
	svc.Trigger(ns, name, system) // the first sync, in the background
	return httpjson.Write(w, http.StatusCreated, apispec.CreatedGitSource{GitSource: h.gitSourceDoc(created.Source), WebhookSecret: created.WebhookSecret})
}

func (h *handler) deleteGitSource(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	ns, name, system, err := h.gitSourceParams(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditGitSourceDelete, Namespace: ns, Target: ns + "/" + name + "/" + system,
		Details: "published versions kept"})
	if err := svc.Delete(store.WithEffects(r.Context(), fx), ns, name, system); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// syncGitSource syncs a source now and answers what it published.
func (h *handler) syncGitSource(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	ns, name, system, err := h.gitSourceParams(r, registry.ScopePublish)
	if err != nil {
		return err
	}
	actor := auth.FromContext(r.Context()).Actor()
	rep, err := svc.SyncWait(r.Context(), ns, name, system, actor)
	if err != nil {
		return err
	}
	h.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditGitSourceSync, Namespace: ns, Target: ns + "/" + name + "/" + system,
		Details: syncDetails(rep)})
	out := apispec.GitSourceSyncResult{Published: rep.Published, Current: rep.Current, Ignored: rep.Ignored, Refused: rep.Refused}
	if out.Published == nil {
		out.Published = []string{}
	}
	if out.Refused == nil {
		out.Refused = []string{}
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func syncDetails(rep gitsource.Report) string {
	d := "published " + strings.Join(rep.Published, ", ")
	if len(rep.Published) == 0 {
		d = "nothing new"
	}
	if len(rep.Refused) > 0 {
		d += "; refused: " + strings.Join(rep.Refused, "; ")
	}
	return registry.Elide(d)
}

// gitSourceHook receives a push webhook: 202 when it verifies (the sync
// runs in the background), 401 when it does not (nothing done).
func (h *handler) gitSourceHook(w http.ResponseWriter, r *http.Request) error {
	svc, err := h.gitSources()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, gitsource.MaxWebhookBody))
	if err != nil {
		return registry.Errorf(registry.TooLarge, "a webhook body is at most %d bytes", gitsource.MaxWebhookBody)
	}
	ns, err := registry.ParseNamespace(r.PathValue("namespace"))
	if err != nil {
		return err
	}
	name, system, err := moduleParams(r)
	if err != nil {
		return err
	}
	synced, err := svc.Webhook(r.Context(), ns, name, system, r.Header, body)
	if err != nil {
		return err
	}
	if !synced {
		return httpjson.Write(w, http.StatusOK, map[string]string{"status": "verified; nothing to do"})
	}
	return httpjson.Write(w, http.StatusAccepted, map[string]string{"status": "sync scheduled"})
}

// gitSourceDoc renders a git source as the API shows it.
func (h *handler) gitSourceDoc(g registry.GitSource) apispec.GitSource {
	doc := apispec.GitSource{Namespace: g.Namespace, Name: g.Name, System: g.System, URL: g.URL, Subdir: g.Subdir, TagPrefix: g.TagPrefix,
		Auth: g.Auth, Username: g.Username, KnownHosts: g.KnownHosts, CreatedAt: g.CreatedAt, CreatedBy: g.CreatedBy, LastError: g.LastError}
	switch {
	case g.PollInterval < 0:
		doc.PollIntervalSeconds = -1
	default:
		doc.PollIntervalSeconds = int64(g.PollInterval / time.Second)
	}
	if !g.LastSyncAt.IsZero() {
		t := g.LastSyncAt
		doc.LastSyncAt = &t
	}
	if !g.NextSyncAt.IsZero() {
		t := g.NextSyncAt
		doc.NextSyncAt = &t
	}
	path := strings.NewReplacer("{namespace}", g.Namespace, "{name}", g.Name, "{system}", g.System).Replace(apispec.RouteGitSourceHook)
	if h.PublicURL != nil {
		doc.WebhookURL = strings.TrimSuffix(h.PublicURL.String(), "/") + path
	} else {
		doc.WebhookURL = path
	}
	return doc
}

// GitPublishEffects returns the effects of the module publishes a git
// source sync makes as actor (gitsource.Options.PublishEffects): the
// audit entry and module.published event of every module publish, with
// no request.
func GitPublishEffects(rec *audit.Recorder, em *webhook.Emitter) func(ctx context.Context, actor string) *store.Effects {
	return func(ctx context.Context, actor string) *store.Effects {
		return modulePublishEffects(ctx, rec, em, nil, actor)
	}
}
