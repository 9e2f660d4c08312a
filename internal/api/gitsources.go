package api

import (
	"io"
	"net/http"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
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

// gitSourceRef returns the git source a route names (namespace, module
// name and system, unchecked: the operations check them with the rights).
func gitSourceRef(r *http.Request) operations.GitSourceRef {
	return operations.GitSourceRef{Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), System: r.PathValue("system")}
}

func (h *handler) listGitSources(w http.ResponseWriter, r *http.Request) error {
	all, err := h.Ops.GitSources(r.Context(), actor(r), r.PathValue("namespace"))
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
	g, err := h.Ops.GitSource(r.Context(), actor(r), gitSourceRef(r))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, h.gitSourceDoc(g))
}

func (h *handler) createGitSource(w http.ResponseWriter, r *http.Request) error {
	ref := gitSourceRef(r)
	// The rights first: a caller who may not create learns nothing of
	// the body's faults.
	if _, err := h.Ops.Namespace(r.Context(), actor(r), ref.Namespace, registry.ScopeAdmin); err != nil {
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
	created, err := h.Ops.CreateGitSource(r.Context(), actor(r), gitsource.Source{
		Namespace: ref.Namespace, Name: ref.Name, System: ref.System, URL: req.URL, Subdir: req.Subdir, TagPrefix: req.TagPrefix,
		Auth: req.Auth, Username: req.Username, Password: req.Password, SSHKey: req.SSHPrivateKey, KnownHosts: req.KnownHosts,
		PollInterval: poll,
	})
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, apispec.CreatedGitSource{GitSource: h.gitSourceDoc(created.Source), WebhookSecret: created.WebhookSecret})
}

func (h *handler) deleteGitSource(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteGitSource(r.Context(), actor(r), gitSourceRef(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// syncGitSource syncs a source now and answers what it published.
func (h *handler) syncGitSource(w http.ResponseWriter, r *http.Request) error {
	rep, err := h.Ops.SyncGitSource(r.Context(), actor(r), gitSourceRef(r))
	if err != nil {
		return err
	}
	out := apispec.GitSourceSyncResult{Published: rep.Published, Current: rep.Current, Ignored: rep.Ignored, Refused: rep.Refused}
	if out.Published == nil {
		out.Published = []string{}
	}
	if out.Refused == nil {
		out.Refused = []string{}
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// gitSourceHook receives a push webhook: 202 when it verifies (the sync
// runs in the background), 401 when it does not (nothing done).
func (h *handler) gitSourceHook(w http.ResponseWriter, r *http.Request) error {
	svc := h.GitSources
	if svc == nil {
		return registry.Errorf(registry.Unavailable, "this Trove does not take modules from git repositories")
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
