package store

import (
	"context"

	"trove.dev/trove/internal/registry"
)

// ProvenancePolicies keeps each namespace's provenance policy
// (registry.ProvenancePolicy): where its releases must be built.
type ProvenancePolicies interface {
	// PutProvenancePolicy stores the policy of p.Namespace, replacing the
	// one it had (NotFound for a namespace that does not exist; Invalid
	// for a policy registry.ProvenancePolicy.Validate refuses).
	PutProvenancePolicy(ctx context.Context, p registry.ProvenancePolicy) error
	// GetProvenancePolicy returns the policy of namespace, or NotFound.
	GetProvenancePolicy(ctx context.Context, namespace string) (registry.ProvenancePolicy, error)
	// DeleteProvenancePolicy removes the policy of namespace, or NotFound.
	DeleteProvenancePolicy(ctx context.Context, namespace string) error
}
