// Package store defines Trove's storage contracts: the metadata Index and
// the content-addressed Blobs. Backends live in sub-packages named after
// their technology; storetest holds the conformance suites every backend
// must pass.
package store

import (
	"context"
	"io"
	"time"

	"trove.dev/trove/internal/registry"
)

// Index is the metadata store. Every method is safe for concurrent use.
// Errors are *registry.Error values of kind NotFound, Conflict or Invalid
// where stated, Unavailable when the backend cannot be reached, and
// Internal otherwise. Names passed in are already normalized.
type Index interface {
	Namespaces
	SigningKeys
	Tokens
	Providers
	Modules
	Lifecycle          // deprecation and revocation of versions (lifecycle.go)
	GarbageCollection  // blob references and the collector's lease (gc.go)
	RetentionRules     // which versions the collector deletes (retention.go)
	ProvenancePolicies // where releases must be built (provenance_policy.go)
	Downloads
	Secrets
	Access // users, memberships, personal tokens, authorization codes, audit log (access.go)
	PackageHashes
	Provenance // signed provenance of provider and module versions
	Mirror
	MirrorInventory
	MirrorUpstreams
	MirrorHolds // first sight, approvals and denials of upstream versions (holding releases back)
	Bundles
	SSO           // identity providers, role mappings, linked identities (sso.go)
	TrustPolicies // keyless publishing (trust.go)
	ReplayGuard
	Webhooks   // webhook subscriptions and their delivery outbox (webhooks.go)
	GitSources // git repositories as module sources (gitsources.go)

	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
	// Close releases the backend's resources.
	Close() error
}

// Namespaces stores namespaces.
type Namespaces interface {
	// CreateNamespace stores ns. Conflict if a namespace of that name exists.
	CreateNamespace(ctx context.Context, ns registry.Namespace) error
	// GetNamespace returns the namespace, or NotFound.
	GetNamespace(ctx context.Context, name string) (registry.Namespace, error)
	// ListNamespaces returns all namespaces ordered by name.
	ListNamespaces(ctx context.Context) ([]registry.Namespace, error)
	// UpdateNamespace replaces the mutable fields (Description) of an
	// existing namespace. NotFound if it does not exist.
	UpdateNamespace(ctx context.Context, ns registry.Namespace) error
	// DeleteNamespace deletes an empty namespace together with its signing
	// keys and every token bound to it (bound to it among other namespaces
	// too: a token never outlives one of its namespaces, so it can never
	// end up bound to none, that is global), in one transaction. NotFound
	// if it does not exist; Conflict if it still holds provider or module
	// versions.
	DeleteNamespace(ctx context.Context, name string) error
}

// SigningKeys stores the GPG public keys of namespaces, and the sealed
// private key of each namespace's registry-managed key, if it has one.
//
// A sealed private key is opaque to the store: the caller encrypts it
// (package signing), and the store keeps it next to its public key, never
// returning it from ListSigningKeys. A namespace has at most one managed
// key.
type SigningKeys interface {
	// AddSigningKey stores key as an uploaded key (key.Managed is
	// ignored). NotFound if its namespace does not exist; Conflict if the
	// namespace already has a key with that KeyID.
	AddSigningKey(ctx context.Context, key registry.SigningKey) error
	// AddManagedSigningKey stores key as the namespace's managed key
	// together with sealed, its encrypted private key, in one transaction:
	// both or neither. NotFound if its namespace does not exist; Conflict
	// if the namespace already has a key with that KeyID or a managed key.
	// An empty sealed is Invalid.
	AddManagedSigningKey(ctx context.Context, key registry.SigningKey, sealed []byte) error
	// ManagedSigningKey returns the namespace's managed key (Managed set)
	// and its sealed private key. NotFound if the namespace does not exist
	// or has no managed key.
	ManagedSigningKey(ctx context.Context, namespace string) (registry.SigningKey, []byte, error)
	// ListSigningKeys returns the keys of a namespace ordered by KeyID,
	// with Managed set on the managed one, without private keys. NotFound
	// if the namespace does not exist.
	ListSigningKeys(ctx context.Context, namespace string) ([]registry.SigningKey, error)
	// DeleteSigningKey removes a key, with its sealed private key if it is
	// the managed one. NotFound if there is no such key.
	DeleteSigningKey(ctx context.Context, namespace, keyID string) error
}

// Tokens stores API tokens by the hash of their secret.
type Tokens interface {
	// CreateToken stores t with its namespace binding, atomically.
	// Conflict if its ID or Hash is taken; NotFound if one of
	// t.Namespaces does not exist; Invalid if one of t.Scopes is not a
	// registry scope (registry.ParseScope).
	CreateToken(ctx context.Context, t registry.Token) error
	// TokenByHash returns the token whose Hash equals hash, revoked and
	// expired ones included, or NotFound.
	TokenByHash(ctx context.Context, hash string) (registry.Token, error)
	// ListTokens returns tokens ordered by CreatedAt then ID; namespace ""
	// lists all tokens, otherwise only those whose Namespaces contain it.
	// Returned tokens have their Namespaces sorted.
	ListTokens(ctx context.Context, namespace string) ([]registry.Token, error)
	// RevokeToken sets RevokedAt (once; a second revoke keeps the first
	// time). NotFound if there is no token with that ID.
	RevokeToken(ctx context.Context, id string, at time.Time) error
	// CountTokens returns how many tokens exist, revoked ones included.
	CountTokens(ctx context.Context) (int, error)
	// CreateFirstToken stores t only if no token exists yet and reports
	// whether it did. It is atomic across every process sharing the index,
	// so replicas starting together on an empty index create one first
	// admin token between them.
	CreateFirstToken(ctx context.Context, t registry.Token) (bool, error)
}

// Providers stores provider versions. A version and all its platforms are
// written in one transaction: readers see all of it or none of it.
type Providers interface {
	// CreateProviderVersion stores v with its platforms atomically. Of
	// v.SigningKey every field but Managed is kept (it reads back false).
	// v.DocsDigest and v.DocsSize are kept: a version published with its
	// documentation has it from the start (an invalid DocsDigest, or a
	// size below 1 with one, is Invalid).
	// NotFound if the namespace does not exist; Conflict if that
	// namespace/type/version exists already (whatever its content), so that
	// of two concurrent creates exactly one succeeds, or a version equal to
	// it but for build metadata does (registry.VersionPrecedence).
	CreateProviderVersion(ctx context.Context, v registry.ProviderVersion) error
	// GetProviderVersion returns one version with its platforms and
	// HasProvenance, or NotFound.
	GetProviderVersion(ctx context.Context, namespace, typ, version string) (registry.ProviderVersion, error)
	// ListProviderVersions returns every version of a provider with its
	// platforms and HasProvenance (whether Provenance.ProviderProvenance
	// has an envelope for it), in no particular order. NotFound if it has
	// no versions.
	ListProviderVersions(ctx context.Context, namespace, typ string) ([]registry.ProviderVersion, error)
	// ListProviderVersionSummaries returns a summary of every version of
	// a provider, in no particular order: for the readers of version
	// numbers only, at a fraction of ListProviderVersions' cost. NotFound
	// if it has no versions.
	ListProviderVersionSummaries(ctx context.Context, namespace, typ string) ([]registry.ProviderVersionSummary, error)
	// ListProviders returns the providers of a namespace ordered by type.
	// NotFound if the namespace does not exist.
	ListProviders(ctx context.Context, namespace string) ([]registry.Provider, error)
	// SetProviderDocs records that the documentation archive of a
	// version is the blob digest, of size bytes (the caller stored it
	// first): GetProviderVersion and ListProviderVersions return them as
	// DocsDigest and DocsSize. created reports whether this call recorded
	// it. NotFound if there is no such version. Setting the digest the
	// version has already is not an error but created is false (an
	// idempotent retry; the size stays the first), so that of concurrent
	// calls with one digest exactly one reports created; another digest
	// when the version has documentation already is Conflict, since
	// versions and their documentation are immutable. A digest that is
	// not 64 lower-case hex digits, or a size below 1, is Invalid.
	SetProviderDocs(ctx context.Context, namespace, typ, version, digest string, size int64) (created bool, err error)
	// DeleteProviderVersion removes one version with its platforms and
	// download counts, and updates (or, with the last version, removes)
	// its provider's summary, in one transaction. NotFound if there is no
	// such version. Blobs are left to the garbage collector (they are
	// content-addressed and may be shared). Reported on the change feed
	// as a ChangeProvider.
	DeleteProviderVersion(ctx context.Context, namespace, typ, version string) error
	// DeleteProvider removes every version of a provider and the provider
	// itself in one transaction, as DeleteProviderVersion does one, and
	// returns how many versions it removed. NotFound if the provider has
	// no versions.
	DeleteProvider(ctx context.Context, namespace, typ string) (int, error)
}

// Provenance reads the provenance envelopes that CreateProviderVersion and
// CreateModuleVersion store with versions (registry.ProviderVersion.Provenance,
// registry.ModuleVersion.Provenance).
type Provenance interface {
	// ProviderProvenance returns the DSSE envelope (JSON) stored with a
	// provider version. NotFound if there is no such version or it was
	// stored without one.
	ProviderProvenance(ctx context.Context, namespace, typ, version string) ([]byte, error)
	// MirroredProvenance returns the DSSE envelope an air-gap bundle
	// import stored with a mirrored provider version (Bundles), and the
	// public keys that verify it (KeyID and ASCIIArmor set). NotFound if
	// there is no such version or it was stored without one.
	MirroredProvenance(ctx context.Context, host, namespace, typ, version string) ([]byte, []registry.SigningKey, error)
	// ModuleProvenance returns the DSSE envelope (JSON) stored with a
	// module version by CreateModuleVersion
	// (registry.ModuleVersion.Provenance). NotFound if there is no such
	// version or it was stored without one.
	ModuleProvenance(ctx context.Context, namespace, name, system, version string) ([]byte, error)
	// ModuleProvenanceKeys returns the public keys an air-gap bundle
	// import stored with a module version's provenance (KeyID and
	// ASCIIArmor set). NotFound for a version without them, whose
	// provenance its namespace's keys verify.
	ModuleProvenanceKeys(ctx context.Context, namespace, name, system, version string) ([]registry.SigningKey, error)
	// TokenCIClaims returns the CI claims CreateToken stored with a token
	// (registry.Token.CI), and false for a token without them or no such
	// token.
	TokenCIClaims(ctx context.Context, tokenID string) (registry.CIClaims, bool, error)
}

// PackageHashes records the "h1:" hashes of published provider packages
// (registry.Platform.H1) that were published before Trove computed them.
type PackageHashes interface {
	// SetPackageHash records h1 for every published package whose zip has
	// digest sha256 and no hash yet. Idempotent.
	SetPackageHash(ctx context.Context, sha256, h1 string) error
	// PackagesWithoutHash returns up to limit distinct digests of
	// published packages whose H1 is "", in no particular order.
	PackagesWithoutHash(ctx context.Context, limit int) ([]string, error)
}

// Mirror stores the provider versions the mirror fetched from upstream
// registries (registry.MirroredVersion). Host, namespace and type are
// passed in normalized (lowercase). A version is written in one
// transaction with its platforms: readers see all of it or none of it.
type Mirror interface {
	// PutMirroredVersion stores v with its platforms (their Size and H1
	// empty) unless that host/namespace/type/version is stored already,
	// and returns the stored version either way: of concurrent puts of one
	// version, one is stored and every caller gets it. NotFound never;
	// Invalid for a version without platforms.
	PutMirroredVersion(ctx context.Context, v registry.MirroredVersion) (registry.MirroredVersion, error)
	// GetMirroredVersion returns one mirrored version with its platforms,
	// or NotFound.
	GetMirroredVersion(ctx context.Context, host, namespace, typ, version string) (registry.MirroredVersion, error)
	// ListMirroredVersions returns every mirrored version of a provider
	// with its platforms and HasProvenance set, in no particular order,
	// in one query. NotFound if there is none.
	ListMirroredVersions(ctx context.Context, host, namespace, typ string) ([]registry.MirroredVersion, error)
	// SetMirroredPackage records that the mirror holds the package of one
	// platform of a mirrored version: its size and h1 hash. NotFound if
	// there is no such version or platform. Setting the same values again
	// is not an error; different ones are Conflict (a package never
	// changes). A size below 1 or an empty h1 is Invalid. Every other
	// mirrored platform whose package has the same SHA256 and is not held
	// yet becomes held with it (the same bytes published to two
	// registries are one package).
	SetMirroredPackage(ctx context.Context, host, namespace, typ, version, os, arch string, size int64, h1 string) error
	// FindMirroredPackage returns a mirrored version that has a platform
	// whose package has digest sha256, and that platform (the first by
	// host, namespace, type, version, os and arch if several have it).
	// NotFound if none has.
	FindMirroredPackage(ctx context.Context, sha256 string) (registry.MirroredVersion, registry.Platform, error)
}

// MirrorInventory lists everything the mirror stores, for what reads a
// whole index (package storecopy).
type MirrorInventory interface {
	// ListAllMirroredVersions returns every mirrored version with its
	// platforms, ordered by host, namespace, type and version.
	ListAllMirroredVersions(ctx context.Context) ([]registry.MirroredVersion, error)
}

// MirrorUpstreams stores the upstream registries of the mirror
// (registry.MirrorUpstream), keyed by their normalized Host. Migration
// 0007 stores the two defaults.
type MirrorUpstreams interface {
	// PutMirrorUpstream creates u, or replaces the upstream of that Host
	// (keeping its CreatedAt).
	PutMirrorUpstream(ctx context.Context, u registry.MirrorUpstream) error
	// GetMirrorUpstream returns one upstream, or NotFound.
	GetMirrorUpstream(ctx context.Context, host string) (registry.MirrorUpstream, error)
	// ListMirrorUpstreams returns every upstream ordered by Host.
	ListMirrorUpstreams(ctx context.Context) ([]registry.MirrorUpstream, error)
	// DeleteMirrorUpstream removes an upstream (not what was mirrored
	// from it). NotFound if there is none of that Host.
	DeleteMirrorUpstream(ctx context.Context, host string) error
}

// MirrorHolds stores what holding new upstream versions back needs
// (docs/mirror.md): when this Trove first saw each version of a mirrored
// provider, and the operators' approvals and denials
// (registry.MirrorDecision). Host, namespace and type are passed in
// normalized (lowercase).
type MirrorHolds interface {
	// SeeMirroredVersions records at as the first-seen time of each of
	// versions that has none yet, and returns the first-seen time of every
	// one of them (a time recorded earlier is kept: first sight never
	// moves). Safe concurrently: of two callers seeing a version at once,
	// both get the time stored. At most 10,000 versions per call.
	SeeMirroredVersions(ctx context.Context, host, namespace, typ string, versions []string, at time.Time) (map[string]time.Time, error)
	// PutMirrorDecision stores d, keyed by host, namespace, type, kind and
	// versions; one stored already under that key gets d's Reason,
	// CreatedBy and CreatedAt. It reports whether d was new. Invalid for
	// a decision registry.CheckMirrorDecision refuses or a provider with
	// registry.MaxMirrorDecisions decisions already. The effects of ctx
	// (store.WithEffects) commit with it.
	PutMirrorDecision(ctx context.Context, d registry.MirrorDecision) (created bool, err error)
	// DeleteMirrorDecision removes one decision; NotFound if there is
	// none. The effects of ctx commit with it.
	DeleteMirrorDecision(ctx context.Context, host, namespace, typ string, kind registry.MirrorDecisionKind, versions string) error
	// ListMirrorDecisions returns the decisions about one provider of
	// host, or about every provider of host when namespace and typ are
	// both "", ordered by namespace, type, kind and versions.
	ListMirrorDecisions(ctx context.Context, host, namespace, typ string) ([]registry.MirrorDecision, error)
}

// Modules stores module versions. A version is written in one statement
// or transaction: readers see all of it or none of it. Namespace and Name
// are passed in normalized (lowercase), System as validated.
//
// The summary a listing returns (registry.Module) follows the versions:
// LatestVersion is the highest stored release by semver precedence (the
// highest pre-release only when the module has no release, as the
// protocol's latest-version answers choose), Description is that
// version's Description, UpdatedAt the newest PublishedAt, VersionCount
// the number of stored versions. A module whose last version is deleted
// disappears from listings.
type Modules interface {
	// CreateModuleVersion stores v with its Metadata, Description and
	// Origin. NotFound if the namespace does not exist; Conflict if that
	// namespace/name/system/version exists already (whatever its content),
	// so that of two concurrent creates exactly one succeeds, or a version
	// equal to it but for build metadata does (registry.VersionPrecedence).
	CreateModuleVersion(ctx context.Context, v registry.ModuleVersion) error
	// GetModuleVersion returns one version with its Metadata, or NotFound.
	GetModuleVersion(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error)
	// ListModuleVersions returns every version of a module, in no
	// particular order, with Metadata left nil (it can be large). NotFound
	// if the module has no versions.
	ListModuleVersions(ctx context.Context, namespace, name, system string) ([]registry.ModuleVersion, error)
	// ListModules returns the modules matching f ordered by namespace,
	// name, system, and the total number of matches before Offset/Limit.
	// Namespace and System filter by equality. Query matches a substring
	// of the namespace, the name or the Description, ignoring the case of
	// ASCII letters; it has no wildcards ('%' and '_' are literal). Limit
	// <= 0 means 100; a negative Offset counts as 0. An unknown namespace
	// matches nothing: never NotFound.
	ListModules(ctx context.Context, f registry.ModuleFilter) ([]registry.Module, int, error)
	// DeleteModuleVersion removes one version and updates its module's
	// summary in the same transaction. NotFound if it does not exist. The
	// archive blob is left to the garbage collector (blobs are
	// content-addressed and may be shared). Reported on the change feed
	// as a ChangeModule.
	DeleteModuleVersion(ctx context.Context, namespace, name, system, version string) error
	// DeleteModule removes every version of a module (with their download
	// counts) and its summary in one transaction and returns how many
	// versions it removed. NotFound if the module has no versions. The
	// archives are left to the garbage collector. Reported on the change
	// feed as a ChangeModule.
	DeleteModule(ctx context.Context, namespace, name, system string) (int, error)
}

// Downloads stores download counts (registry.DownloadCount) of provider
// packages (per version and platform) and module versions. Processes
// count in memory and add what they counted since their last write
// (package downloads); several processes sharing the index each add their
// own deltas, so the stored counts are sums and every write is additive.
//
// Counts belong to what exists: a delta for a provider version or
// platform, or a module version, that is not stored is dropped, not an
// error, and deleting a module version deletes its count (a version
// published again under that number starts from 0).
type Downloads interface {
	// AddDownloads adds every delta (Count > 0; others are Invalid, as
	// is a key of an unknown Kind) to the stored counts in one
	// transaction: all of them or none. Deltas of one key are summed. It
	// is not idempotent: a retry after a failure whose outcome is unknown
	// may count twice. Concurrent calls, from any process sharing the
	// index, add up exactly.
	AddDownloads(ctx context.Context, deltas []registry.DownloadCount) error
	// ProviderDownloads returns the non-zero counts of every version and
	// platform of a provider, in no particular order; none (never
	// NotFound) for a provider that does not exist or was never
	// downloaded.
	ProviderDownloads(ctx context.Context, namespace, typ string) ([]registry.DownloadCount, error)
	// ModuleDownloads returns the non-zero counts of every version of a
	// module, in no particular order; none (never NotFound) for a module
	// that does not exist or was never downloaded.
	ModuleDownloads(ctx context.Context, namespace, name, system string) ([]registry.DownloadCount, error)
	// ConsumerDownloads returns the consumer records of q (those of its
	// Since day and later), in no particular order; none for a provider
	// or module that does not exist or was never downloaded by a
	// recorded consumer.
	//
	// AddDownloads writes them: a delta whose key names a Consumer and a
	// Day adds to that day's record of its version as well as to its
	// total. A consumer "token:<id>" of a token a keyless exchange issued
	// is recorded as the pipeline its CI claims name
	// (registry.CIConsumer), so the record outlives the short-lived token.
	ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error)
	// PruneConsumerDownloads removes the consumer records of the days
	// before the day before, and returns how many it removed.
	PruneConsumerDownloads(ctx context.Context, before string) (int64, error)
}

// Secrets keeps server-wide secrets (such as the URL-signing key) so that
// every replica sharing the index uses the same ones.
type Secrets interface {
	// Secret returns the secret stored under name. If there is none it
	// stores generate()'s result and returns it; when two callers race,
	// both get the value that was stored first.
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}

// Blobs is a content-addressed store of immutable files named by the
// lower-case hex SHA-256 of their content. Every method is safe for
// concurrent use. A blob is either absent or complete: Put never exposes a
// partial write.
type Blobs interface {
	// Put stores the size bytes read from r under digest. It verifies the
	// content's SHA-256 and size before making it visible and returns an
	// Invalid error (storing nothing) on a mismatch. Putting a digest that
	// exists already succeeds without changing its content but renews
	// its modification time (Blob.ModTime), so that a garbage collector's
	// grace period counts from the last Put of any publish that uses it.
	Put(ctx context.Context, digest string, size int64, r io.Reader) error
	// Open returns the blob for reading, or NotFound.
	Open(ctx context.Context, digest string) (*Blob, error)
	// Stat returns the blob's size, or NotFound.
	Stat(ctx context.Context, digest string) (int64, error)
	// Delete removes a blob; deleting an absent blob succeeds.
	Delete(ctx context.Context, digest string) error
	// Walk calls fn for every stored blob, in no particular order, until fn
	// returns an error, which Walk then returns.
	Walk(ctx context.Context, fn func(digest string, size int64) error) error
}

// Blob is an open blob. Content's dynamic type is kept as the backend's
// own (an *os.File for the filesystem) so that http.ServeContent can hand
// it to sendfile.
type Blob struct {
	Content io.ReadSeekCloser
	Size    int64
	ModTime time.Time
}

// Close closes the blob's content.
func (b *Blob) Close() error { return b.Content.Close() }

// FilePutter is an optional ability of a Blobs backend: storing a local
// file (already verified to hold digest) by moving it instead of copying.
// The file at path is consumed. Like Put, putting a digest that exists
// already renews its modification time.
type FilePutter interface {
	PutFile(ctx context.Context, digest string, size int64, path string) error
}

// Presigner is an optional ability of a Blobs backend: a time-limited URL
// from which clients can fetch a blob directly, bypassing Trove.
type Presigner interface {
	PresignGet(ctx context.Context, digest, filename string, ttl time.Duration) (string, error)
}
