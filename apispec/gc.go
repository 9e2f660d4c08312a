package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Deleting provider versions, whole providers and whole modules (a module
// version: DELETE RouteModuleVersion), and garbage collection
// (docs/lifecycle.md). Deletes need admin rights on the namespace and
// ConfirmParam set to the address of what is deleted: "ns/type/version"
// or "ns/type" for providers, "ns/name/system" for a module. A delete
// removes index rows only; the blobs are reclaimed by the garbage
// collector (POST RouteGC, global admins).
const (
	// DELETE RouteProviderVersion deletes one version (204).
	// DELETE RouteProvider deletes every version (200, a DeleteResult).
	// DELETE RouteModule deletes every version (200, a DeleteResult).

	// RouteGC runs a garbage collection: POST a GCRequest, answered with
	// a GCReport (409 while another collection runs on any replica).
	RouteGC = "/api/v1/gc"
	// ConfirmParam is the query parameter of a delete naming what it
	// deletes (the same as ModuleConfirmParam).
	ConfirmParam = ModuleConfirmParam
	// InUseParam, set to "true", deletes what consumers downloaded in
	// the last InUseDays days too; without it such a delete is refused
	// with who they are (409).
	InUseParam = "in_use"
	// InUseDays is the window of a delete's in-use check.
	InUseDays = 30
)

// DeleteResult answers the delete of a whole provider or module.
type DeleteResult struct {
	// Versions is how many versions were deleted.
	Versions int `json:"versions"`
}

// GCRequest is the body of POST RouteGC.
type GCRequest struct {
	// DryRun reports what would be reclaimed and deletes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Grace keeps blobs modified more recently than this Go duration
	// ("1h", "90m"); empty means the server's default (1h). At least 1m.
	Grace string `json:"grace,omitempty"`
}

// MaxGCGraceLength bounds GCRequest.Grace.
const MaxGCGraceLength = 32

// GraceDuration parses Grace: 0 when it is empty.
func (r GCRequest) GraceDuration() (time.Duration, error) {
	if r.Grace == "" {
		return 0, nil
	}
	if len(r.Grace) > MaxGCGraceLength {
		return 0, registry.Errorf(registry.Invalid, "grace must be at most %d characters", MaxGCGraceLength)
	}
	d, err := time.ParseDuration(r.Grace)
	if err != nil || d <= 0 {
		return 0, registry.Errorf(registry.Invalid, "grace must be a positive duration such as 1h or 90m, got %q", r.Grace)
	}
	return d, nil
}

// GCBlob is one blob a garbage collection reclaimed (or would).
type GCBlob struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// GCReport answers POST RouteGC.
type GCReport struct {
	DryRun bool `json:"dry_run"`
	// Grace is the grace period applied, as a Go duration.
	Grace string `json:"grace"`
	// StoredBlobs is how many blobs the store held, ReferencedBlobs how
	// many digests the index names.
	StoredBlobs     int `json:"stored_blobs"`
	ReferencedBlobs int `json:"referenced_blobs"`
	// Reclaimed lists the blobs deleted (would be, in a dry run), by
	// digest; ReclaimedBytes is their total size.
	Reclaimed      []GCBlob `json:"reclaimed"`
	ReclaimedBytes int64    `json:"reclaimed_bytes"`
	// YoungBlobs are unreferenced blobs kept because they were modified
	// within the grace period; RescuedBlobs those a row referenced again
	// when they were looked at a second time.
	YoungBlobs   int `json:"young_blobs"`
	RescuedBlobs int `json:"rescued_blobs"`
	// ExpiredVersions are the versions the namespaces' retention rules
	// deleted (would delete, in a dry run), before the blobs were
	// collected.
	ExpiredVersions []ExpiredVersion `json:"expired_versions"`
}

// ExpiredVersion is a version a retention rule deleted.
type ExpiredVersion struct {
	Kind      string `json:"kind"` // "provider" or "module"
	Namespace string `json:"namespace"`
	Name      string `json:"name"` // provider type or module name
	System    string `json:"system,omitempty"`
	Version   string `json:"version"`
}
