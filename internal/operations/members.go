package operations

import (
	"context"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Members lists the members of namespace, for its admins.
func (o *Operations) Members(ctx context.Context, a Actor, namespace string) ([]registry.Membership, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return nil, err
	}
	return o.opt.Index.ListMemberships(ctx, "", ns)
}

// SetMember gives user the role in namespace (adding or changing the
// membership), for the namespace's admins. It returns the membership as
// stored.
func (o *Operations) SetMember(ctx context.Context, a Actor, namespace, user, role string) (registry.Membership, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.Membership{}, err
	}
	if user, err = registry.ParseUserName(user); err != nil {
		return registry.Membership{}, err
	}
	r, err := registry.ParseRole(role)
	if err != nil {
		return registry.Membership{}, err
	}
	m := registry.Membership{User: user, Namespace: ns, Role: r, CreatedAt: o.opt.Now().UTC()}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditMembershipSet, Namespace: ns, Target: user, Details: "role " + string(r)}})
	if err := o.opt.Index.SetMembership(store.WithEffects(ctx, fx), m); err != nil {
		return registry.Membership{}, err
	}
	o.done(ctx, fx)
	ms, err := o.opt.Index.ListMemberships(ctx, user, ns)
	if err != nil {
		return registry.Membership{}, err
	}
	if len(ms) == 1 {
		m = ms[0]
	}
	return m, nil
}

// RemoveMember ends the membership of user in namespace, for the
// namespace's admins.
func (o *Operations) RemoveMember(ctx context.Context, a Actor, namespace, user string) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	if user, err = registry.ParseUserName(user); err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditMembershipDelete, Namespace: ns, Target: user}})
	if err := o.opt.Index.DeleteMembership(store.WithEffects(ctx, fx), user, ns); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}
