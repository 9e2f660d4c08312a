package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
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
//
// A blob is released when the last row naming it goes: every transaction
// that deletes rows naming blobs (DeleteProviderVersion, DeleteProvider,
// DeleteModuleVersion, DeleteModule, and any later write that drops such
// rows) records, as part of itself, the index's time for each digest no
// row names any more, so that the collector can count the grace period
// from there (see BlobReleased). A write that names the digest again
// forgets its release.
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
	// BlobReleased returns when digest was last released: the time of the
	// delete that removed the last row naming it. It is the zero time when
	// a row names digest now, when none ever did, and when the release
	// was not recorded (made before schema version 15, or by an older
	// Trove during a rolling upgrade).
	BlobReleased(ctx context.Context, digest string) (time.Time, error)
	// CollectBlob calls collect, which may delete digest from the blob
	// store, unless a row references digest, and reports whether one
	// does. collect gets the time digest was released (as BlobReleased,
	// read in the same statement as the question) and reports whether it
	// deleted the blob; if it did, the record of the release goes too.
	// The question and collect run under the exclusive side of the blob
	// lock, whose shared side every write that commits rows naming blobs
	// holds while it checks their presence (GuardBlobs) and until it
	// commits: no such write commits between the question and the end of
	// collect, and one that commits after sees the blob deleted and fails.
	// collect may run again if the transaction is retried, and must not
	// use the index (writes wait for it to end).
	CollectBlob(ctx context.Context, digest string, collect func(ctx context.Context, released time.Time) (deleted bool, err error)) (referenced bool, err error)
	// GuardBlobs sets the check that every write committing rows that name
	// blobs runs, under the shared side of the blob lock, on the digests
	// it names (a mirrored package not held yet excepted): the write fails
	// with the check's error, writing nothing. Call it once, before the
	// index is used; without it writes are not checked.
	GuardBlobs(check BlobCheck)
}

// BlobCheck reports whether every blob of digests is stored: nil, or an
// error that names one that is not.
type BlobCheck func(ctx context.Context, digests []string) error

// BlobsPresent returns the BlobCheck of b: a missing blob is Unavailable
// (retryable: the garbage collector removed it while the write ran, and
// the write stores it again when run again).
func BlobsPresent(b Blobs) BlobCheck {
	return func(ctx context.Context, digests []string) error {
		for _, d := range digests {
			_, err := b.Stat(ctx, d)
			if registry.IsKind(err, registry.NotFound) {
				return registry.Errorf(registry.Unavailable,
					"blob %s was removed by the garbage collector while this write ran; nothing was written, try again", d)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}
