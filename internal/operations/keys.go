package operations

import (
	"context"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
)

// AddSigningKey registers the ASCII-armored OpenPGP public key armor for
// namespace, for its admins.
func (o *Operations) AddSigningKey(ctx context.Context, a Actor, namespace, armor string) (registry.SigningKey, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.SigningKey{}, err
	}
	key, err := signing.ParsePublicKey(armor)
	if err != nil {
		return registry.SigningKey{}, err
	}
	key.Namespace = ns
	key.CreatedAt = o.opt.Now().UTC()
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditKeyAdd, Namespace: ns, Target: key.KeyID, Details: "fingerprint " + key.Fingerprint}})
	if err := o.opt.Index.AddSigningKey(store.WithEffects(ctx, fx), key); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return registry.SigningKey{}, registry.Errorf(registry.Conflict, "key %s is already registered for namespace %s", key.KeyID, ns)
		}
		return registry.SigningKey{}, err
	}
	o.done(ctx, fx)
	return key, nil
}

// GenerateSigningKey makes Trove generate the registry-managed signing
// key of namespace (Options.Managed), for its admins. The result, the
// audit entry and the logs carry the public key only.
func (o *Operations) GenerateSigningKey(ctx context.Context, a Actor, namespace string) (registry.SigningKey, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.SigningKey{}, err
	}
	if o.opt.Managed == nil {
		return registry.SigningKey{}, registry.Errorf(registry.Unavailable, "this Trove does not generate managed signing keys; add a public key instead: trove key add %s --file key.asc", ns)
	}
	// The audit entry commits with the key, named once it is made.
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditKeyGenerate, Namespace: ns}})
	fx.Bind = func(record any) {
		if key, ok := record.(registry.SigningKey); ok {
			fx.Audit[0].Target, fx.Audit[0].Details = key.KeyID, "registry-managed key, fingerprint "+key.Fingerprint
		}
	}
	key, err := o.opt.Managed.Generate(store.WithEffects(ctx, fx), ns)
	if err != nil {
		return registry.SigningKey{}, err
	}
	o.done(ctx, fx)
	o.opt.Logger.InfoContext(ctx, "generated managed signing key", "namespace", ns, "key_id", key.KeyID)
	return key, nil
}

// DeleteSigningKey removes signing key keyID (any case) of namespace,
// for its admins.
func (o *Operations) DeleteSigningKey(ctx context.Context, a Actor, namespace, keyID string) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	id := strings.ToUpper(keyID)
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditKeyRemove, Namespace: ns, Target: id}})
	if err := o.opt.Index.DeleteSigningKey(store.WithEffects(ctx, fx), ns, id); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return registry.Errorf(registry.NotFound, "namespace %s has no signing key %s", ns, id)
		}
		return err
	}
	o.done(ctx, fx)
	return nil
}
