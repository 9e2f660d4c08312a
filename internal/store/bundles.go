package store

import (
	"context"

	"trove.dev/trove/internal/registry"
)

// Bundles imports air-gap bundles (`trove bundle import`): provider
// versions of other registries, which go into the mirror, and module
// versions, written together.
type Bundles interface {
	// ImportBundle stores providers as mirrored versions, each with every
	// one of its platforms held (Size and H1 set), and modules, in one
	// transaction: all of them or, on any error, none. A commit is
	// announced as a Change of kind ChangeAll.
	//
	// A mirrored version stored already with the same SHA256SUMS
	// (SHASumsDigest) is the same release: the platforms it lacks are
	// added, those it does not hold yet are recorded as held, and its
	// stored signature and key are kept. A stored version with another
	// SHA256SUMS, or a platform stored with another Filename or SHA256,
	// or held with another Size or H1, is Conflict.
	//
	// A module version stored already with the same ArchiveDigest is
	// left as it is; with another one, or a stored version equal to it
	// but for build metadata, Conflict. NotFound if a module's namespace
	// does not exist. Invalid for a mirrored version without platforms or
	// with a platform not held, or an invalid version.
	//
	// A version with Provenance (and its ProvenanceKeys, which it needs:
	// Invalid without) stores both with it (migration 0027,
	// Provenance.MirroredProvenance and ModuleProvenanceKeys read them).
	// A version stored already with the same envelope keeps it; with
	// another, or a module version stored without one, Conflict; a
	// mirrored version stored without one gains it.
	ImportBundle(ctx context.Context, providers []registry.MirroredVersion, modules []registry.ModuleVersion) (BundleImport, error)
}

// BundleImport is what ImportBundle wrote, per version given, in order.
type BundleImport struct {
	// Providers counts, per mirrored version, the packages the import
	// recorded as held: 0 when the version was held whole already.
	Providers []int
	// Modules says, per module version, whether it was stored (false: it
	// was stored already with the same archive).
	Modules []bool
}
