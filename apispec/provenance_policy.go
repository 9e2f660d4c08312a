package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// RouteProvenancePolicy is the provenance policy of a namespace
// (docs/provenance.md): GET (read rights) answers a ProvenancePolicy, 404
// without one; PUT (admin rights) a ProvenancePolicyRequest creates or
// replaces it and answers the policy; DELETE (admin rights) removes it
// (204). With a policy, provider and module publishes into the
// namespace are accepted only from keyless tokens whose CI claims it
// admits; others are refused (403) with the reason.
const RouteProvenancePolicy = "/api/v1/namespaces/{namespace}/provenance-policy"

// ProvenancePolicyRequest is the body of PUT RouteProvenancePolicy.
type ProvenancePolicyRequest struct {
	// Repository is the CI repository releases must be built from, exactly
	// ("acme/infra"); required.
	Repository string `json:"repository"`
	// Refs is a pattern the build's ref must match: * and ? within one
	// path segment, [...] classes ("refs/tags/v*"); empty for any ref.
	Refs string `json:"refs,omitempty"`
	// Issuer is the CI issuer URL (https) the build must come from; empty
	// for any issuer a trust policy of the namespace accepts.
	Issuer string `json:"issuer,omitempty"`
}

// Validate checks the request as the server does.
func (r ProvenancePolicyRequest) Validate() error {
	return registry.ProvenancePolicy{Repository: r.Repository, Refs: r.Refs, Issuer: r.Issuer}.Validate()
}

// ProvenancePolicy is a namespace's provenance policy.
type ProvenancePolicy struct {
	Namespace  string    `json:"namespace"`
	Repository string    `json:"repository"`
	Refs       string    `json:"refs,omitempty"`
	Issuer     string    `json:"issuer,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	UpdatedBy  string    `json:"updated_by"`
}
