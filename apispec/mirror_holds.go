package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of holding mirrored versions back (docs/mirror.md), for global
// admins only. {host} is the upstream's host as in RouteMirrorUpstream,
// {namespace}/{type} the provider's there.
const (
	// RouteMirrorProvider: GET the provider's versions, whether the
	// mirror serves each now and why not, and its approvals and denials.
	RouteMirrorProvider = "/api/v1/mirror/providers/{host}/{namespace}/{type}"
	// RouteMirrorApproval: PUT (body MirrorApprovalRequest) releases one
	// version before its minimum age; DELETE withdraws the approval.
	RouteMirrorApproval = "/api/v1/mirror/providers/{host}/{namespace}/{type}/approvals/{version}"
	// RouteMirrorDenials: PUT (body MirrorDenialRequest) denies the
	// versions a version or constraint matches; DELETE with the query
	// MirrorDenialVersionsParam withdraws a denial.
	RouteMirrorDenials        = "/api/v1/mirror/providers/{host}/{namespace}/{type}/denials"
	MirrorDenialVersionsParam = "versions"
)

// RouteMirrorProvenance answers the provenance an air-gap bundle carried
// with a mirrored provider version (MirroredProvenance), to anyone who
// may read the mirror (a valid token, or anyone when the mirror is
// public); 404 for a version without one.
const RouteMirrorProvenance = "/api/v1/mirror/providers/{host}/{namespace}/{type}/versions/{version}/provenance"

// The statuses of MirrorVersionStatus.
const (
	MirrorAvailable = "available"
	MirrorHeld      = "held"
	MirrorDenied    = "denied"
)

// MirrorProvider is the answer of GET RouteMirrorProvider.
type MirrorProvider struct {
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Type      string `json:"type"`
	// Rule is the upstream's allow rule that matches the provider; absent
	// when the host is not an upstream.
	Rule *MirrorRule `json:"rule,omitempty"`
	// Versions are newest first: those the upstream lists that the rule
	// allows, or those the mirror holds when Unreachable is set.
	Versions  []MirrorVersionStatus `json:"versions"`
	Decisions []MirrorDecision      `json:"decisions"`
	// Unreachable says why the upstream's versions could not be read.
	Unreachable string `json:"unreachable,omitempty"`
}

// MirrorVersionStatus is one version of a MirrorProvider.
type MirrorVersionStatus struct {
	Version string `json:"version"`
	// Status is MirrorAvailable, MirrorHeld or MirrorDenied.
	Status string `json:"status"`
	// Reason says why a version is held or denied, or who approved it.
	Reason string `json:"reason,omitempty"`
	// Since is when its age counts from (its upstream publish time, else
	// its first sight); Until is when a held version is released.
	Since    *time.Time `json:"since,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
	Approved bool       `json:"approved,omitempty"`
}

// MirrorDecision is an approval ("approve", of one version) or a denial
// ("deny", of a version or constraint) of a mirrored provider's versions.
type MirrorDecision struct {
	Kind      string    `json:"kind"`
	Versions  string    `json:"versions"`
	Reason    string    `json:"reason,omitempty"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

// MirrorApprovalRequest is the body of PUT RouteMirrorApproval.
type MirrorApprovalRequest struct {
	Reason string `json:"reason,omitempty"`
}

// MirrorDenialRequest is the body of PUT RouteMirrorDenials: Versions is
// one version ("5.81.0") or a constraint (">= 5.81.0, < 5.81.3").
type MirrorDenialRequest struct {
	Versions string `json:"versions"`
	Reason   string `json:"reason,omitempty"`
}

// Validate checks the limits of the request's fields.
func (r MirrorApprovalRequest) Validate() error { return registry.DescriptionLimit.CheckText(r.Reason) }

// Validate checks the limits of the request's fields; the server checks
// that Versions is a version or constraint.
func (r MirrorDenialRequest) Validate() error {
	return firstError(registry.VersionConstraintLimit.CheckText(r.Versions), registry.DescriptionLimit.CheckText(r.Reason))
}
