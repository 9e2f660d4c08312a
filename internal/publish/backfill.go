package publish

import (
	"context"
	"fmt"
	"os"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/staging"
	"trove.dev/trove/internal/store"
)

// Backfill limits.
const (
	// backfillBatch is how many packages BackfillPackageHashes asks the
	// index for at a time.
	backfillBatch = 100
	// maxBackfillFailures is how many packages may fail to hash before
	// BackfillPackageHashes gives up (an unreachable index or blob store
	// fails every one).
	maxBackfillFailures = 1000
)

// BackfillPackageHashes computes the h1 hash (registry.Platform.H1) of
// every published package that has none, because it was published before
// Trove computed them, and records it in hashes. It works through the
// packages in batches, one package at a time: each blob is copied to a
// staged file (blobs may be remote, and the copy is checked against its
// digest), hashed and removed. It logs its progress once per batch and
// returns when no package lacks a hash, or ctx's error when ctx ends.
//
// A package that cannot be hashed (its blob missing or damaged) is logged
// and skipped until the next start; after too many such failures the
// backfill stops with an error. Several replicas may run it at once:
// SetPackageHash only fills in hashes that are missing, and every replica
// computes the same ones.
func (p *Publisher) BackfillPackageHashes(ctx context.Context, hashes store.PackageHashes) error {
	log := p.opt.Logger
	failed := map[string]bool{}
	hashed := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Asking for the failed ones on top of a batch yields at least a
		// batch of others while there are any.
		digests, err := hashes.PackagesWithoutHash(ctx, backfillBatch+len(failed))
		if err != nil {
			return fmt.Errorf("listing the packages without an h1 hash: %w", err)
		}
		var todo []string
		for _, d := range digests {
			if !failed[d] {
				todo = append(todo, d)
			}
		}
		if len(todo) == 0 {
			if hashed > 0 || len(failed) > 0 {
				log.InfoContext(ctx, "package hash backfill finished", "hashed", hashed, "failed", len(failed))
			}
			return nil
		}
		for _, d := range todo {
			h1, err := p.hashBlob(ctx, d)
			if err == nil {
				err = hashes.SetPackageHash(ctx, d, h1)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				log.WarnContext(ctx, "cannot compute the h1 hash of a published package; skipped until the next start", "digest", d, "err", err)
				failed[d] = true
				continue
			}
			hashed++
		}
		log.InfoContext(ctx, "package hash backfill", "hashed", hashed, "failed", len(failed))
		if len(failed) >= maxBackfillFailures {
			return registry.Errorf(registry.Unavailable, "package hash backfill: %d packages failed; giving up until the next start", len(failed))
		}
	}
}

// hashBlob returns the h1 hash of the package in blob digest, copied to a
// staged file first.
func (p *Publisher) hashBlob(ctx context.Context, digest string) (string, error) {
	b, err := p.opt.Blobs.Open(ctx, digest)
	if err != nil {
		return "", err
	}
	defer b.Close()
	f, err := p.stage.CreateFile("*.zip")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, got, err := staging.Copy(f, b.Content, b.Size, "blob "+digest)
	if err != nil {
		return "", err
	}
	if got != digest {
		return "", registry.Errorf(registry.Internal, "blob %s holds content of digest %s: damaged", digest, got)
	}
	return release.PackageHash(f.Name())
}
