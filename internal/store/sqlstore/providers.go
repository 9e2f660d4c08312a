package sqlstore

import (
	"cmp"
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

// CreateProviderVersion stores v with its platforms in one transaction.
// NotFound without the namespace; Conflict if the version exists. The
// provider's summary row is created if missing and locked first, so
// concurrent creates of one provider run one after the other and exactly
// one of two creates of the same version succeeds.
func (x *Index) CreateProviderVersion(ctx context.Context, v registry.ProviderVersion) error {
	store.EffectsFrom(ctx).Bound(v)
	semver, err := registry.ParseVersion(v.Version)
	if err != nil {
		return err
	}
	if err := registry.CheckPlatforms(v); err != nil {
		return err
	}
	if v.DocsDigest != "" || v.DocsSize != 0 {
		if err := checkDocs(v.DocsDigest, v.DocsSize); err != nil {
			return err
		}
	}
	published, err := x.time(v.PublishedAt, "publication time")
	if err != nil {
		return err
	}
	k := v.SigningKey
	keyCreated, err := x.time(k.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	keyExpires, err := x.optTime(k.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	digest := registry.KeySnapshotDigest(v.Namespace, k)
	what := fmt.Sprintf("storing provider %s/%s version %s", v.Namespace, v.Type, v.Version)
	change := store.Change{Kind: store.ChangeProvider, Namespace: v.Namespace, Name: v.Type}
	blobs := []string{v.SHASumsDigest, v.SHASumsSignatureDigest, v.DocsDigest}
	for _, p := range v.Platforms {
		blobs = append(blobs, p.SHA256)
	}
	return x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		if err := x.guardBlobs(ctx, t, blobs...); err != nil {
			return err
		}
		// The first version of a provider creates its row (the foreign key
		// checks the namespace); every create then locks it.
		_, err := t.exec(ctx, `INSERT INTO providers (namespace, type, version_count, latest_version, updated_at)
			VALUES ($1, $2, 0, '', $3) ON CONFLICT (namespace, type) DO NOTHING`, v.Namespace, v.Type, published)
		if x.is(err, FailForeignKey) {
			return notFoundNamespace(v.Namespace)
		}
		if err != nil {
			return err
		}
		var count int
		var latest string
		var updated time.Time
		if err := t.row(ctx, `SELECT version_count, latest_version, updated_at FROM providers
			WHERE namespace = $1 AND type = $2`+x.d.ForUpdate(), v.Namespace, v.Type).Scan(&count, &latest, at(&updated)); err != nil {
			return err
		}

		// A version with the same precedence (equal but for build
		// metadata) is taken too: the clients could not tell the two apart.
		// The lock above makes this check and the insert one step.
		// The range makes it a lookup in the unique index (see
		// precedenceRange), not a read of every version of the provider.
		core, below := precedenceRange(v.Version)
		var existing string
		err = t.row(ctx, `SELECT version FROM provider_versions WHERE namespace = $1 AND type = $2
			AND version >= $3 AND version < $4 AND (version = $3 OR substr(version, 1, $5) = $6) LIMIT 1`,
			v.Namespace, v.Type, core, below, len(core)+1, core+"+").Scan(&existing)
		switch {
		case err == nil:
			return registry.PrecedenceConflict(fmt.Sprintf("provider %s/%s", v.Namespace, v.Type), v.Version, existing)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}

		var keyID int64
		err = t.row(ctx, `INSERT INTO signing_key_snapshots
			(digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (digest) DO NOTHING RETURNING id`,
			digest, v.Namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor, keyCreated, keyExpires).Scan(&keyID)
		if errors.Is(err, sql.ErrNoRows) {
			err = t.row(ctx, `SELECT id FROM signing_key_snapshots WHERE digest = $1`, digest).Scan(&keyID)
		}
		if err != nil {
			return err
		}

		var id int64
		err = t.row(ctx, `INSERT INTO provider_versions
			(namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at,
			docs_digest, docs_size)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
			v.Namespace, v.Type, v.Version, x.d.Strings(v.Protocols), v.SHASumsDigest, v.SHASumsSignatureDigest, keyID, published,
			v.DocsDigest, v.DocsSize).Scan(&id)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "provider %s/%s version %s exists already; published versions are immutable",
				v.Namespace, v.Type, v.Version)
		}
		if err != nil {
			return err
		}
		if len(v.Provenance) > 0 {
			if _, err := t.exec(ctx, `INSERT INTO provider_provenance (version_id, envelope) VALUES ($1, $2)`, id, string(v.Provenance)); err != nil {
				return err
			}
		}
		// A few statements of many rows each, within both backends'
		// limits on the number of parameters.
		for chunk := range slices.Chunk(v.Platforms, platformsPerInsert) {
			values, args := make([]string, len(chunk)), make([]any, 0, 1+6*len(chunk))
			args = append(args, id)
			for i, p := range chunk {
				n := len(args)
				values[i] = fmt.Sprintf("($1, $%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6)
				args = append(args, p.OS, p.Arch, p.Filename, p.SHA256, p.Size, p.H1)
			}
			if _, err := t.exec(ctx, `INSERT INTO provider_platforms (version_id, os, arch, filename, sha256, size, h1) VALUES `+
				strings.Join(values, ", "), args...); err != nil {
				return err
			}
		}

		if registry.NewerLatestProvider(semver, latest) {
			latest = v.Version
		}
		if count == 0 || v.PublishedAt.After(updated) {
			updated = v.PublishedAt
		}
		_, err = t.exec(ctx, `UPDATE providers SET version_count = $1, latest_version = $2, updated_at = $3
			WHERE namespace = $4 AND type = $5`, count+1, latest, x.d.Time(updated), v.Namespace, v.Type)
		return err
	})
}

// ProviderProvenance returns the provenance envelope stored with a
// version. NotFound if there is no such version or it has none.
func (x *Index) ProviderProvenance(ctx context.Context, namespace, typ, ver string) ([]byte, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var envelope string
	var has bool
	err := x.row(ctx, `SELECT p.envelope IS NOT NULL, COALESCE(p.envelope, '') FROM provider_versions v
		LEFT JOIN provider_provenance p ON p.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3`, namespace, typ, ver).Scan(&has, &envelope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, ver)
	}
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("reading the provenance of provider %s/%s version %s", namespace, typ, ver))
	}
	if !has {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s version %s has no provenance: it was published before Trove recorded provenance, "+
			"or its namespace had no Trove-managed signing key then", namespace, typ, ver)
	}
	return []byte(envelope), nil
}

// precedenceRange returns the version of v's precedence (v without build
// metadata) and the string below which every version of that precedence
// sorts: core and core+"+..." are the strings from core up to core+","
// ("," follows "+" in byte order), a range of the versions' unique
// index, whose version column compares bytes (COLLATE "C" on PostgreSQL,
// SQLite's BINARY). Other strings of the range (core followed by a byte
// below ",", which no valid version holds) are left out by the exact
// condition the queries add.
func precedenceRange(v string) (core, below string) {
	core = registry.VersionPrecedence(v)
	return core, core + ","
}

// platformsPerInsert is how many platforms one INSERT stores.
const platformsPerInsert = 100

// The columns of a provider version, by position: versionColumnNames
// and versionRow.targets are keyed by these, so that the names and the
// destinations cannot fall out of step.
const (
	vcID = iota
	vcVersion
	vcProtocols
	vcSHASums
	vcSHASumsSignature
	vcPublishedAt
	vcDocsDigest
	vcDocsSize
	vcDeprecatedAt
	vcDeprecationReason
	vcDeprecationLink
	vcDeprecatedBy
	vcRevokedAt
	vcRevocationReason
	vcRevokedBy
	vcCount // the number of columns
)

// versionColumnNames are the columns of a provider version v.
var versionColumnNames = [vcCount]string{
	vcID: "v.id", vcVersion: "v.version", vcProtocols: "v.protocols", vcSHASums: "v.shasums_digest",
	vcSHASumsSignature: "v.shasums_signature_digest", vcPublishedAt: "v.published_at",
	vcDocsDigest: "v.docs_digest", vcDocsSize: "v.docs_size",
	vcDeprecatedAt: "v.deprecated_at", vcDeprecationReason: "v.deprecation_reason", vcDeprecationLink: "v.deprecation_link",
	vcDeprecatedBy: "v.deprecated_by", vcRevokedAt: "v.revoked_at", vcRevocationReason: "v.revocation_reason",
	vcRevokedBy: "v.revoked_by",
}

// versionColumns are the columns versionRow receives, in its order.
var versionColumns = strings.Join(versionColumnNames[:], ", ")

// keyColumns are the columns keyRow receives, in its order.
const keyColumns = `k.key_namespace, k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at`

// versionRow receives the versionColumns of one row.
type versionRow struct {
	id int64
	v  registry.ProviderVersion
	lc lifecycleRow
}

// targets returns the scan destinations of the versionColumns.
func (r *versionRow) targets(d Dialect) []any {
	t := [vcCount]any{
		vcID: &r.id, vcVersion: &r.v.Version, vcProtocols: d.ScanStrings(&r.v.Protocols), vcSHASums: &r.v.SHASumsDigest,
		vcSHASumsSignature: &r.v.SHASumsSignatureDigest, vcPublishedAt: at(&r.v.PublishedAt),
		vcDocsDigest: &r.v.DocsDigest, vcDocsSize: &r.v.DocsSize,
		vcDeprecatedAt: at(&r.lc.deprecatedAt), vcDeprecationReason: &r.lc.reason, vcDeprecationLink: &r.lc.link,
		vcDeprecatedBy: &r.lc.deprecatedBy, vcRevokedAt: at(&r.lc.revokedAt), vcRevocationReason: &r.lc.revoked,
		vcRevokedBy: &r.lc.revBy,
	}
	return t[:]
}

// readVersion decodes the versionColumns of row (a RawRow whose first
// vcCount columns they are) into *v, a version of namespace/typ, its texts
// through text (which the caller flushes before *v moves) and its
// protocols through protocols. As versionRow.decode, a deprecation or
// revocation is nil where its time is NULL.
func readVersion(d Dialect, row RawRow, v *registry.ProviderVersion, namespace, typ string, text *rowText, protocols *listInterner) error {
	list, err := protocols.decode(d, row.Text(vcProtocols))
	if err != nil {
		return err
	}
	*v = registry.ProviderVersion{Namespace: namespace, Type: typ, Protocols: list, PublishedAt: row.Time(vcPublishedAt),
		DocsSize: row.Int64(vcDocsSize)}
	text.add(&v.Version, row.Text(vcVersion))
	text.add(&v.SHASumsDigest, row.Text(vcSHASums))
	text.add(&v.SHASumsSignatureDigest, row.Text(vcSHASumsSignature))
	text.add(&v.DocsDigest, row.Text(vcDocsDigest))
	if at := row.Time(vcDeprecatedAt); !at.IsZero() {
		v.Deprecation = &registry.Deprecation{At: at}
		text.add(&v.Deprecation.Reason, row.Text(vcDeprecationReason))
		text.add(&v.Deprecation.Link, row.Text(vcDeprecationLink))
		text.add(&v.Deprecation.By, row.Text(vcDeprecatedBy))
	}
	if at := row.Time(vcRevokedAt); !at.IsZero() {
		v.Revocation = &registry.Revocation{At: at}
		text.add(&v.Revocation.Reason, row.Text(vcRevocationReason))
		text.add(&v.Revocation.By, row.Text(vcRevokedBy))
	}
	return nil
}

func (r *versionRow) decode(namespace, typ string) registry.ProviderVersion {
	v := r.v
	v.Namespace, v.Type = namespace, typ
	v.Deprecation, v.Revocation = r.lc.states()
	return v
}

// keyTargets returns the scan destinations of the keyColumns.
func keyTargets(k *registry.SigningKey) []any {
	return []any{&k.Namespace, &k.KeyID, &k.Fingerprint, &k.ASCIIArmor, at(&k.CreatedAt), at(&k.ExpiresAt)}
}

// platformColumns are the columns of a version's platforms, NULL for a
// version without platforms (they are LEFT JOINed as p).
const platformColumns = `p.os, p.arch, p.filename, p.sha256, p.size, p.h1`

// platformRow receives the platformColumns of one row.
type platformRow struct {
	os, arch, filename, sha256, h1 sql.NullString
	size                           sql.NullInt64
}

func (r *platformRow) targets() []any {
	return []any{&r.os, &r.arch, &r.filename, &r.sha256, &r.size, &r.h1}
}

// addTo appends the platform, if the row has one, to v.
func (r *platformRow) addTo(v *registry.ProviderVersion) {
	if r.os.Valid {
		v.Platforms = append(v.Platforms, registry.Platform{
			OS: r.os.String, Arch: r.arch.String, Filename: r.filename.String, SHA256: r.sha256.String, Size: r.size.Int64,
			H1: r.h1.String,
		})
	}
}

// sortPlatforms orders platforms by OS, then architecture.
func sortPlatforms(ps []registry.Platform) {
	slices.SortFunc(ps, func(a, b registry.Platform) int {
		return cmp.Or(strings.Compare(a.OS, b.OS), strings.Compare(a.Arch, b.Arch))
	})
}

// GetProviderVersion returns one version with its platforms and
// HasProvenance, or NotFound, in one statement: a row per platform.
func (x *Index) GetProviderVersion(ctx context.Context, namespace, typ, ver string) (registry.ProviderVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+versionColumns+`, `+keyColumns+`, `+platformColumns+`, pp.version_id IS NOT NULL
		FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot
		LEFT JOIN provider_platforms p ON p.version_id = v.id
		LEFT JOIN provider_provenance pp ON pp.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3`, namespace, typ, ver)
	var v registry.ProviderVersion
	found := false
	_, err = collect(rows, err, func(s scanner) (struct{}, error) {
		var vr versionRow
		var pr platformRow
		var hasProvenance bool
		if err := s.Scan(append(append(append(vr.targets(x.d), keyTargets(&v.SigningKey)...), pr.targets()...), &hasProvenance)...); err != nil {
			return struct{}{}, err
		}
		if !found {
			found, v.Platforms = true, nil
			key := v.SigningKey
			v = vr.decode(namespace, typ)
			v.SigningKey, v.HasProvenance = key, hasProvenance
		}
		pr.addTo(&v)
		return struct{}{}, nil
	})
	if err != nil {
		return registry.ProviderVersion{}, x.fail(err, fmt.Sprintf("reading provider %s/%s version %s", namespace, typ, ver))
	}
	if !found {
		return registry.ProviderVersion{}, registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, ver)
	}
	sortPlatforms(v.Platforms)
	return v, nil
}

// ListProviderVersionSummaries returns the version number, revocation
// and whether a package is stored of every version of a provider, in one
// statement; NotFound if it has none.
func (x *Index) ListProviderVersionSummaries(ctx context.Context, namespace, typ string) ([]registry.ProviderVersionSummary, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT v.version, v.revoked_at IS NOT NULL,
			EXISTS (SELECT 1 FROM provider_platforms p WHERE p.version_id = v.id AND p.sha256 <> '' AND p.size > 0)
		FROM provider_versions v WHERE v.namespace = $1 AND v.type = $2`, namespace, typ)
	out, err := collect(rows, err, func(s scanner) (registry.ProviderVersionSummary, error) {
		var v registry.ProviderVersionSummary
		err := s.Scan(&v.Version, &v.Revoked, &v.Packaged)
		return v, err
	})
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("listing the version numbers of provider %s/%s", namespace, typ))
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
	}
	return out, nil
}

// ListProviderVersions returns every version of a provider with its
// platforms and HasProvenance, or NotFound if it has none, in three
// statements: the versions (one row each, with whether each has
// provenance), their platforms (one row each, and one row of
// NULLs for a version without platforms), then the signing keys, each
// once.
//
// The versions and platforms, tens of thousands of rows for a large
// provider, are read through the index's RowReader (on PostgreSQL pgx's
// own rows, not database/sql's Go value per column) into arrays sized or
// chunked once, their texts parts of one string per 32 KiB: the version
// count of the providers row sizes the versions; the platforms are kept
// in chunks that never move (see platformSet), each version's a part of
// one. A provider's protocol lists are one slice per distinct value, os
// and arch names one string each. So a list allocates a few times per
// 32 KiB of text and per thousand platforms, not per row or column.
//
// The statements need not share a snapshot: a version is immutable but
// for its lifecycle columns, a key snapshot row outlives every version
// that refers to it, and only the versions both of the first two
// statements saw are listed (one created or deleted between them is left
// out, as if the list had been read before or after the change).
func (x *Index) ListProviderVersions(ctx context.Context, namespace, typ string) ([]registry.ProviderVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	what := fmt.Sprintf("listing the versions of provider %s/%s", namespace, typ)

	// After the versionColumns: the version's key snapshot, then the
	// provider's version count (the same in every row), a capacity hint,
	// then its provenance row's key, NULL if it has none (a lookup of
	// provider_provenance's primary key, not a read of the envelope).
	const snapshotColumn, countColumn, provenanceColumn = vcCount, vcCount + 1, vcCount + 2
	var out []registry.ProviderVersion
	var snapshots []int64 // out[i]'s signing key snapshot
	var index map[int64]int32
	var text rowText
	var protocols listInterner
	err := x.rows.ReadRows(ctx, `SELECT `+versionColumns+`, v.signing_key_snapshot,
			(SELECT version_count FROM providers WHERE namespace = $1 AND type = $2), pp.version_id
		FROM provider_versions v LEFT JOIN provider_provenance pp ON pp.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2`, []any{namespace, typ}, func(row RawRow) error {
		if out == nil {
			n := int(min(max(row.Int64(countColumn), 1), maxListHint))
			out, snapshots, index = make([]registry.ProviderVersion, 0, n), make([]int64, 0, n), make(map[int64]int32, n)
		}
		if len(out) == cap(out) {
			text.flush() // the append moves the versions
		}
		index[row.Int64(vcID)] = int32(len(out))
		out = append(out, registry.ProviderVersion{})
		if err := readVersion(x.d, row, &out[len(out)-1], namespace, typ, &text, &protocols); err != nil {
			return err
		}
		out[len(out)-1].HasProvenance = !row.Null(provenanceColumn)
		snapshots = append(snapshots, row.Int64(snapshotColumn))
		return nil
	})
	text.flush()
	if err != nil {
		return nil, x.fail(err, what)
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
	}

	seen := make([]bool, len(out))
	platforms := newPlatformSet(len(out), platformChunk, &text) // its buffers, empty again, serve the platforms
	var names stringInterner                                    // os and architecture names repeat in every version
	const (
		pcVersion = iota
		pcOS
		pcArch
		pcFilename
		pcSHA256
		pcSize
		pcH1
	)
	err = x.rows.ReadRows(ctx, `SELECT v.id, `+platformColumns+`
		FROM provider_versions v LEFT JOIN provider_platforms p ON p.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2`, []any{namespace, typ}, func(row RawRow) error {
		i, ok := index[row.Int64(pcVersion)]
		if !ok {
			return nil // created after the first statement
		}
		seen[i] = true
		if !row.Null(pcOS) { // else a version without platforms
			platforms.add(i, names.internBytes(row.Text(pcOS)), names.internBytes(row.Text(pcArch)), row.Int64(pcSize),
				row.Text(pcFilename), row.Text(pcSHA256), row.Text(pcH1))
		}
		return nil
	})
	if err != nil {
		return nil, x.fail(err, what)
	}
	platforms.finish()
	kept := 0
	for i := range out {
		if !seen[i] {
			continue // deleted after the first statement
		}
		if ps := platforms.of(i); len(ps) > 0 {
			out[i].Platforms = ps
			sortPlatforms(ps) // in the order of GetProviderVersion
		}
		out[kept], snapshots[kept] = out[i], snapshots[i]
		kept++
	}
	out, snapshots = out[:kept], snapshots[:kept]
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
	}

	keys := map[int64]registry.SigningKey{}
	rows, err := x.query(ctx, `SELECT k.id, `+keyColumns+` FROM signing_key_snapshots k
		WHERE k.id IN (SELECT signing_key_snapshot FROM provider_versions WHERE namespace = $1 AND type = $2)`, namespace, typ)
	if err != nil {
		return nil, x.fail(err, what)
	}
	var id int64
	var k registry.SigningKey
	err = each(rows, append([]any{&id}, keyTargets(&k)...), func() { keys[id] = k })
	if err != nil {
		return nil, x.fail(err, what)
	}
	for i := range out {
		out[i].SigningKey = keys[snapshots[i]]
	}
	return out, nil
}

// platformSet collects the platforms of a list of versions (add), then
// hands each version its own (finish, of). The platforms are kept in
// chunks that never move, each with the position of its version in the
// list (owners, in chunks alike). While each version's platforms come one
// after the other (as the plans read them: a version, then its
// platforms), they are one run of a chunk, and the version's platforms
// are that run; otherwise (contiguous false) finish places them in one
// array. Either way each version's slice is capped at its length (an
// append to it copies).
type platformSet struct {
	chunk      int // platforms per chunk but the first
	firstChunk int // platforms of the first chunk: a small list needs no more
	chunks     [][]registry.Platform
	owners     [][]int32 // the version of each platform, -1 for a moved one
	counts     []int32   // the number of platforms of each version
	first      []place   // where each version's platforms start
	all        []registry.Platform
	last       int32 // the version of the last platform added
	contiguous bool
	text       *rowText
}

// place is where a version's platforms start: chunk c at offset off, or
// (after finish, when not contiguous) offset off of all.
type place struct{ c, off int32 }

// newPlatformSet returns the set for the platforms of versions versions,
// kept in chunks of chunk platforms, the first one smaller for a few
// versions (platformsPerVersionHint each), their texts made strings
// through text (flushed by finish).
func newPlatformSet(versions, chunk int, text *rowText) *platformSet {
	return &platformSet{chunk: chunk, text: text, firstChunk: min(chunk, max(versions*platformsPerVersionHint, 1)),
		counts: make([]int32, versions), first: make([]place, versions), last: -1, contiguous: true}
}

// platformsPerVersionHint sizes the first chunk of a platformSet: most
// providers build for a few platforms.
const platformsPerVersionHint = 8

// add adds a platform of version i; its texts are copied.
func (s *platformSet) add(i int32, os, arch string, size int64, filename, sha256, h1 []byte) {
	run := s.counts[i] > 0 && s.last == i // the platform continues i's run
	if s.counts[i] > 0 && !run {
		s.contiguous = false
	}
	if len(s.chunks) == 0 || len(s.chunks[len(s.chunks)-1]) == cap(s.chunks[len(s.chunks)-1]) {
		size := s.chunk
		if len(s.chunks) == 0 {
			size = s.firstChunk
		}
		s.chunks = append(s.chunks, make([]registry.Platform, 0, size))
		s.owners = append(s.owners, make([]int32, 0, size))
		c := len(s.chunks) - 1
		if n := int(s.counts[i]); run && s.contiguous && n < s.chunk/2 {
			// Move the run to the new chunk, its texts assigned first.
			s.text.flush()
			from := len(s.chunks[c-1]) - n
			s.chunks[c] = append(s.chunks[c], s.chunks[c-1][from:]...)
			s.owners[c] = append(s.owners[c], s.owners[c-1][from:]...)
			for j := range s.owners[c-1][from:] {
				s.owners[c-1][from+j] = -1
			}
			s.first[i] = place{int32(c), 0}
		} else if run {
			s.contiguous = false
		}
	}
	c := len(s.chunks) - 1
	if s.counts[i] == 0 {
		s.first[i] = place{int32(c), int32(len(s.chunks[c]))}
	}
	s.chunks[c] = append(s.chunks[c], registry.Platform{OS: os, Arch: arch, Size: size})
	s.owners[c] = append(s.owners[c], i)
	// The chunks never move: their texts are made strings a batch of
	// platforms at a time.
	p := &s.chunks[c][len(s.chunks[c])-1]
	s.text.add(&p.Filename, filename)
	s.text.add(&p.SHA256, sha256)
	s.text.add(&p.H1, h1)
	s.counts[i]++
	s.last = i
}

// finish ends the adding.
func (s *platformSet) finish() {
	s.text.flush()
	if s.contiguous {
		return
	}
	next := int32(0)
	pos := make([]int32, len(s.counts))
	for i, n := range s.counts {
		s.first[i], pos[i], next = place{-1, next}, next, next+n
	}
	s.all = make([]registry.Platform, next)
	for c, chunk := range s.chunks {
		for j, p := range chunk {
			if i := s.owners[c][j]; i >= 0 {
				s.all[pos[i]] = p
				pos[i]++
			}
		}
	}
	s.chunks, s.owners = nil, nil
}

// of returns the platforms of version i, after finish.
func (s *platformSet) of(i int) []registry.Platform {
	n := int(s.counts[i])
	if n == 0 {
		return nil
	}
	off := int(s.first[i].off)
	if !s.contiguous {
		return s.all[off : off+n : off+n]
	}
	return s.chunks[s.first[i].c][off : off+n : off+n]
}

// maxListHint bounds the capacity ListProviderVersions takes from the
// version count of the providers row, a hint it does not trust further.
const maxListHint = 1 << 20

// textBatch is how many bytes of texts ListProviderVersions makes one
// string of at most (the largest size class of Go's allocator): a version
// or platform kept after the list is dropped keeps its batch in memory.
const textBatch = 32 << 10

// platformChunk is how many platforms one chunk of ListProviderVersions
// holds (about 100 KiB).
const platformChunk = 1024

// ListProviders returns the providers of a namespace ordered by type, in
// one statement: a namespace without providers yields one row of NULLs.
func (x *Index) ListProviders(ctx context.Context, namespace string) ([]registry.Provider, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT p.type, p.version_count, p.latest_version, p.updated_at
		FROM namespaces n LEFT JOIN providers p ON p.namespace = n.name
		WHERE n.name = $1 ORDER BY p.type`, namespace)
	found := false
	ps, err := collect(rows, err, func(s scanner) (registry.Provider, error) {
		found = true
		p := registry.Provider{Namespace: namespace}
		var typ, latest sql.NullString
		var count sql.NullInt64
		err := s.Scan(&typ, &count, &latest, at(&p.UpdatedAt))
		p.Type, p.VersionCount, p.LatestVersion = typ.String, int(count.Int64), latest.String
		return p, err
	})
	if err != nil {
		return nil, x.fail(err, "listing the providers of namespace "+namespace)
	}
	if !found {
		return nil, notFoundNamespace(namespace)
	}
	var out []registry.Provider
	for _, p := range ps {
		if p.Type != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

// checkDocs checks the digest and size of a documentation archive.
func checkDocs(digest string, size int64) error {
	if err := registry.CheckDigest(digest); err != nil {
		return registry.Wrap(registry.Invalid, err, "documentation archive")
	}
	if size < 1 {
		return registry.Errorf(registry.Invalid, "documentation archive %s: its size must be at least 1 byte, not %d", digest, size)
	}
	return nil
}

// SetProviderDocs records the documentation archive of a version once:
// the update only fills an empty digest, and a version that kept another
// one is a Conflict. Concurrent calls serialize on the version's row, so
// exactly one of several calls, with the same digest or different ones,
// changes it and reports created.
func (x *Index) SetProviderDocs(ctx context.Context, namespace, typ, version, digest string, size int64) (bool, error) {
	if err := checkDocs(digest, size); err != nil {
		return false, err
	}
	store.EffectsFrom(ctx).Bound(store.DocsDigest(digest))
	what := fmt.Sprintf("recording the documentation of provider %s/%s version %s", namespace, typ, version)
	// Reported on the change feed: every replica's pages show the
	// documentation at once.
	change := store.Change{Kind: store.ChangeProvider, Namespace: namespace, Name: typ}
	var created bool
	err := x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		created = false // a retried transaction starts over
		if err := x.guardBlobs(ctx, t, digest); err != nil {
			return err
		}
		res, err := t.exec(ctx, `UPDATE provider_versions SET docs_digest = $1, docs_size = $2
			WHERE namespace = $3 AND type = $4 AND version = $5 AND docs_digest = ''`, digest, size, namespace, typ, version)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			created = err == nil
			return err
		}
		var have string
		err = t.row(ctx, `SELECT docs_digest FROM provider_versions WHERE namespace = $1 AND type = $2 AND version = $3`,
			namespace, typ, version).Scan(&have)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, version)
		case err != nil:
			return err
		case have != digest:
			return registry.Errorf(registry.Conflict, "provider %s/%s version %s has other documentation already (archive %s); a version and its documentation are immutable: publish a new version to change it",
				namespace, typ, version, have)
		}
		return errUnchanged // a repeat: no audit entry, no event
	})
	return created && err == nil, err
}
