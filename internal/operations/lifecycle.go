package operations

import (
	"context"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// LifecycleChange is one change of a version's lifecycle
// (docs/lifecycle.md).
type LifecycleChange int

// The lifecycle changes: deprecating warns (a publisher's call);
// revoking changes what new resolutions choose, so it and restoring need
// admin rights on the namespace.
const (
	Deprecate LifecycleChange = iota
	Undeprecate
	Revoke
	Restore
)

// Scope is the right the change needs on the namespace.
func (c LifecycleChange) Scope() registry.Scope {
	if c == Revoke || c == Restore {
		return registry.ScopeAdmin
	}
	return registry.ScopePublish
}

// audit returns the audit action of c for a provider or a module.
func (c LifecycleChange) audit(module bool) string {
	actions := [2][4]string{
		{registry.AuditProviderDeprecate, registry.AuditProviderUndeprecate, registry.AuditProviderRevoke, registry.AuditProviderRestore},
		{registry.AuditModuleDeprecate, registry.AuditModuleUndeprecate, registry.AuditModuleRevoke, registry.AuditModuleRestore},
	}
	return actions[b2i(module)][c]
}

// event returns the webhook event of c for a provider or a module
// version, with the reason and link of d or rv.
func (c LifecycleChange) event(module bool, v VersionRef, d *registry.Deprecation, rv *registry.Revocation) webhook.Event {
	types := [2][4]string{
		{registry.EventProviderDeprecated, registry.EventProviderUndeprecated, registry.EventProviderRevoked, registry.EventProviderRestored},
		{registry.EventModuleDeprecated, registry.EventModuleUndeprecated, registry.EventModuleRevoked, registry.EventModuleRestored},
	}
	ev := webhook.Event{Type: types[b2i(module)][c], Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version}
	if d != nil {
		ev.Reason, ev.Link = d.Reason, d.Link
	}
	if rv != nil {
		ev.Reason = rv.Reason
	}
	return ev
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// VersionRef names a provider version (Name is the type, System "") or a
// module version.
type VersionRef struct {
	Namespace, Name, System, Version string
}

// Why is the reason (and, for a deprecation, the link) of a lifecycle
// change; ignored for Undeprecate and Restore.
type Why struct {
	Reason, Link string
}

// ProviderLifecycle makes change c to provider version v (Name is the
// provider type), for publishers of the namespace (admins to revoke or
// restore), and drops this process's cached documents of the provider.
func (o *Operations) ProviderLifecycle(ctx context.Context, a Actor, c LifecycleChange, v VersionRef, why Why) error {
	ns, err := o.Namespace(ctx, a, v.Namespace, c.Scope())
	if err != nil {
		return err
	}
	typ, err := registry.ParseProviderType(v.Name)
	if err != nil {
		return err
	}
	if _, err := registry.ParseVersion(v.Version); err != nil {
		return err
	}
	v = VersionRef{Namespace: ns, Name: typ, Version: v.Version}
	d, rv, details, err := o.lifecycleChange(a, c, why)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: c.audit(false), Namespace: ns,
		Target: ns + "/" + typ + " " + v.Version, Details: details}}, c.event(false, v, d, rv))
	wctx := store.WithEffects(ctx, fx)
	if c == Deprecate || c == Undeprecate {
		err = o.opt.Index.SetProviderDeprecation(wctx, ns, typ, v.Version, d)
	} else {
		err = o.opt.Index.SetProviderRevocation(wctx, ns, typ, v.Version, rv)
	}
	if err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// ModuleLifecycle makes change c to module version v, for publishers of
// the namespace (admins to revoke or restore), and drops this process's
// cached documents of the module.
func (o *Operations) ModuleLifecycle(ctx context.Context, a Actor, c LifecycleChange, v VersionRef, why Why) error {
	ns, err := o.Namespace(ctx, a, v.Namespace, c.Scope())
	if err != nil {
		return err
	}
	name, err := registry.ParseModuleName(v.Name)
	if err != nil {
		return err
	}
	system, err := registry.ParseModuleSystem(v.System)
	if err != nil {
		return err
	}
	if _, err := registry.ParseVersion(v.Version); err != nil {
		return err
	}
	v = VersionRef{Namespace: ns, Name: name, System: system, Version: v.Version}
	d, rv, details, err := o.lifecycleChange(a, c, why)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: c.audit(true), Namespace: ns,
		Target: ns + "/" + name + "/" + system + " " + v.Version, Details: details}}, c.event(true, v, d, rv))
	wctx := store.WithEffects(ctx, fx)
	if c == Deprecate || c == Undeprecate {
		err = o.opt.Index.SetModuleDeprecation(wctx, ns, name, system, v.Version, d)
	} else {
		err = o.opt.Index.SetModuleRevocation(wctx, ns, name, system, v.Version, rv)
	}
	if err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// lifecycleChange checks why for c and returns the deprecation or
// revocation to store (nil clears it) and the audit details.
func (o *Operations) lifecycleChange(a Actor, c LifecycleChange, why Why) (*registry.Deprecation, *registry.Revocation, string, error) {
	switch c {
	case Deprecate:
		d := registry.Deprecation{Reason: why.Reason, Link: why.Link, At: o.opt.Now(), By: a.name()}
		if err := registry.CheckDeprecation(d); err != nil {
			return nil, nil, "", err
		}
		details := "reason: " + why.Reason
		if why.Link != "" {
			details += " link: " + why.Link
		}
		return &d, nil, details, nil
	case Revoke:
		if err := registry.CheckLifecycleReason(why.Reason); err != nil {
			return nil, nil, "", err
		}
		return nil, &registry.Revocation{Reason: why.Reason, At: o.opt.Now(), By: a.name()}, "reason: " + why.Reason, nil
	case Undeprecate, Restore:
		return nil, nil, "", nil
	}
	return nil, nil, "", registry.Errorf(registry.Invalid, "unknown lifecycle change %d", c)
}
