package operations

import (
	"context"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// RetentionRule returns the retention rule of namespace, for those who
// may read it; NotFound if it has none.
func (o *Operations) RetentionRule(ctx context.Context, a Actor, namespace string) (registry.RetentionRule, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeRead)
	if err != nil {
		return registry.RetentionRule{}, err
	}
	return o.opt.Index.GetRetentionRule(ctx, ns)
}

// SetRetentionRule sets the retention rule of namespace to rule's
// KeepLast, KeepWithin and Pin (registry.CheckRetentionRule), for its
// admins: the garbage collector deletes the versions it expires. It
// returns the rule as stored.
func (o *Operations) SetRetentionRule(ctx context.Context, a Actor, namespace string, rule registry.RetentionRule) (registry.RetentionRule, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return registry.RetentionRule{}, err
	}
	rule = registry.RetentionRule{Namespace: ns, KeepLast: rule.KeepLast, KeepWithin: rule.KeepWithin, Pin: rule.Pin}
	if err := registry.CheckRetentionRule(rule); err != nil {
		return registry.RetentionRule{}, err
	}
	// Microseconds, as the index stores it: the answer equals a later
	// read.
	rule.UpdatedAt, rule.UpdatedBy = o.opt.Now().UTC().Truncate(time.Microsecond), a.name()
	details := "keep_last " + strconv.Itoa(rule.KeepLast) + " keep_within " + apispec.FormatRetentionDuration(rule.KeepWithin) +
		" pin [" + strings.Join(rule.Pin, "; ") + "]"
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditRetentionPut, Namespace: ns, Target: ns, Details: details}})
	if err := o.opt.Index.PutRetentionRule(store.WithEffects(ctx, fx), rule); err != nil {
		return registry.RetentionRule{}, err
	}
	o.done(ctx, fx)
	return rule, nil
}

// DeleteRetentionRule removes the retention rule of namespace, for its
// admins; NotFound if it has none.
func (o *Operations) DeleteRetentionRule(ctx context.Context, a Actor, namespace string) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditRetentionDelete, Namespace: ns, Target: ns}})
	if err := o.opt.Index.DeleteRetentionRule(store.WithEffects(ctx, fx), ns); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}
