package apispec

import (
	"encoding/json"
	"time"
)

// RouteBundle is the air-gap bundle of global admins: GET exports one
// (an uncompressed tar, see BundleManifest) with the providers and
// modules its query names; POST imports the tar sent as the body, all or
// nothing.
//
// Query parameters of GET, each repeatable: BundleProviderParam
// ("host/namespace/type@version": Trove's own host for its own
// providers, any other for mirrored ones), BundleModuleParam
// ("namespace/name/system@version") and BundlePlatformParam ("os_arch",
// the packages to include; none: every platform).
const RouteBundle = "/api/v1/bundle"

// Query parameters of GET RouteBundle.
const (
	BundleProviderParam = "provider"
	BundleModuleParam   = "module"
	BundlePlatformParam = "platform"
)

// Bounds of a bundle.
const (
	// MaxBundleItems bounds the provider and module versions of one bundle.
	MaxBundleItems = 500
	// MaxBundleManifestBytes bounds manifest.json.
	MaxBundleManifestBytes = 16 << 20
)

// The layout of a bundle: an uncompressed tar (provider packages are
// compressed already) whose first entry is BundleManifestName, followed
// by one regular file BundleBlobPrefix+"<sha256>" per file the manifest
// names (SHA256SUMS, signatures, provider packages, module archives),
// each once, named by the lower-case hex SHA-256 of its content.
//
// BundleFormat is the format of a bundle that carries no provenance
// (Troves before provenance read it); BundleFormatProvenance that of one
// where any entry carries provenance (BundleProvenance), whose envelope
// travels as one more blob.
const (
	BundleFormat           = "trove-bundle/1"
	BundleFormatProvenance = "trove-bundle/2"
	BundleManifestName     = "manifest.json"
	BundleBlobPrefix       = "blobs/"
	BundleContentType      = "application/x-tar"
)

// BundleManifest is manifest.json: what a bundle holds.
type BundleManifest struct {
	Format    string           `json:"format"` // BundleFormat
	CreatedAt time.Time        `json:"created_at"`
	Providers []BundleProvider `json:"providers"`
	Modules   []BundleModule   `json:"modules"`
}

// BundleProvider is one provider version of a bundle, with its original
// SHA256SUMS, signature and signing key, so that the importer verifies
// it as the clients would.
type BundleProvider struct {
	Source    string           `json:"source"` // host/namespace/type
	Version   string           `json:"version"`
	Protocols []string         `json:"protocols"`
	SHASums   string           `json:"shasums"`   // SHA-256 of the SHA256SUMS blob
	Signature string           `json:"signature"` // SHA-256 of the blob of its binary detached signature
	Key       BundleKey        `json:"key"`
	Platforms []BundlePlatform `json:"platforms"`
	// Provenance is the version's signed provenance, if it has one
	// (format BundleFormatProvenance only).
	Provenance *BundleProvenance `json:"provenance,omitempty"`
}

// BundleProvenance is the provenance of a bundle's version: the blob of
// its DSSE envelope (docs/provenance.md) and the public keys that may
// verify it (the exporting namespace's Trove-managed keys, or the keys
// an earlier import stored with a mirrored version).
type BundleProvenance struct {
	Envelope string      `json:"envelope"` // SHA-256 of the envelope blob
	Keys     []BundleKey `json:"keys"`
}

// MirroredProvenance is the answer of GET RouteMirrorProvenance.
type MirroredProvenance struct {
	// Envelope is the DSSE envelope the bundle carried, as it was signed.
	Envelope json.RawMessage `json:"envelope"`
	// Keys are the public keys that verify it, which the bundle carried.
	Keys []BundleKey `json:"keys"`
}

// BundleKey is the public key that signed a provider's SHA256SUMS.
type BundleKey struct {
	KeyID      string `json:"key_id"`
	ASCIIArmor string `json:"ascii_armor"`
}

// BundlePlatform is one package of a provider version: a zip listed in
// its SHA256SUMS under Filename, stored as the blob SHA256.
type BundlePlatform struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Filename string `json:"filename"`
	SHA256   string `json:"sha256"`
	H1       string `json:"h1"` // the "h1:" hash lock files record
	Size     int64  `json:"size"`
}

// BundleModule is one module version of a bundle. It is imported into
// the importing Trove's namespace of the same name.
type BundleModule struct {
	Namespace   string          `json:"namespace"`
	Name        string          `json:"name"`
	System      string          `json:"system"`
	Version     string          `json:"version"`
	Archive     string          `json:"archive"` // SHA-256 of the archive blob
	Format      string          `json:"format"`  // "tar.gz" or "zip"
	Size        int64           `json:"size"`
	Description string          `json:"description,omitempty"`
	Origin      string          `json:"origin,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"` // as GET RouteModuleVersion shows it
	PublishedAt time.Time       `json:"published_at"`
	// Provenance is the version's signed provenance, if it has one
	// (format BundleFormatProvenance only).
	Provenance *BundleProvenance `json:"provenance,omitempty"`
}

// BundleImportResult is the answer of POST RouteBundle: what the import
// wrote, per version of the manifest, in its order.
type BundleImportResult struct {
	Providers []BundleImportedProvider `json:"providers"`
	Modules   []BundleImportedModule   `json:"modules"`
}

// BundleImportedProvider is one provider version of an import.
type BundleImportedProvider struct {
	Source  string `json:"source"`
	Version string `json:"version"`
	// Packages is how many of its packages the import added: 0 when the
	// mirror held all of them already.
	Packages int `json:"packages"`
}

// BundleImportedModule is one module version of an import.
type BundleImportedModule struct {
	Address string `json:"address"` // namespace/name/system
	Version string `json:"version"`
	// Created is false when the version was stored already with the
	// same archive.
	Created bool `json:"created"`
}
