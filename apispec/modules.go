package apispec

import (
	"encoding/json"
	"time"
)

// Route patterns of the module management API. Module names and
// namespaces are answered lowercased (Trove looks them up ignoring case).
const (
	RouteModules = "/api/v1/namespaces/{namespace}/modules" // GET list (?q=&system=&offset=&limit=)
	// RouteModule is one module with its versions, newest first.
	RouteModule = "/api/v1/namespaces/{namespace}/modules/{name}/{system}" // GET
	// RouteModuleVersion is one version: GET (with metadata), POST
	// publishes (the archive as the body, see ModuleArchive*), DELETE
	// (needs ModuleConfirmParam).
	RouteModuleVersion = "/api/v1/namespaces/{namespace}/modules/{name}/{system}/versions/{version}"
	// RouteModuleProvenance is a version's signed provenance statement
	// with the keys that verify it (ModuleProvenance,
	// docs/provenance.md); 404 for a version without one.
	RouteModuleProvenance = RouteModuleVersion + "/provenance" // GET
)

// ModuleProvenance is the answer of GET RouteModuleProvenance.
type ModuleProvenance struct {
	// Envelope is the DSSE envelope of the version's in-toto statement,
	// as it was signed.
	Envelope json.RawMessage `json:"envelope"`
	// Keys are the public keys that verify it: for a version published
	// here, the namespace's Trove-managed keys; for one an air-gap bundle
	// brought (Imported), the exporting Trove's keys the bundle carried.
	Keys []BundleKey `json:"keys"`
	// Imported reports a version an air-gap bundle brought: the exporting
	// Trove signed its provenance, not this one.
	Imported bool `json:"imported"`
}

// Module publishing. The body of a POST to RouteModuleVersion is either
// the archive itself, with Content-Type ModuleArchiveTarGz,
// ModuleArchiveZip or application/octet-stream (the format is recognised
// from the content), or multipart/form-data with exactly one
// PublishFileField part holding it.
const (
	ModuleArchiveTarGz = "application/gzip"
	ModuleArchiveZip   = "application/zip"
	// ModuleOriginParam is the query parameter of a publish that records
	// where the archive came from (free text, one line, at most 512 bytes),
	// e.g. "git tag v1.2.0, commit 0123abc".
	ModuleOriginParam = "origin"
	// ModuleConfirmParam is the query parameter a DELETE of a module
	// version must carry, set to the version's full address
	// "<namespace>/<name>/<system>/<version>", to show the deletion is
	// deliberate: configurations that pin the version stop working.
	ModuleConfirmParam = "confirm"
)

// ModuleList and search parameters of GET RouteModules.
const (
	ModuleQueryParam  = "q"      // substring of name or description
	ModuleSystemParam = "system" // exact target system
	ModuleOffsetParam = "offset"
	ModuleLimitParam  = "limit" // 1 to MaxModuleLimit, default DefaultModuleLimit
	// DefaultModuleLimit and MaxModuleLimit bound a listing page.
	DefaultModuleLimit = 100
	MaxModuleLimit     = 1000
)

// Module summarises a module in a listing.
type Module struct {
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	System        string    `json:"system"`
	LatestVersion string    `json:"latest_version"`
	VersionCount  int       `json:"version_count"`
	Description   string    `json:"description"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// ModuleList is the answer of GET RouteModules: one page of the matching
// modules ordered by name and system, and how many match in all.
type ModuleList struct {
	Modules []Module `json:"modules"`
	Total   int      `json:"total"`
	Offset  int      `json:"offset"`
	Limit   int      `json:"limit"`
}

// ModuleDetail is the answer of GET RouteModule: versions newest first,
// without metadata.
type ModuleDetail struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	System    string          `json:"system"`
	Versions  []ModuleVersion `json:"versions"`
}

// ModuleVersion is one published module version.
type ModuleVersion struct {
	Namespace     string    `json:"namespace"`
	Name          string    `json:"name"`
	System        string    `json:"system"`
	Version       string    `json:"version"`
	ArchiveFormat string    `json:"archive_format"` // "tar.gz" or "zip"
	ArchiveSize   int64     `json:"archive_size"`
	ArchiveDigest string    `json:"archive_sha256"`
	Description   string    `json:"description"`
	Origin        string    `json:"origin,omitempty"`
	PublishedAt   time.Time `json:"published_at"`
	// Downloads counts the modules.v1 downloads of this version answered:
	// the index's count plus what the answering replica has not written
	// to it yet (see docs/api.md).
	Downloads int64 `json:"downloads"`
	// Metadata is the document extracted at publish time (README, inputs,
	// outputs, required providers, submodules, examples), as
	// internal/modules.Metadata encodes it; present in the answer of GET
	// RouteModuleVersion and of a publish only.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Deprecation is present while the version is deprecated, Revocation
	// while it is revoked (see RouteModuleDeprecation).
	Deprecation *Deprecation `json:"deprecation,omitempty"`
	Revocation  *Revocation  `json:"revocation,omitempty"`
}

// ModulePublishResult is the answer of a module publish: Created is false
// when the very same archive was already published (an idempotent retry).
// Warnings are problems found in the configuration that did not stop the
// publish.
type ModulePublishResult struct {
	Created  bool          `json:"created"`
	Version  ModuleVersion `json:"version"`
	Warnings []string      `json:"warnings"`
}
