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
// admits, and modules of air-gap bundles only with provenance that
// verifies with one of its import keys; others are refused (403) with
// the reason.
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
	// ImportKeys are the ASCII-armored OpenPGP public keys of the
	// exporting Troves (their namespaces' managed keys) whose provenance
	// the namespace accepts in air-gap bundles; at most
	// registry.MaxPolicyImportKeys. KeyID may be empty; when given it
	// must be the key's. A PUT replaces the list: without it the policy
	// has none, and every module a bundle brings into the namespace is
	// refused.
	ImportKeys []BundleKey `json:"import_keys,omitempty"`
}

// Validate checks the request's repository, refs, issuer and the number
// of its import keys as the server does (the server parses the keys).
func (r ProvenancePolicyRequest) Validate() error {
	if len(r.ImportKeys) > registry.MaxPolicyImportKeys {
		return registry.Errorf(registry.Invalid, "a provenance policy has at most %d import keys; this one has %d", registry.MaxPolicyImportKeys, len(r.ImportKeys))
	}
	return registry.ProvenancePolicy{Repository: r.Repository, Refs: r.Refs, Issuer: r.Issuer}.Validate()
}

// ProvenancePolicy is a namespace's provenance policy.
type ProvenancePolicy struct {
	Namespace  string `json:"namespace"`
	Repository string `json:"repository"`
	Refs       string `json:"refs,omitempty"`
	Issuer     string `json:"issuer,omitempty"`
	// ImportKeys are the keys that verify the provenance of modules
	// bundles bring into the namespace; empty: bundles bring none.
	ImportKeys []BundleKey `json:"import_keys"`
	UpdatedAt  time.Time   `json:"updated_at"`
	UpdatedBy  string      `json:"updated_by"`
}
