package operations

import (
	"context"
	"strconv"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Identity providers and their role mappings decide who becomes a user
// and which rights people get: only global admins may read or change
// them (docs/sso.md).

// IdentityProviders lists the identity providers, for global admins.
func (o *Operations) IdentityProviders(ctx context.Context, a Actor) ([]registry.IdentityProvider, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return nil, err
	}
	return o.opt.Index.ListIdentityProviders(ctx)
}

// IdentityProvider returns the identity provider name, for global admins.
func (o *Operations) IdentityProvider(ctx context.Context, a Actor, name string) (registry.IdentityProvider, error) {
	name, err := o.providerName(a, name)
	if err != nil {
		return registry.IdentityProvider{}, err
	}
	return o.opt.Index.GetIdentityProvider(ctx, name)
}

// providerName checks that a is a global admin and validates name.
func (o *Operations) providerName(a Actor, name string) (string, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return "", err
	}
	return registry.ParseIdentityProviderName(name)
}

// IdentityProviderPut is what PutIdentityProvider did.
type IdentityProviderPut struct {
	// Provider is the provider as stored.
	Provider registry.IdentityProvider
	// Created is true if the put created the provider, false if it
	// replaced it.
	Created bool
	// Warnings are what checking the issuer found without refusing it
	// (Options.CheckIssuer): its discovery document could not be read.
	Warnings []string
}

// PutIdentityProvider creates the identity provider p.Name or replaces
// its whole configuration (but its creation time), for global admins. p
// must pass registry.IdentityProvider.Check and Options.CheckIssuer.
// Whether it was created is decided in the write's transaction, so the
// audit entry says the same as the answer even when two puts of a new
// name race.
func (o *Operations) PutIdentityProvider(ctx context.Context, a Actor, p registry.IdentityProvider) (IdentityProviderPut, error) {
	name, err := o.providerName(a, p.Name)
	if err != nil {
		return IdentityProviderPut{}, err
	}
	p.Name = name
	if err := p.Check(); err != nil {
		return IdentityProviderPut{}, err
	}
	var res IdentityProviderPut
	if o.opt.CheckIssuer != nil {
		warning, err := o.opt.CheckIssuer(ctx, p.Issuer)
		if err != nil {
			return IdentityProviderPut{}, err
		}
		if warning != "" {
			res.Warnings = append(res.Warnings, warning)
		}
	}
	now := o.opt.Now().UTC()
	p.CreatedAt, p.UpdatedAt = now, now
	what := ": issuer " + p.Issuer + ", client " + p.ClientID + ", scopes " + strings.Join(p.Scopes, " ")
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditIdentityProviderPut, Target: name, Details: "replaced" + what}})
	fx.Bind = func(record any) { // in the transaction, which knows
		if created, ok := record.(store.IdentityProviderCreated); ok && len(fx.Audit) > 0 {
			fx.Audit[0].Details = "replaced" + what
			if created {
				fx.Audit[0].Details = "created" + what
			}
		}
	}
	if res.Created, err = o.opt.Index.PutIdentityProvider(store.WithEffects(ctx, fx), p); err != nil {
		return IdentityProviderPut{}, err
	}
	o.done(ctx, fx)
	if res.Provider, err = o.opt.Index.GetIdentityProvider(ctx, name); err != nil {
		return IdentityProviderPut{}, err
	}
	return res, nil
}

// DeleteIdentityProvider deletes the identity provider name with its
// role mappings, for global admins; the users it created stay.
func (o *Operations) DeleteIdentityProvider(ctx context.Context, a Actor, name string) error {
	name, err := o.providerName(a, name)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditIdentityProviderDelete, Target: name,
		Details: "with its role mappings; the users it created stay"}})
	if err := o.opt.Index.DeleteIdentityProvider(store.WithEffects(ctx, fx), name); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// RoleMappings lists the role mappings of provider ("" for every
// provider's), for global admins.
func (o *Operations) RoleMappings(ctx context.Context, a Actor, provider string) ([]registry.RoleMapping, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return nil, err
	}
	if provider != "" {
		if _, err := registry.ParseIdentityProviderName(provider); err != nil {
			return nil, err
		}
	}
	return o.opt.Index.ListRoleMappings(ctx, provider)
}

// mappingID checks that a is a global admin and parses id, a role
// mapping's ID.
func (o *Operations) mappingID(a Actor, id string) (int64, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, registry.Errorf(registry.Invalid, "invalid role mapping ID %q: use the number trove sso mapping list shows", registry.Elide(id))
	}
	return n, nil
}

// RoleMapping returns the role mapping id (its decimal number), for
// global admins.
func (o *Operations) RoleMapping(ctx context.Context, a Actor, id string) (registry.RoleMapping, error) {
	n, err := o.mappingID(a, id)
	if err != nil {
		return registry.RoleMapping{}, err
	}
	return o.opt.Index.GetRoleMapping(ctx, n)
}

// roleMappingAudit is the audit entry of a change of m: its namespace is
// the mapping's, but for the global admin mapping.
func roleMappingAudit(action string, m registry.RoleMapping, details string) registry.AuditEvent {
	e := registry.AuditEvent{Action: action, Details: details}
	if m.Namespace != registry.GlobalAdminNamespace {
		e.Namespace = m.Namespace
	}
	return e
}

// CreateRoleMapping creates the role mapping m (registry.RoleMapping.Check)
// of an existing identity provider to an existing namespace (or "*", the
// global admin flag), for global admins; a provider has at most
// registry.MaxRoleMappingsPerProvider. It returns the mapping as stored,
// with its ID.
func (o *Operations) CreateRoleMapping(ctx context.Context, a Actor, m registry.RoleMapping) (registry.RoleMapping, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return registry.RoleMapping{}, err
	}
	m = registry.RoleMapping{Provider: m.Provider, Claim: m.Claim, Value: m.Value, Namespace: m.Namespace, Role: m.Role}
	if err := m.Check(); err != nil {
		return registry.RoleMapping{}, err
	}
	if m.Namespace != registry.GlobalAdminNamespace {
		ns, err := registry.ParseNamespace(m.Namespace)
		if err != nil {
			return registry.RoleMapping{}, err
		}
		m.Namespace = ns
		if _, err := o.opt.Index.GetNamespace(ctx, ns); err != nil {
			return registry.RoleMapping{}, err
		}
	}
	if existing, err := o.opt.Index.ListRoleMappings(ctx, m.Provider); err == nil && len(existing) >= registry.MaxRoleMappingsPerProvider {
		return registry.RoleMapping{}, registry.Errorf(registry.Invalid, "identity provider %q has %d role mappings, the limit", m.Provider, len(existing))
	}
	m.CreatedAt = o.opt.Now().UTC()
	fx := o.effects(ctx, a, []registry.AuditEvent{roleMappingAudit(registry.AuditRoleMappingCreate, m,
		"identity provider "+m.Provider+": "+m.Claim+"="+m.Value+" gives "+string(m.Role)+" in "+m.Namespace)})
	fx.Bind = func(record any) { // the ID, assigned by the store
		if stored, ok := record.(registry.RoleMapping); ok && len(fx.Audit) > 0 {
			fx.Audit[0].Target = strconv.FormatInt(stored.ID, 10)
		}
	}
	m, err := o.opt.Index.CreateRoleMapping(store.WithEffects(ctx, fx), m)
	if err != nil {
		return registry.RoleMapping{}, err
	}
	o.done(ctx, fx)
	return m, nil
}

// DeleteRoleMapping deletes the role mapping id (its decimal number),
// for global admins. The roles it granted stay until each user's next
// sign-in.
func (o *Operations) DeleteRoleMapping(ctx context.Context, a Actor, id string) error {
	m, err := o.RoleMapping(ctx, a, id)
	if err != nil {
		return err
	}
	e := roleMappingAudit(registry.AuditRoleMappingDelete, m, "identity provider "+m.Provider+": "+m.Claim+"="+m.Value+" gave "+
		string(m.Role)+" in "+m.Namespace+"; granted roles stay until each user's next sign-in")
	e.Target = strconv.FormatInt(m.ID, 10)
	fx := o.effects(ctx, a, []registry.AuditEvent{e})
	if err := o.opt.Index.DeleteRoleMapping(store.WithEffects(ctx, fx), m.ID); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}
