package store

import (
	"context"
	"time"
)

// GarbageCollection is what the blob garbage collector (package gc) needs
// of the index: which blobs the index references, and a lease that lets
// one collector at a time run among every process sharing the index.
//
// A blob is referenced while any row names it: a provider version's
// SHA256SUMS, its signature, its packages or its documentation archive,
// a module version's archive, or a mirrored version's SHA256SUMS,
// signature or package (held or not: a package being fetched is named
// before it is held).
type GarbageCollection interface {
	// ReferencedBlobs calls fn once for every digest some row references,
	// in no particular order, until fn returns an error, which it then
	// returns. It reads one consistent snapshot.
	ReferencedBlobs(ctx context.Context, fn func(digest string) error) error
	// BlobReferenced reports whether some row references digest now.
	BlobReferenced(ctx context.Context, digest string) (bool, error)
	// BlobReferences counts the references to digest now: one per row
	// and column naming it (a version naming it twice counts twice).
	BlobReferences(ctx context.Context, digest string) (int, error)
	// AcquireGCLease takes (or, for the same holder, extends) the one
	// collector lease until the given time. Conflict if another holder's
	// lease has not expired at now; an expired lease is taken over, so a
	// crashed collector blocks the next one only until its lease ends.
	AcquireGCLease(ctx context.Context, holder string, now, until time.Time) error
	// ReleaseGCLease ends holder's lease; releasing a lease not held (or
	// held by another) is not an error and changes nothing.
	ReleaseGCLease(ctx context.Context, holder string) error
}
