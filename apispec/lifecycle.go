package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of the lifecycle of versions (docs/lifecycle.md). PUT sets the
// state (the body is a DeprecateRequest or a RevokeRequest), DELETE
// clears it; both answer the version document (ProviderVersion or
// ModuleVersion) as it is afterwards. Deprecating and undeprecating need
// publish rights on the namespace, revoking and restoring admin rights.
const (
	RouteProviderDeprecation = "/api/v1/namespaces/{namespace}/providers/{type}/versions/{version}/deprecation"
	RouteProviderRevocation  = "/api/v1/namespaces/{namespace}/providers/{type}/versions/{version}/revocation"
	RouteModuleDeprecation   = "/api/v1/namespaces/{namespace}/modules/{name}/{system}/versions/{version}/deprecation"
	RouteModuleRevocation    = "/api/v1/namespaces/{namespace}/modules/{name}/{system}/versions/{version}/revocation"
)

// MaxLifecycleReason and MaxLifecycleLink bound a DeprecateRequest and a
// RevokeRequest: the reason in characters, the link in bytes.
const (
	MaxLifecycleReason = registry.MaxLifecycleReason
	MaxLifecycleLink   = registry.MaxLifecycleLink
)

// Deprecation is the deprecation of a version, present in a version
// document while the version is deprecated.
type Deprecation struct {
	Reason       string    `json:"reason"`
	Link         string    `json:"link,omitempty"`
	DeprecatedAt time.Time `json:"deprecated_at"`
	DeprecatedBy string    `json:"deprecated_by,omitempty"`
}

// Revocation is the revocation of a version, present in a version
// document while the version is revoked.
type Revocation struct {
	Reason    string    `json:"reason"`
	RevokedAt time.Time `json:"revoked_at"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// DeprecateRequest deprecates a version (PUT RouteProviderDeprecation or
// RouteModuleDeprecation); deprecating a deprecated version replaces its
// reason and link.
type DeprecateRequest struct {
	// Reason is required: one line of at most MaxLifecycleReason
	// characters, shown by Terraform and OpenTofu where they can.
	Reason string `json:"reason"`
	// Link is optional: an https URL with more information.
	Link string `json:"link,omitempty"`
}

// Validate checks the request as the server does.
func (r DeprecateRequest) Validate() error {
	return registry.CheckDeprecation(registry.Deprecation{Reason: r.Reason, Link: r.Link})
}

// RevokeRequest revokes a version (PUT RouteProviderRevocation or
// RouteModuleRevocation).
type RevokeRequest struct {
	// Reason is required: one line of at most MaxLifecycleReason
	// characters.
	Reason string `json:"reason"`
}

// Validate checks the request as the server does.
func (r RevokeRequest) Validate() error { return registry.CheckLifecycleReason(r.Reason) }
