// Package registry holds Trove's domain: namespaces, signing keys, tokens,
// provider versions and their platforms, and the error kinds every other
// package speaks. It imports no HTTP and no SQL.
package registry

import (
	"slices"
	"time"
)

// Namespace groups providers (and later modules) published by one team.
// Names are stored in their normalized (lowercase) form.
type Namespace struct {
	Name        string
	Description string
	// Visibility says who may read the namespace (see access.go). Stores
	// keep an empty Visibility as VisibilityPrivate.
	Visibility Visibility
	CreatedAt  time.Time
}

// SigningKey is a GPG public key allowed to sign the releases of a namespace.
type SigningKey struct {
	Namespace   string
	KeyID       string // 16 upper-case hex digits: the primary key's long key ID
	Fingerprint string // 40 upper-case hex digits
	ASCIIArmor  string
	CreatedAt   time.Time
	ExpiresAt   time.Time // zero when the key does not expire
	// Managed marks a registry-managed key: Trove generated it and keeps
	// its private part, encrypted at rest, to sign the releases of the
	// namespace that are published without a signature. The private part
	// never leaves the store and the signing package. Snapshots of a key
	// in provider versions do not keep the mark.
	Managed bool
}

// Provider is a provider type within a namespace, summarised for listings.
type Provider struct {
	Namespace     string
	Type          string
	VersionCount  int
	LatestVersion string // highest version by semver precedence
	UpdatedAt     time.Time
}

// ProviderVersionSummary is what a list of a provider's version numbers
// needs of each version, without its platforms and signing key
// (store.Providers.ListProviderVersionSummaries): reading it costs a few
// allocations per version, not one per platform and column.
type ProviderVersionSummary struct {
	Version string
	// Revoked is whether the version is revoked (ProviderVersion.Revocation
	// is not nil).
	Revoked bool
	// Packaged is whether at least one of its platforms has a stored
	// package (a SHA256 and a size above 0).
	Packaged bool
}

// Summary returns the summary of v.
func (v ProviderVersion) Summary() ProviderVersionSummary {
	return ProviderVersionSummary{Version: v.Version, Revoked: v.Revocation != nil,
		Packaged: slices.ContainsFunc(v.Platforms, Platform.Packaged)}
}

// ProviderVersion is one immutable, published release of a provider.
type ProviderVersion struct {
	Namespace string
	Type      string
	Version   string // canonical semver without a leading "v"
	Protocols []string

	// SHASumsDigest and SHASumsSignatureDigest are the SHA-256 hex digests of
	// the SHA256SUMS document and its binary detached signature, both kept
	// as blobs.
	SHASumsDigest          string
	SHASumsSignatureDigest string

	// SigningKey is a snapshot of the namespace key that verified the
	// signature at publish time, so that the version keeps verifying after
	// the key is removed from the namespace.
	SigningKey SigningKey

	Platforms   []Platform
	PublishedAt time.Time

	// DocsDigest is the SHA-256 hex digest of the version's documentation
	// archive (package providerdocs), kept as a blob, and DocsSize its
	// size; "" and 0 while the version has no documentation. Set once:
	// like the version, its documentation never changes.
	DocsDigest string
	DocsSize   int64

	// Deprecation, if not nil, marks the version deprecated, and
	// Revocation, if not nil, revoked (see Deprecation and Revocation).
	// Both can be set and cleared after the publish.
	Deprecation *Deprecation
	Revocation  *Revocation

	// Provenance is the DSSE envelope (JSON) of the version's signed
	// in-toto provenance statement (package provenance), written once by
	// the publish. CreateProviderVersion stores it with the version; reads
	// leave it nil (store.Provenance reads it), as it is needed only when
	// asked for.
	Provenance []byte
	// HasProvenance reports, on reads, that the version has a stored
	// provenance envelope (store.Provenance reads it), without reading
	// the envelope: one query for a provider's whole list, and envelopes
	// read only for the versions that have one. Writes ignore it;
	// Provenance is what they store. For a MirroredVersion it is the
	// envelope an air-gap bundle brought.
	HasProvenance bool
}

// SHASumsFilename is the name of the SHA256SUMS document as goreleaser writes it.
func (v ProviderVersion) SHASumsFilename() string {
	return "terraform-provider-" + v.Type + "_" + v.Version + "_SHA256SUMS"
}

// SHASumsSignatureFilename is the name of the detached signature of SHA256SUMS.
func (v ProviderVersion) SHASumsSignatureFilename() string {
	return v.SHASumsFilename() + ".sig"
}

// Platform returns the package for os and arch, and whether there is one.
func (v ProviderVersion) Platform(os, arch string) (Platform, bool) {
	for _, p := range v.Platforms {
		if p.OS == os && p.Arch == arch {
			return p, true
		}
	}
	return Platform{}, false
}

// Platform is the zip package of a provider version for one OS and architecture.
type Platform struct {
	OS       string
	Arch     string
	Filename string // terraform-provider-<type>_<version>_<os>_<arch>.zip
	SHA256   string // lower-case hex digest of the zip; also its blob digest
	Size     int64
	// H1 is the "h1:" hash of the package's contents, as Terraform and
	// OpenTofu compute it for lock files (release.PackageHash), or ""
	// while it is not known yet (packages published before Trove computed
	// it, until the start-up backfill reaches them; mirrored packages not
	// fetched yet).
	H1 string
}

// Packaged reports whether the package of p is stored: it has a SHA256
// and a size above 0 (a mirrored package has neither until it is
// fetched).
func (p Platform) Packaged() bool { return p.SHA256 != "" && p.Size > 0 }

// MirroredVersion is a provider version of an upstream registry that the
// mirror holds: the upstream's original SHA256SUMS and signature (blobs
// SHASumsDigest and SHASumsSignatureDigest), verified with SigningKey, a
// key of the upstream's download document; and its packages, each known
// by the SHA256 that SHA256SUMS lists and fetched on first request. A
// mirrored package is held once its Size and H1 are set (Held).
// PublishedAt is when the mirror fetched the version.
type MirroredVersion struct {
	// Host is the upstream's hostname as provider source addresses write
	// it (lowercase, ASCII, with a port if it has one).
	Host string
	ProviderVersion
	// ProvenanceKeys are the public keys that verify the version's
	// Provenance (ProviderVersion.Provenance) when an air-gap bundle
	// carried one: the exporting Trove's namespace keys, not keys of this
	// Trove. Both are nil for what the mirror fetched from upstream, and
	// reads leave them nil (store.Provenance.MirroredProvenance reads
	// them).
	// (ProviderVersion.HasProvenance reports, on reads, that an air-gap
	// bundle brought the version's provenance.)
	ProvenanceKeys []SigningKey
}

// MirrorUpstream is an upstream registry the mirror may fetch providers
// from on a client's first request. Trove starts with two, the public
// Terraform and OpenTofu registries, allowing every provider; an
// operator may change or delete them and add private ones.
type MirrorUpstream struct {
	// Host is the upstream's hostname as provider source addresses write
	// it (lowercase, ASCII, with a port if it has one).
	Host string
	// ServiceURL, if set, is the upstream's providers.v1 base URL, used
	// instead of service discovery on Host (private upstreams, tests).
	ServiceURL string
	// CACertificates, if set, are PEM certificates trusted (besides the
	// system's) for the upstream's TLS connections.
	CACertificates string
	// Allow lists the providers that may be mirrored; a provider no rule
	// matches is not. Empty: none.
	Allow []MirrorRule
	// Description is free text for operators.
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// MirrorRule allows the providers whose "namespace/type" matches
// Provider, where "*" as a whole namespace or type matches any
// ("hashicorp/*", "*/*"), at the versions Versions allows (a version
// constraint such as "~> 5.0"; empty: every version).
type MirrorRule struct {
	Provider string
	Versions string
	// MinAge holds back a new upstream version for this long: it is
	// installable once it is MinAge old, counted from the upstream's
	// publish time where the upstream gives one, else from when this
	// Trove first saw it listed (mirror.Judge). 0: at once.
	MinAge time.Duration `json:",omitempty"`
}

// Held reports whether the mirror holds the package of p (its archive
// was fetched, verified and stored).
func (p Platform) Held() bool { return p.H1 != "" && p.Size > 0 }

// Scope is a right carried by a token.
type Scope string

// The scopes a token can carry. Admin implies publish, publish implies read.
const (
	ScopeRead    Scope = "read"
	ScopePublish Scope = "publish"
	ScopeAdmin   Scope = "admin"
)

// Scopes are the scopes a token can carry, weakest first.
var Scopes = []Scope{ScopeRead, ScopePublish, ScopeAdmin}

// ParseScope returns the scope named s: read, publish or admin, exactly.
func ParseScope(s string) (Scope, error) {
	if scope := Scope(s); slices.Contains(Scopes, scope) {
		return scope, nil
	}
	return "", Errorf(Invalid, "unknown scope %.64q: use read, publish or admin", s)
}

// Includes reports whether holding s grants want.
func (s Scope) Includes(want Scope) bool {
	rank := map[Scope]int{ScopeRead: 1, ScopePublish: 2, ScopeAdmin: 3}
	return rank[s] >= rank[want] && rank[want] > 0
}

// Token is an API credential. Only a hash of its secret is ever stored.
type Token struct {
	ID   string // public identifier, used to list and revoke
	Hash string // hex SHA-256 of the secret token string
	// Namespaces are the namespaces the token is bound to, normalized,
	// sorted and without duplicates (see ParseNamespaces); empty for a
	// global token, which applies to every namespace its principal may use.
	Namespaces []string
	// User is the name of the user a personal token acts for, "" for a
	// service token. A personal token carries its user's rights, narrowed
	// by its Namespaces, Scopes and ExpiresAt.
	User        string
	Scopes      []Scope
	Description string
	CreatedAt   time.Time
	ExpiresAt   time.Time // zero: never expires
	RevokedAt   time.Time // zero: not revoked
	// CI, on a token a keyless exchange issued, is what the CI system's
	// ID token said about the pipeline, for the provenance of what the
	// token publishes. CreateToken keeps it; token reads leave it nil
	// (store.Provenance.TokenCIClaims reads it).
	CI *CIClaims
}

// CIClaims are the claims of a CI system's ID token that name the build:
// the issuer (the builder), the repository, ref, workflow, commit and run.
type CIClaims struct {
	Issuer     string `json:"issuer"`
	Repository string `json:"repository,omitempty"`
	Ref        string `json:"ref,omitempty"`
	Workflow   string `json:"workflow,omitempty"`
	Commit     string `json:"commit,omitempty"`
	RunID      string `json:"run_id,omitempty"`
}

// Global reports whether the token is bound to no namespace.
func (t Token) Global() bool { return len(t.Namespaces) == 0 }

// Covers reports whether the token's binding includes namespace: always
// for a global token; for a bound one only a namespace of its set, never
// "" (a global right).
func (t Token) Covers(namespace string) bool {
	return t.Global() || (namespace != "" && slices.Contains(t.Namespaces, namespace))
}

// Allows reports whether the token grants scope on namespace at time now.
// A global token applies to every namespace; a bound token only to the
// namespaces of its set. An empty namespace argument asks for a global
// right, which a bound token never grants.
func (t Token) Allows(scope Scope, namespace string, now time.Time) bool {
	if !t.Active(now) || !t.Covers(namespace) {
		return false
	}
	for _, s := range t.Scopes {
		if s.Includes(scope) {
			return true
		}
	}
	return false
}

// Active reports whether the token is neither revoked nor expired at now.
func (t Token) Active(now time.Time) bool {
	if !t.RevokedAt.IsZero() {
		return false
	}
	return t.ExpiresAt.IsZero() || now.Before(t.ExpiresAt)
}
