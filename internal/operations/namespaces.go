package operations

import (
	"context"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// CreateNamespace creates namespace name, for global admins. visibility
// "" makes it private.
func (o *Operations) CreateNamespace(ctx context.Context, a Actor, name, description, visibility string) (registry.Namespace, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return registry.Namespace{}, err
	}
	name, err := registry.ParseNewNamespace(name)
	if err != nil {
		return registry.Namespace{}, err
	}
	if err := registry.DescriptionLimit.CheckText(description); err != nil {
		return registry.Namespace{}, err
	}
	vis := registry.VisibilityPrivate
	if visibility != "" {
		if vis, err = registry.ParseVisibility(visibility); err != nil {
			return registry.Namespace{}, err
		}
	}
	ns := registry.Namespace{Name: name, Description: description, Visibility: vis, CreatedAt: o.opt.Now().UTC()}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditNamespaceCreate, Namespace: name, Target: name, Details: "visibility " + string(vis)}})
	if err := o.opt.Index.CreateNamespace(store.WithEffects(ctx, fx), ns); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return registry.Namespace{}, registry.Errorf(registry.Conflict, "namespace %q already exists (its visibility and description change with PATCH %s/%s, trove namespace update)",
				name, apispec.RouteNamespaces, name)
		}
		return registry.Namespace{}, err
	}
	o.done(ctx, fx)
	return ns, nil
}

// UpdateNamespace changes the description and visibility of namespace
// name (nil leaves one as it is), for its admins. A change of
// visibility is audited.
func (o *Operations) UpdateNamespace(ctx context.Context, a Actor, name string, description, visibility *string) (registry.Namespace, error) {
	name, err := o.Namespace(ctx, a, name, registry.ScopeAdmin)
	if err != nil {
		return registry.Namespace{}, err
	}
	ns, err := o.opt.Index.GetNamespace(ctx, name)
	if err != nil {
		return registry.Namespace{}, err
	}
	if description != nil {
		if err := registry.DescriptionLimit.CheckText(*description); err != nil {
			return registry.Namespace{}, err
		}
		ns.Description = *description
	}
	before := ns.Visibility
	if visibility != nil {
		if ns.Visibility, err = registry.ParseVisibility(*visibility); err != nil {
			return registry.Namespace{}, err
		}
	}
	var fx *store.Effects // visibility changes are audited
	if ns.Visibility != before {
		fx = o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditNamespaceUpdate, Namespace: name, Target: name,
			Details: "visibility " + string(before) + " -> " + string(ns.Visibility)}})
	}
	if err := o.opt.Index.UpdateNamespace(store.WithEffects(ctx, fx), ns); err != nil {
		return registry.Namespace{}, err
	}
	o.done(ctx, fx)
	return ns, nil
}

// DeleteNamespace deletes namespace name, which must hold no provider
// or module version, for global admins; its tokens and memberships go
// with it.
func (o *Operations) DeleteNamespace(ctx context.Context, a Actor, name string) error {
	name, err := registry.ParseNamespace(name)
	if err != nil {
		return err
	}
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditNamespaceDelete, Namespace: name, Target: name}})
	if err := o.opt.Index.DeleteNamespace(store.WithEffects(ctx, fx), name); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return registry.Errorf(registry.Conflict, "namespace %q still holds provider or module versions; only an empty namespace can be deleted", name)
		}
		return err
	}
	o.done(ctx, fx)
	return nil
}
