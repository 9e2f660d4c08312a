package store

import (
	"context"

	"trove.dev/trove/internal/registry"
)

// RetentionRules stores the retention rule of each namespace
// (registry.RetentionRule), which the garbage collector applies. Names
// are passed in normalized.
type RetentionRules interface {
	// PutRetentionRule creates or replaces the rule of r.Namespace.
	// NotFound if the namespace does not exist; Invalid for a rule that
	// registry.CheckRetentionRule refuses or an unstorable time.
	PutRetentionRule(ctx context.Context, r registry.RetentionRule) error
	// GetRetentionRule returns the rule of a namespace, or NotFound if it
	// has none.
	GetRetentionRule(ctx context.Context, namespace string) (registry.RetentionRule, error)
	// ListRetentionRules returns every rule ordered by namespace.
	ListRetentionRules(ctx context.Context) ([]registry.RetentionRule, error)
	// DeleteRetentionRule removes the rule of a namespace. NotFound if it
	// has none. Deleting a namespace deletes its rule.
	DeleteRetentionRule(ctx context.Context, namespace string) error
}
