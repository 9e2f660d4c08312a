package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// gitSourcesPath is the page of a namespace's git sources, for its admins.
func gitSourcesPath(ns string) string { return "/namespaces/" + ns + "/git-sources" }

// gitSourceView is a git source as the page shows it: never a credential.
type gitSourceView struct {
	Name, System, URL, Subdir, TagPrefix, Auth string
	LastSyncAt, NextSyncAt                     time.Time
	LastError                                  string
	Published, Found                           int
	Versions                                   []string // published, newest first
}

// gitSourceForm is what the add form was filled with, shown again on a
// refusal (never the token).
type gitSourceForm struct{ Name, System, URL, Subdir, TagPrefix, Username string }

type gitSourcesData struct {
	CSRF      string
	Namespace registry.Namespace
	Sources   []gitSourceView
	Form      gitSourceForm
	Notice    string
	Error     string
	// WebhookSecret is the secret of the source just added, shown once.
	WebhookSecret, WebhookURL string
}

// redactURL returns u without user information (an ssh user name is no
// secret, but the page shows no user part at all).
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		u.User = nil
		return u.String()
	}
	if at := strings.Index(raw, "@"); at >= 0 && at < strings.Index(raw, ":") {
		return raw[at+1:]
	}
	return raw
}

func (s *Service) gitSourcesPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, err := s.namespaceAdmin(r, v)
	if err != nil {
		return err
	}
	d := gitSourcesData{}
	switch q := r.URL.Query(); {
	case q.Get("removed") != "":
		d.Notice = "The git source of " + registry.Elide(q.Get("removed")) + " is removed; the versions it published stay."
	}
	return s.showGitSources(w, r, v, n, http.StatusOK, d)
}

func (s *Service) showGitSources(w http.ResponseWriter, r *http.Request, v *visit, n registry.Namespace, status int, d gitSourcesData) error {
	a, err := s.actor(r)
	if err != nil {
		return err
	}
	all, err := s.opt.Operations.GitSources(r.Context(), a, n.Name)
	if err != nil && !registry.IsKind(err, registry.Unavailable) {
		return err
	}
	for _, g := range all {
		view := gitSourceView{Name: g.Name, System: g.System, URL: redactURL(g.URL), Subdir: g.Subdir, TagPrefix: g.TagPrefix, Auth: g.Auth,
			LastSyncAt: g.LastSyncAt, NextSyncAt: g.NextSyncAt, LastError: g.LastError}
		tags, err := s.opt.Operations.GitSourceTags(r.Context(), a, operations.GitSourceRef{Namespace: g.Namespace, Name: g.Name, System: g.System})
		if err != nil {
			return err
		}
		view.Found = len(tags)
		for _, t := range tags {
			if !t.PublishedAt.IsZero() {
				view.Published++
				view.Versions = append(view.Versions, t.Version)
			}
		}
		registry.SortNewestFirst(view.Versions, func(v string) string { return v })
		d.Sources = append(d.Sources, view)
	}
	d.Namespace, d.CSRF = n, s.csrfFor("session", v.sessionID)
	s.render(w, r, v, status, "Git sources of "+n.Name, "gitsources", d)
	return nil
}

// addGitSource adds a git source from the form, through the same
// operation as the API (operations.CreateGitSource: rights, the URL
// rules and SSRF guard, audit), and shows its webhook secret once.
func (s *Service) addGitSource(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, form, a, err := s.namespaceAdminForm(w, r, v)
	if err != nil {
		return err
	}
	// The fields go to the operation as sent, as the API's do: the same
	// input gets the same answer through either.
	f := gitSourceForm{Name: form.Get("name"), System: form.Get("system"), URL: form.Get("url"),
		Subdir: form.Get("subdir"), TagPrefix: form.Get("tag_prefix"), Username: form.Get("username")}
	src := gitsource.Source{Namespace: n.Name, Name: f.Name, System: f.System, URL: f.URL, Subdir: f.Subdir, TagPrefix: f.TagPrefix}
	if token := form.Get("token"); f.Username != "" || token != "" {
		src.Auth, src.Username, src.Password = registry.GitAuthBasic, f.Username, token
	}
	created, err := s.opt.Operations.CreateGitSource(r.Context(), a, src)
	if err != nil {
		return s.showGitSources(w, r, v, n, statusOf(err), gitSourcesData{Error: registry.Message(err), Form: f})
	}
	g := created.Source
	v.secret = true
	d := gitSourcesData{Notice: "Added the git source of " + g.Namespace + "/" + g.Name + "/" + g.System + "; its first sync runs in the background.",
		WebhookSecret: created.WebhookSecret, WebhookURL: strings.TrimSuffix(s.opt.PublicURL.String(), "/") +
			strings.NewReplacer("{namespace}", g.Namespace, "{name}", g.Name, "{system}", g.System).Replace(apispec.RouteGitSourceHook)}
	return s.showGitSources(w, r, v, n, http.StatusOK, d)
}

// gitSourceAction parses the module of a remove or sync form.
func (s *Service) gitSourceAction(w http.ResponseWriter, r *http.Request, v *visit) (registry.Namespace, operations.Actor, operations.GitSourceRef, error) {
	n, _, a, err := s.namespaceAdminForm(w, r, v)
	if err != nil {
		return n, a, operations.GitSourceRef{}, err
	}
	ref := operations.GitSourceRef{Namespace: n.Name, Name: r.PathValue("name"), System: r.PathValue("system")}
	if _, err := registry.ParseModuleName(ref.Name); err != nil {
		return n, a, ref, errNotFound
	}
	if _, err := registry.ParseModuleSystem(ref.System); err != nil {
		return n, a, ref, errNotFound
	}
	return n, a, ref, nil
}

func (s *Service) removeGitSource(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, a, ref, err := s.gitSourceAction(w, r, v)
	if err != nil {
		return err
	}
	if err := s.opt.Operations.DeleteGitSource(r.Context(), a, ref); err != nil {
		return s.showGitSources(w, r, v, n, statusOf(err), gitSourcesData{Error: registry.Message(err)})
	}
	http.Redirect(w, r, gitSourcesPath(n.Name)+"?removed="+url.QueryEscape(ref.Name+"/"+ref.System), http.StatusSeeOther)
	return nil
}

// syncGitSource syncs a source now (operations.SyncGitSource, as the
// API's sync) and shows what it published.
func (s *Service) syncGitSource(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, a, ref, err := s.gitSourceAction(w, r, v)
	if err != nil {
		return err
	}
	rep, err := s.opt.Operations.SyncGitSource(r.Context(), a, ref)
	if err != nil {
		return s.showGitSources(w, r, v, n, statusOf(err), gitSourcesData{Error: "Sync of " + ref.Name + "/" + ref.System + " failed: " + registry.Message(err)})
	}
	d := gitSourcesData{Notice: "Synced " + ref.Name + "/" + ref.System + ": nothing new."}
	if len(rep.Published) > 0 {
		d.Notice = "Synced " + ref.Name + "/" + ref.System + ": published " + strings.Join(rep.Published, ", ") + "."
	}
	if len(rep.Refused) > 0 {
		d.Error = "Not published: " + strings.Join(rep.Refused, "; ")
	}
	return s.showGitSources(w, r, v, n, http.StatusOK, d)
}
