package operations

import (
	"context"
	"strings"

	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// gitSources returns the git source service, or Unavailable if this
// Trove has none.
func (o *Operations) gitSources() (*gitsource.Service, error) {
	if o.opt.GitSources == nil {
		return nil, registry.Errorf(registry.Unavailable, "this Trove does not take modules from git repositories")
	}
	return o.opt.GitSources, nil
}

// GitSourceRef names the git source of one module.
type GitSourceRef struct{ Namespace, Name, System string }

func (g GitSourceRef) target() string { return g.Namespace + "/" + g.Name + "/" + g.System }

// gitSource checks a's scope on the source's namespace and the module's
// name and system, and returns the service and the parsed reference:
// the one place every git source operation starts.
func (o *Operations) gitSource(ctx context.Context, a Actor, ref GitSourceRef, scope registry.Scope) (*gitsource.Service, GitSourceRef, error) {
	svc, err := o.gitSources()
	if err != nil {
		return nil, ref, err
	}
	if ref.Namespace, err = o.Namespace(ctx, a, ref.Namespace, scope); err != nil {
		return nil, ref, err
	}
	if ref.Name, err = registry.ParseModuleName(ref.Name); err != nil {
		return nil, ref, err
	}
	if ref.System, err = registry.ParseModuleSystem(ref.System); err != nil {
		return nil, ref, err
	}
	return svc, ref, nil
}

// GitSources lists the git sources of namespace, for its publishers.
func (o *Operations) GitSources(ctx context.Context, a Actor, namespace string) ([]registry.GitSource, error) {
	svc, err := o.gitSources()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopePublish)
	if err != nil {
		return nil, err
	}
	return svc.List(ctx, ns)
}

// GitSource returns the git source of a module, for the namespace's
// publishers; NotFound if it has none.
func (o *Operations) GitSource(ctx context.Context, a Actor, ref GitSourceRef) (registry.GitSource, error) {
	svc, ref, err := o.gitSource(ctx, a, ref, registry.ScopePublish)
	if err != nil {
		return registry.GitSource{}, err
	}
	return svc.Get(ctx, ref.Namespace, ref.Name, ref.System)
}

// CreateGitSource adds the git source src of a module, for the
// namespace's admins: validated by gitsource.Service.Create (the URL's
// host through the SSRF guard), stored with its audit entry in one
// transaction, nothing stored on a refusal; the first sync is then
// scheduled in the background.
func (o *Operations) CreateGitSource(ctx context.Context, a Actor, src gitsource.Source) (gitsource.Created, error) {
	svc, ref, err := o.gitSource(ctx, a, GitSourceRef{src.Namespace, src.Name, src.System}, registry.ScopeAdmin)
	if err != nil {
		return gitsource.Created{}, err
	}
	src.Namespace, src.Name, src.System, src.CreatedBy = ref.Namespace, ref.Name, ref.System, a.name()
	details := "url " + registry.Elide(src.URL)
	if src.Subdir != "" {
		details += ", subdir " + registry.Elide(src.Subdir)
	}
	if src.Auth != "" {
		details += ", auth " + registry.Elide(src.Auth) // never the credentials
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditGitSourceCreate, Namespace: ref.Namespace, Target: ref.target(), Details: details}})
	created, err := svc.Create(store.WithEffects(ctx, fx), src)
	if err != nil {
		return gitsource.Created{}, err
	}
	o.done(ctx, fx)
	o.opt.Logger.InfoContext(ctx, "created git source", "namespace", ref.Namespace, "name", ref.Name, "system", ref.System, "url", created.Source.URL)
	svc.Trigger(ref.Namespace, ref.Name, ref.System)
	return created, nil
}

// DeleteGitSource removes the git source of a module, for the
// namespace's admins; the versions it published stay.
func (o *Operations) DeleteGitSource(ctx context.Context, a Actor, ref GitSourceRef) error {
	svc, ref, err := o.gitSource(ctx, a, ref, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditGitSourceDelete, Namespace: ref.Namespace, Target: ref.target(),
		Details: "published versions kept"}})
	if err := svc.Delete(store.WithEffects(ctx, fx), ref.Namespace, ref.Name, ref.System); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// SyncGitSource syncs the git source of a module now, for the
// namespace's publishers, waiting for a sync running elsewhere first,
// and records the outcome in the audit log.
func (o *Operations) SyncGitSource(ctx context.Context, a Actor, ref GitSourceRef) (gitsource.Report, error) {
	svc, ref, err := o.gitSource(ctx, a, ref, registry.ScopePublish)
	if err != nil {
		return gitsource.Report{}, err
	}
	rep, err := svc.SyncWait(ctx, ref.Namespace, ref.Name, ref.System, a.name())
	if err != nil {
		return rep, err
	}
	o.opt.Audit.Record(ctx, nil, registry.AuditEvent{Action: registry.AuditGitSourceSync, Namespace: ref.Namespace, Target: ref.target(),
		Actor: a.name(), SourceAddr: a.source(), Details: syncDetails(rep)})
	return rep, nil
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

// GitSourceTags returns the tags a module's git source recorded (the
// versions it found), for the namespace's publishers.
func (o *Operations) GitSourceTags(ctx context.Context, a Actor, ref GitSourceRef) ([]registry.GitTag, error) {
	svc, ref, err := o.gitSource(ctx, a, ref, registry.ScopePublish)
	if err != nil {
		return nil, err
	}
	return svc.Tags(ctx, ref.Namespace, ref.Name, ref.System)
}
