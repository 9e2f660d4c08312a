package operations

import (
	"context"
	"io"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// The publishes: a provider release, a module version and a provider
// version's documentation. Each takes the publish right on the
// namespace, then hands the upload to its publisher (internal/publish,
// internal/modules), which stages and checks every byte before anything
// is stored and makes the one index transaction; the audit entry and the
// webhook event commit in that transaction (store.WithEffects), named
// after what the store creates (Effects.Bind). An identical re-publish,
// concurrent or not, succeeds with Created false and records nothing
// (registry.ResolveCreateConflict); a refused one stores nothing.

// PublishProvider publishes version of namespace/typ from src, the
// release's files in upload order (publish.Publisher.PublishProvider
// says which). Its provenance names a: the CI pipeline a keyless token
// was issued to, or else the token and its user.
func (o *Operations) PublishProvider(ctx context.Context, a Actor, namespace, typ, version string, src publish.FileSource) (publish.Result, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopePublish)
	if err != nil {
		return publish.Result{}, err
	}
	if o.opt.Publisher == nil {
		return publish.Result{}, registry.Errorf(registry.Internal, "provider publishing is not configured on this server")
	}
	origin, err := o.origin(ctx, a)
	if err != nil {
		return publish.Result{}, err
	}
	if err := o.admitPublish(ctx, a, ns, origin.CI); err != nil {
		return publish.Result{}, err
	}
	fx := &store.Effects{}
	fx.Bind = func(record any) {
		v, ok := record.(registry.ProviderVersion)
		if !ok {
			return
		}
		fx.Audit, fx.Events = nil, nil
		o.addAudit(fx, a, registry.AuditEvent{Action: registry.AuditProviderPublish, Namespace: v.Namespace,
			Target: v.Namespace + "/" + v.Type + " " + v.Version, Details: signedDetails(v.SigningKey)})
		o.opt.Events.Add(ctx, fx, nil, webhook.Event{Type: registry.EventProviderPublished, Namespace: v.Namespace, Name: v.Type, Version: v.Version, Actor: a.name()})
	}
	res, err := o.opt.Publisher.PublishProvider(provenance.WithOrigin(store.WithEffects(ctx, fx), origin), ns, typ, version, src)
	if err != nil {
		return res, err
	}
	if res.Created {
		o.done(ctx, fx)
	}
	return res, nil
}

// origin says who publishes, for a version's provenance: the pipeline a
// keyless token was issued to, or the token and its user.
func (o *Operations) origin(ctx context.Context, a Actor) (provenance.Origin, error) {
	t := a.Principal.Token
	out := provenance.Origin{User: t.User, TokenID: t.ID}
	if a.Operator != "" || t.ID == "" {
		return out, nil
	}
	ci, ok, err := o.opt.Index.TokenCIClaims(ctx, t.ID)
	if err != nil {
		return out, err
	}
	if ok {
		out.CI = &ci
	}
	return out, nil
}

// signedDetails describes who signed a published version, for the audit
// log.
func signedDetails(k registry.SigningKey) string {
	if k.Managed {
		return "signed by Trove with managed key " + k.KeyID
	}
	return "signed by key " + k.KeyID
}

// PublishProviderDocs stores archive, a documentation archive (package
// providerdocs), as the documentation of the existing version of
// namespace/typ (publish.Publisher.PublishDocs): the same archive again
// succeeds with Created false, another one is a Conflict.
func (o *Operations) PublishProviderDocs(ctx context.Context, a Actor, namespace, typ, version string, archive io.Reader) (publish.DocsResult, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopePublish)
	if err != nil {
		return publish.DocsResult{}, err
	}
	if o.opt.Publisher == nil {
		return publish.DocsResult{}, registry.Errorf(registry.Internal, "provider publishing is not configured on this server")
	}
	// The audit entry commits with the documentation, named once its
	// digest is known.
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditProviderDocs, Namespace: ns, Target: ns + "/" + typ + " " + version}})
	fx.Bind = func(record any) {
		if d, ok := record.(store.DocsDigest); ok {
			fx.Audit[0].Details = "documentation " + string(d)
		}
	}
	res, err := o.opt.Publisher.PublishDocs(store.WithEffects(ctx, fx), ns, typ, version, archive)
	if err != nil {
		return res, err
	}
	if res.Created {
		o.done(ctx, fx)
	}
	return res, nil
}

// PublishModule publishes the module version up describes from its
// archive (modules.Publisher.Publish): the archive is staged and checked
// (entries, metadata, free-text limits) before anything is stored. A
// publish with a token stores the version's provenance, naming a as
// PublishProvider's does, when the namespace has a managed key; the git
// sources' publishes (a.Operator) get none.
func (o *Operations) PublishModule(ctx context.Context, a Actor, up modules.Upload) (modules.Result, error) {
	ns, err := o.Namespace(ctx, a, up.Namespace, registry.ScopePublish)
	if err != nil {
		return modules.Result{}, err
	}
	if o.opt.Modules == nil {
		return modules.Result{}, registry.Errorf(registry.Internal, "module publishing is not configured on this server")
	}
	up.Namespace = ns
	origin, err := o.origin(ctx, a)
	if err != nil {
		return modules.Result{}, err
	}
	if err := o.admitPublish(ctx, a, ns, origin.CI); err != nil {
		return modules.Result{}, err
	}
	// A publish with a token gets provenance naming it; the versions an
	// operator's git source publishes are Trove's own, like the mirror's.
	if a.Operator == "" {
		ctx = provenance.WithOrigin(ctx, origin)
	}
	return o.publishModule(ctx, a, up, func(v registry.ModuleVersion) string { return v.ArchiveFormat + " sha256 " + v.ArchiveDigest })
}

// MirrorActor is the actor the module mirror's publishes are audited
// under.
const MirrorActor = "mirror"

// PublishMirroredModule publishes a module version the module mirror
// fetched from its upstream (internal/mirror), through the checks of
// every module publish. The mirror acts for the operator who mapped the
// namespace (--module-mirror): the publish is audited as MirrorActor,
// with the version's origin (its upstream) as details.
func (o *Operations) PublishMirroredModule(ctx context.Context, up modules.Upload) (modules.Result, error) {
	if o.opt.Modules == nil {
		return modules.Result{}, registry.Errorf(registry.Internal, "module publishing is not configured on this server")
	}
	return o.publishModule(ctx, Actor{Operator: MirrorActor}, up, func(v registry.ModuleVersion) string { return v.Origin })
}

// publishModule makes the module publish up by a, its audit entry's
// details written by details.
func (o *Operations) publishModule(ctx context.Context, a Actor, up modules.Upload, details func(registry.ModuleVersion) string) (modules.Result, error) {
	fx := o.modulePublishEffects(ctx, a, details)
	res, err := o.opt.Modules.Publish(store.WithEffects(ctx, fx), up)
	if err != nil {
		return res, err
	}
	if res.Created {
		o.done(ctx, fx)
	}
	return res, nil
}

// modulePublishEffects returns the effects of a module publish by a: its
// audit entry and module.published event, completed with the version
// the store creates (Effects.Bind).
func (o *Operations) modulePublishEffects(ctx context.Context, a Actor, details func(registry.ModuleVersion) string) *store.Effects {
	fx := &store.Effects{}
	fx.Bind = func(record any) {
		v, ok := record.(registry.ModuleVersion)
		if !ok {
			return
		}
		fx.Audit, fx.Events = nil, nil
		o.addAudit(fx, a, registry.AuditEvent{Action: registry.AuditModulePublish, Namespace: v.Namespace,
			Target: v.Namespace + "/" + v.Name + "/" + v.System + " " + v.Version, Details: details(v)})
		o.opt.Events.Add(ctx, fx, nil, webhook.Event{Type: registry.EventModulePublished, Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version, Actor: a.name()})
	}
	return fx
}
