package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// DeleteProviderVersion removes one version (its platforms and download
// counts go with it by ON DELETE CASCADE) and recomputes its provider's
// summary, or removes it with the last version, in one transaction.
func (x *Index) DeleteProviderVersion(ctx context.Context, namespace, typ, ver string) error {
	what := fmt.Sprintf("deleting provider %s/%s version %s", namespace, typ, ver)
	missing := providerVersionMissing(namespace, typ, ver)
	change := store.Change{Kind: store.ChangeProvider, Namespace: namespace, Name: typ}
	return x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		if err := x.lockProvider(ctx, t, namespace, typ, missing); err != nil {
			return err
		}
		const which = `namespace = $1 AND type = $2 AND version = $3`
		digests, err := providerBlobs(ctx, t, which, namespace, typ, ver)
		if err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM provider_versions WHERE `+which, namespace, typ, ver)
		if err := affected(res, err, missing); err != nil {
			return err
		}
		if err := x.releaseBlobs(ctx, t, digests); err != nil {
			return err
		}
		return x.recountProvider(ctx, t, namespace, typ)
	})
}

// providerBlobs returns the digests the provider versions matching the
// condition which (on provider_versions, with args) name.
func providerBlobs(ctx context.Context, t tx, which string, args ...any) ([]string, error) {
	rows, err := t.query(ctx, `SELECT shasums_digest FROM provider_versions WHERE `+which+`
		UNION SELECT shasums_signature_digest FROM provider_versions WHERE `+which+`
		UNION SELECT docs_digest FROM provider_versions WHERE `+which+`
		UNION SELECT sha256 FROM provider_platforms WHERE version_id IN (SELECT id FROM provider_versions WHERE `+which+`)`,
		args...)
	return collect(rows, err, func(s scanner) (string, error) {
		var d string
		return d, s.Scan(&d)
	})
}

// DeleteProvider removes every version of a provider and its summary row
// in one transaction.
func (x *Index) DeleteProvider(ctx context.Context, namespace, typ string) (int, error) {
	what := fmt.Sprintf("deleting provider %s/%s", namespace, typ)
	missing := registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
	change := store.Change{Kind: store.ChangeProvider, Namespace: namespace, Name: typ}
	var n int64
	err := x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		if err := x.lockProvider(ctx, t, namespace, typ, missing); err != nil {
			return err
		}
		const which = `namespace = $1 AND type = $2`
		digests, err := providerBlobs(ctx, t, which, namespace, typ)
		if err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM provider_versions WHERE `+which, namespace, typ)
		if err != nil {
			return err
		}
		if err := x.releaseBlobs(ctx, t, digests); err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if n == 0 {
			return missing
		}
		store.EffectsFrom(ctx).Bound(store.DeletedVersions(n))
		_, err = t.exec(ctx, `DELETE FROM providers WHERE namespace = $1 AND type = $2`, namespace, typ)
		return err
	})
	return int(n), err
}

// lockProvider locks a provider's summary row, as creates do, so that
// the recount after a delete sees every committed version; missing when
// there is no such row.
func (x *Index) lockProvider(ctx context.Context, t tx, namespace, typ string, missing error) error {
	var one int
	err := t.row(ctx, `SELECT 1 FROM providers WHERE namespace = $1 AND type = $2`+x.d.ForUpdate(), namespace, typ).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return missing
	}
	return err
}

// recountProvider rebuilds a provider's summary row from its versions,
// and removes the row when no version is left.
func (x *Index) recountProvider(ctx context.Context, t tx, namespace, typ string) error {
	type row struct {
		version   string
		published time.Time
	}
	rows, err := t.query(ctx, `SELECT version, published_at FROM provider_versions WHERE namespace = $1 AND type = $2`,
		namespace, typ)
	vs, err := collect(rows, err, func(s scanner) (row, error) {
		var r row
		return r, s.Scan(&r.version, at(&r.published))
	})
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		_, err = t.exec(ctx, `DELETE FROM providers WHERE namespace = $1 AND type = $2`, namespace, typ)
		return err
	}
	var latest string
	var updated time.Time
	for _, r := range vs {
		if r.published.After(updated) {
			updated = r.published
		}
		if sv, err := registry.ParseVersion(r.version); err == nil && registry.NewerLatestProvider(sv, latest) {
			latest = r.version
		}
	}
	_, err = t.exec(ctx, `UPDATE providers SET version_count = $1, latest_version = $2, updated_at = $3
		WHERE namespace = $4 AND type = $5`, len(vs), latest, x.d.Time(updated), namespace, typ)
	return err
}

// DeleteModule removes every version of a module and its summary row in
// one transaction.
func (x *Index) DeleteModule(ctx context.Context, namespace, name, system string) (int, error) {
	what := fmt.Sprintf("deleting module %s/%s/%s", namespace, name, system)
	missing := registry.Errorf(registry.NotFound, "module %s/%s/%s has no versions", namespace, name, system)
	change := store.Change{Kind: store.ChangeModule, Namespace: namespace, Name: name, System: system}
	var n int64
	err := x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		var one int
		err := t.row(ctx, `SELECT 1 FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`+x.d.ForUpdate(),
			namespace, name, system).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return missing
		}
		if err != nil {
			return err
		}
		const which = `namespace = $1 AND name = $2 AND system = $3`
		digests, err := moduleBlobs(ctx, t, which, namespace, name, system)
		if err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM module_versions WHERE `+which, namespace, name, system)
		if err != nil {
			return err
		}
		if err := x.releaseBlobs(ctx, t, digests); err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if n == 0 {
			return missing
		}
		store.EffectsFrom(ctx).Bound(store.DeletedVersions(n))
		_, err = t.exec(ctx, `DELETE FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
		return err
	})
	return int(n), err
}

// moduleBlobs returns the digests the module versions matching the
// condition which (on module_versions, with args) name.
func moduleBlobs(ctx context.Context, t tx, which string, args ...any) ([]string, error) {
	rows, err := t.query(ctx, `SELECT DISTINCT archive_digest FROM module_versions WHERE `+which, args...)
	return collect(rows, err, func(s scanner) (string, error) {
		var d string
		return d, s.Scan(&d)
	})
}

// SetClock sets the clock that dates the releases of blobs (time.Now by
// default). Call it before the index is used.
func (x *Index) SetClock(now func() time.Time) { x.clock.Store(&now) }

// now reads the clock.
func (x *Index) now() time.Time {
	if c := x.clock.Load(); c != nil {
		return (*c)()
	}
	return time.Now()
}

// releaseChunk is how many digests one statement of releaseBlobs names,
// well below the placeholder limits of both backends.
const releaseChunk = 500

// releaseBlobs records, in t, the release of every digest of digests
// (empty ones skipped) that no row names any more, at the index's time: a
// transaction that deleted rows naming them calls it after the deletes.
//
// Every digest is first upserted (a later time replaces an earlier one,
// never the reverse), which locks its row, and then the rows of the
// digests still named are removed. The row lock orders two deletes that
// release the same digest concurrently: the one that locks second sees
// the first committed, so the last reference to go always leaves a row,
// even when each of the deletes saw the other's reference when it ran.
// Digests are taken in order, so that such deletes cannot deadlock.
func (x *Index) releaseBlobs(ctx context.Context, t tx, digests []string) error {
	ds := make([]string, 0, len(digests))
	for _, d := range digests {
		if d != "" {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	ds = slices.Compact(ds)
	now, err := x.time(x.now(), "release time")
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(ds, releaseChunk) {
		values := make([]string, len(chunk))
		for i := range chunk {
			values[i] = fmt.Sprintf("($%d, $1)", i+2)
		}
		in, args := placeholders(chunk, 2)
		if _, err := t.exec(ctx, `INSERT INTO released_blobs (digest, released_at) VALUES `+strings.Join(values, ", ")+`
			ON CONFLICT (digest) DO UPDATE SET released_at = excluded.released_at
			WHERE excluded.released_at > released_blobs.released_at`, append([]any{now}, args...)...); err != nil {
			return err
		}
		in, args = placeholders(chunk, 1)
		if _, err := t.exec(ctx, `DELETE FROM released_blobs WHERE digest IN (`+in+`)
			AND (`+referencedCond("released_blobs.digest")+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// blobColumns are the columns (table and column) that hold blob digests;
// the garbage collector keeps every blob one of them names.
var blobColumns = [][2]string{
	{"provider_versions", "shasums_digest"},
	{"provider_versions", "shasums_signature_digest"},
	{"provider_versions", "docs_digest"},
	{"provider_platforms", "sha256"},
	{"module_versions", "archive_digest"},
	{"mirrored_versions", "shasums_digest"},
	{"mirrored_versions", "shasums_signature_digest"},
	{"mirrored_platforms", "sha256"},
}

// ReferencedBlobs reads every digest of blobColumns in one statement (one
// snapshot); a digest named by several rows is reported once.
func (x *Index) ReferencedBlobs(ctx context.Context, fn func(digest string) error) error {
	ctx, cancel := x.op(ctx)
	defer cancel()
	q := ""
	for i, c := range blobColumns {
		if i > 0 {
			q += " UNION ALL "
		}
		q += "SELECT " + c[1] + " FROM " + c[0] + " WHERE " + c[1] + " <> ''"
	}
	rows, err := x.query(ctx, q)
	if err != nil {
		return x.fail(err, "listing the referenced blobs")
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return x.fail(err, "listing the referenced blobs")
		}
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := fn(d); err != nil {
			return err
		}
	}
	return x.fail(rows.Err(), "listing the referenced blobs")
}

// referencedCond is the condition that a row of blobColumns names the
// digest expr (a placeholder or a column).
func referencedCond(expr string) string {
	q := ""
	for i, c := range blobColumns {
		if i > 0 {
			q += " OR "
		}
		q += "EXISTS (SELECT 1 FROM " + c[0] + " WHERE " + c[1] + " = " + expr + ")"
	}
	return q
}

// blobReferenced is the query whose one boolean says whether a row of
// blobColumns names the digest $1.
func blobReferenced() string { return "SELECT " + referencedCond("$1") }

// blobState is the query whose one row says whether a row of blobColumns
// names the digest $1 and when it was released (NULL without a record),
// in one statement: one snapshot.
func blobState() string {
	return "SELECT " + referencedCond("$1") + ", (SELECT released_at FROM released_blobs WHERE digest = $1)"
}

// BlobReferenced reports whether a row of blobColumns names digest.
func (x *Index) BlobReferenced(ctx context.Context, digest string) (bool, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var ok bool
	if err := x.row(ctx, blobReferenced(), digest).Scan(&ok); err != nil {
		return false, x.fail(err, "checking the references of blob "+digest)
	}
	return ok, nil
}

// blobLock is the key of the lock that makes the garbage collector's
// question and delete of one blob (CollectBlob, exclusive) and a write's
// presence check and commit of rows naming blobs (guardBlobs, shared)
// exclusive of each other. SQLite needs none: its one writer connection
// runs one write transaction at a time, and both run in one.
const blobLock int64 = 0x74726f76652e6763 // "trove.gc"

// BlobReleased reads blobState.
func (x *Index) BlobReleased(ctx context.Context, digest string) (time.Time, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var referenced bool
	var released time.Time
	if err := x.row(ctx, blobState(), digest).Scan(&referenced, at(&released)); err != nil {
		return time.Time{}, x.fail(err, "reading the release of blob "+digest)
	}
	if referenced {
		return time.Time{}, nil
	}
	return released, nil
}

// CollectBlob asks blobState and runs collect in one write transaction
// holding blobLock exclusively, then removes the digest's release when
// collect deleted the blob.
func (x *Index) CollectBlob(ctx context.Context, digest string, collect func(ctx context.Context, released time.Time) (bool, error)) (bool, error) {
	var referenced bool
	err := x.write(ctx, "collecting blob "+digest, func(ctx context.Context, t tx) error {
		if err := x.d.LockTx(ctx, t.Tx, blobLock); err != nil {
			return err
		}
		// Asked after the lock: a statement's snapshot (read committed)
		// then includes every write that held the shared side. Deletes do
		// not take the lock; the one statement sees a delete's removal of
		// rows and its release together, or neither.
		var released time.Time
		if err := t.row(ctx, blobState(), digest).Scan(&referenced, at(&released)); err != nil || referenced {
			return err
		}
		deleted, err := collect(ctx, released)
		if err != nil || !deleted {
			return err
		}
		_, err = t.exec(ctx, `DELETE FROM released_blobs WHERE digest = $1`, digest)
		return err
	})
	return referenced, err
}

// GuardBlobs sets the check guardBlobs runs.
func (x *Index) GuardBlobs(check store.BlobCheck) { x.check.Store(&check) }

// guardBlobs takes blobLock shared in t, checks that the blobs of
// digests (empty ones skipped) are stored, and forgets their releases: a
// write that commits rows naming blobs calls it first in its
// transaction, before any other row lock. (Forgetting locks the records
// of released blobs, which a delete locks after its provider or module:
// a publish naming a released blob again and a delete in the same
// provider or module releasing it at the same moment can deadlock on
// PostgreSQL, which aborts one of them; it is run again, FailRetry.)
func (x *Index) guardBlobs(ctx context.Context, t tx, digests ...string) error {
	if err := x.d.LockTxShared(ctx, t.Tx, blobLock); err != nil {
		return err
	}
	var ds []string
	seen := map[string]bool{}
	for _, d := range digests {
		if d != "" && !seen[d] {
			seen[d] = true
			ds = append(ds, d)
		}
	}
	if check := x.check.Load(); check != nil {
		if err := (*check)(ctx, ds); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(ds, releaseChunk) {
		in, args := placeholders(chunk, 1)
		if _, err := t.exec(ctx, `DELETE FROM released_blobs WHERE digest IN (`+in+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// placeholders returns "$first, $first+1, ..." for the digests ds, and ds
// as arguments.
func placeholders(ds []string, first int) (string, []any) {
	in, args := make([]string, len(ds)), make([]any, len(ds))
	for i, d := range ds {
		in[i], args[i] = fmt.Sprintf("$%d", first+i), d
	}
	return strings.Join(in, ", "), args
}

// BlobReferences counts the rows of blobColumns that name digest.
func (x *Index) BlobReferences(ctx context.Context, digest string) (int, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	q := "SELECT "
	for i, c := range blobColumns {
		if i > 0 {
			q += " + "
		}
		q += "(SELECT COUNT(*) FROM " + c[0] + " WHERE " + c[1] + " = $1)"
	}
	var n int
	if err := x.row(ctx, q, digest).Scan(&n); err != nil {
		return 0, x.fail(err, "counting the references of blob "+digest)
	}
	return n, nil
}

// gcLeaseID is the key of the one row of gc_lease (migration 0013).
const gcLeaseID = 1

// AcquireGCLease upserts the lease row, replacing another holder's only
// when it has expired.
func (x *Index) AcquireGCLease(ctx context.Context, holder string, now, until time.Time) error {
	if holder == "" {
		return registry.Errorf(registry.Invalid, "a garbage collector lease needs a holder")
	}
	n, err := x.time(now, "lease time")
	if err != nil {
		return err
	}
	u, err := x.time(until, "lease expiry")
	if err != nil {
		return err
	}
	busy := registry.Errorf(registry.Conflict, "another garbage collection is running; try again when it has finished")
	return x.write(ctx, "taking the garbage collector lease", func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `INSERT INTO gc_lease (id, holder, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE gc_lease.holder = excluded.holder OR gc_lease.expires_at <= $4`, gcLeaseID, holder, u, n)
		return affected(res, err, busy)
	})
}

// ReleaseGCLease deletes the lease row if holder holds it.
func (x *Index) ReleaseGCLease(ctx context.Context, holder string) error {
	return x.write(ctx, "releasing the garbage collector lease", func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `DELETE FROM gc_lease WHERE id = $1 AND holder = $2`, gcLeaseID, holder)
		return err
	})
}
