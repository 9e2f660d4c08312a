package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	version "github.com/hashicorp/go-version"
	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// CreateProviderVersion stores v with its platforms in one transaction.
// NotFound without the namespace; Conflict if the version exists. The
// provider's summary row is locked first, so concurrent creates of one
// provider run one after the other and exactly one of two creates of the
// same version succeeds.
func (x *Index) CreateProviderVersion(ctx context.Context, v registry.ProviderVersion) error {
	in, err := encodeVersion(v)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("storing provider %s/%s version %s", v.Namespace, v.Type, v.Version)
	note, err := notification(store.Change{Kind: store.ChangeProvider, Namespace: v.Namespace, Name: v.Type})
	if err != nil {
		return err
	}
	return x.write(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		// The first version of a provider creates its row (the foreign key
		// checks the namespace); every create then locks it.
		_, err := tx.Exec(ctx, `INSERT INTO providers (namespace, type, version_count, latest_version, updated_at)
			VALUES ($1, $2, 0, '', $3) ON CONFLICT (namespace, type) DO NOTHING`, v.Namespace, v.Type, in.published)
		if pgCode(err) == "23503" {
			return notFoundNamespace(v.Namespace)
		}
		if err != nil {
			return err
		}
		var count int
		var latest string
		var updated time.Time
		if err := tx.QueryRow(ctx, `SELECT version_count, latest_version, updated_at FROM providers
			WHERE namespace = $1 AND type = $2 FOR UPDATE`, v.Namespace, v.Type).Scan(&count, &latest, &updated); err != nil {
			return err
		}

		// A version with the same precedence (equal but for build
		// metadata) is taken too: the clients could not tell the two apart.
		// The lock above makes this check and the insert one step.
		core := registry.VersionPrecedence(v.Version)
		var existing string
		err = tx.QueryRow(ctx, `SELECT version FROM provider_versions WHERE namespace = $1 AND type = $2
			AND (version = $3 OR substr(version, 1, $4) = $5) LIMIT 1`,
			v.Namespace, v.Type, core, len(core)+1, core+"+").Scan(&existing)
		switch {
		case err == nil:
			return registry.PrecedenceConflict(fmt.Sprintf("provider %s/%s", v.Namespace, v.Type), v.Version, existing)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}

		k := v.SigningKey
		var keyID int64
		err = tx.QueryRow(ctx, `INSERT INTO signing_key_snapshots
			(digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (digest) DO NOTHING RETURNING id`,
			in.keyDigest, v.Namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor, in.keyCreate, in.keyExpiry).Scan(&keyID)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT id FROM signing_key_snapshots WHERE digest = $1`, in.keyDigest).Scan(&keyID)
		}
		if err != nil {
			return err
		}

		var id int64
		err = tx.QueryRow(ctx, `INSERT INTO provider_versions
			(namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			v.Namespace, v.Type, v.Version, nonNil(v.Protocols), v.SHASumsDigest, v.SHASumsSignatureDigest, keyID, in.published).Scan(&id)
		if pgCode(err) == "23505" {
			return registry.Errorf(registry.Conflict, "provider %s/%s version %s exists already; published versions are immutable",
				v.Namespace, v.Type, v.Version)
		}
		if err != nil {
			return err
		}
		if len(v.Platforms) > 0 {
			n := len(v.Platforms)
			oss, archs, names, sums, sizes := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
			for i, p := range v.Platforms {
				oss[i], archs[i], names[i], sums[i], sizes[i] = p.OS, p.Arch, p.Filename, p.SHA256, p.Size
			}
			if _, err := tx.Exec(ctx, `INSERT INTO provider_platforms (version_id, os, arch, filename, sha256, size)
				SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])`,
				id, oss, archs, names, sums, sizes); err != nil {
				return err
			}
		}

		if cur, err := version.NewSemver(latest); err != nil || in.semver.GreaterThan(cur) {
			latest = v.Version
		}
		if count == 0 || in.published.After(updated) {
			updated = in.published
		}
		if _, err := tx.Exec(ctx, `UPDATE providers SET version_count = $1, latest_version = $2, updated_at = $3
			WHERE namespace = $4 AND type = $5`, count+1, latest, updated, v.Namespace, v.Type); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changeChannel, note)
		return err
	})
}

// encodedVersion holds the columns of a version that need checking or
// encoding.
type encodedVersion struct {
	semver    *version.Version
	published time.Time
	keyDigest string
	keyCreate time.Time
	keyExpiry *time.Time
}

// encodeVersion checks and encodes what CreateProviderVersion stores.
func encodeVersion(v registry.ProviderVersion) (encodedVersion, error) {
	var in encodedVersion
	var err error
	if in.semver, err = registry.ParseVersion(v.Version); err != nil {
		return in, err
	}
	seen := make(map[[2]string]bool, len(v.Platforms))
	for _, p := range v.Platforms {
		if seen[[2]string{p.OS, p.Arch}] {
			return in, registry.Errorf(registry.Invalid, "provider %s/%s version %s lists platform %s_%s twice",
				v.Namespace, v.Type, v.Version, p.OS, p.Arch)
		}
		seen[[2]string{p.OS, p.Arch}] = true
	}
	if in.published, err = checkTime(v.PublishedAt, "publication time"); err != nil {
		return in, err
	}
	k := v.SigningKey
	if in.keyCreate, err = checkTime(k.CreatedAt, "key creation time"); err != nil {
		return in, err
	}
	if in.keyExpiry, err = optTime(k.ExpiresAt, "key expiry"); err != nil {
		return in, err
	}
	// The snapshot's identity: every column, each length-prefixed.
	h := sha256.New()
	for _, s := range []string{v.Namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(in.keyCreate.UnixMicro())))
	if in.keyExpiry != nil {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(in.keyExpiry.UnixMicro())))
	}
	in.keyDigest = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

// versionColumns are the columns scanVersion receives, in its order: a
// version, its platforms as parallel arrays ordered by os and arch, and
// its signing key snapshot's id.
const versionColumns = `v.version, v.protocols, v.shasums_digest, v.shasums_signature_digest, v.published_at,
	p.oss, p.archs, p.filenames, p.sha256s, p.sizes, v.signing_key_snapshot`

// platformsLateral aggregates the platforms of version v into parallel
// arrays (one aggregate pass, so element i of each belongs to one row).
// The input comes sorted from the primary key's index: sorting inside
// each array_agg instead costs twenty times more.
const platformsLateral = `CROSS JOIN LATERAL (SELECT
		array_agg(os) AS oss, array_agg(arch) AS archs, array_agg(filename) AS filenames,
		array_agg(sha256) AS sha256s, array_agg(size) AS sizes
	FROM (SELECT os, arch, filename, sha256, size FROM provider_platforms WHERE version_id = v.id ORDER BY os, arch) pp) p`

// keyColumns are the columns scanKey receives, in its order.
const keyColumns = `k.key_namespace, k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at`

// GetProviderVersion returns one version with its platforms, or NotFound,
// in one statement.
func (x *Index) GetProviderVersion(ctx context.Context, namespace, typ, ver string) (registry.ProviderVersion, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	what := fmt.Sprintf("reading provider %s/%s version %s", namespace, typ, ver)
	var vr versionRow
	var kr keyRow
	err := x.pool.QueryRow(ctx, `SELECT `+versionColumns+`, `+keyColumns+`
		FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot `+platformsLateral+`
		WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3`, namespace, typ, ver).
		Scan(append(vr.targets(), kr.targets()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.ProviderVersion{}, registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, ver)
	}
	if err != nil {
		return registry.ProviderVersion{}, x.fail(err, what)
	}
	v, err := vr.decode(namespace, typ)
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	v.SigningKey = kr.decode()
	return v, nil
}

// ListProviderVersions returns every version of a provider with its
// platforms, or NotFound if it has none. Versions and their signing keys
// are read in one round trip of two statements, each key once. They need
// not share a snapshot: a key snapshot row is immutable and outlives
// every version that refers to it.
func (x *Index) ListProviderVersions(ctx context.Context, namespace, typ string) ([]registry.ProviderVersion, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	what := fmt.Sprintf("listing the versions of provider %s/%s", namespace, typ)
	b := &pgx.Batch{}
	b.Queue(`SELECT `+versionColumns+` FROM provider_versions v `+platformsLateral+`
		WHERE v.namespace = $1 AND v.type = $2`, namespace, typ)
	b.Queue(`SELECT k.id, `+keyColumns+` FROM signing_key_snapshots k
		WHERE k.id IN (SELECT signing_key_snapshot FROM provider_versions WHERE namespace = $1 AND type = $2)`, namespace, typ)
	res := x.pool.SendBatch(ctx, b)
	defer res.Close()

	var out []registry.ProviderVersion
	keyOf := map[int64][]int{} // snapshot id -> positions in out
	rows, err := res.Query()
	if err != nil {
		return nil, x.fail(err, what)
	}
	for rows.Next() {
		var vr versionRow
		if err := rows.Scan(vr.targets()...); err != nil {
			rows.Close()
			return nil, x.fail(err, what)
		}
		v, err := vr.decode(namespace, typ)
		if err != nil {
			rows.Close()
			return nil, err
		}
		keyOf[vr.snapshot] = append(keyOf[vr.snapshot], len(out))
		out = append(out, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, what)
	}

	rows, err = res.Query()
	if err != nil {
		return nil, x.fail(err, what)
	}
	for rows.Next() {
		var id int64
		var kr keyRow
		if err := rows.Scan(append([]any{&id}, kr.targets()...)...); err != nil {
			rows.Close()
			return nil, x.fail(err, what)
		}
		k := kr.decode()
		for _, i := range keyOf[id] {
			out[i].SigningKey = k
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, what)
	}
	if err := res.Close(); err != nil {
		return nil, x.fail(err, what)
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
	}
	return out, nil
}

// ListProviders returns the providers of a namespace ordered by type, in
// one statement: a namespace without providers yields one row of NULLs.
func (x *Index) ListProviders(ctx context.Context, namespace string) ([]registry.Provider, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT p.type, p.version_count, p.latest_version, p.updated_at
		FROM namespaces n LEFT JOIN providers p ON p.namespace = n.name
		WHERE n.name = $1 ORDER BY p.type`, namespace)
	if err != nil {
		return nil, x.fail(err, "listing the providers of namespace "+namespace)
	}
	defer rows.Close()
	found := false
	var out []registry.Provider
	for rows.Next() {
		found = true
		var typ, latest *string
		var count *int
		var updated *time.Time
		if err := rows.Scan(&typ, &count, &latest, &updated); err != nil {
			return nil, x.fail(err, "listing the providers of namespace "+namespace)
		}
		if typ == nil {
			continue
		}
		out = append(out, registry.Provider{
			Namespace: namespace, Type: *typ, VersionCount: *count, LatestVersion: *latest, UpdatedAt: fromOptTime(updated),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing the providers of namespace "+namespace)
	}
	if !found {
		return nil, notFoundNamespace(namespace)
	}
	return out, nil
}

// versionRow receives the versionColumns of one row.
type versionRow struct {
	v                       registry.ProviderVersion
	oss, archs, names, sums []string
	sizes                   []int64
	snapshot                int64
}

func (r *versionRow) targets() []any {
	return []any{&r.v.Version, &r.v.Protocols, &r.v.SHASumsDigest, &r.v.SHASumsSignatureDigest, &r.v.PublishedAt,
		&r.oss, &r.archs, &r.names, &r.sums, &r.sizes, &r.snapshot}
}

// decode returns the version of the row, with the platforms assembled.
func (r *versionRow) decode(namespace, typ string) (registry.ProviderVersion, error) {
	v := r.v
	v.Namespace, v.Type = namespace, typ
	v.PublishedAt = v.PublishedAt.UTC()
	n := len(r.oss)
	if len(r.archs) != n || len(r.names) != n || len(r.sums) != n || len(r.sizes) != n {
		return v, registry.Errorf(registry.Internal, "reading the platforms of version %s: mismatched columns", v.Version)
	}
	if n > 0 {
		v.Platforms = make([]registry.Platform, n)
		for i := range n {
			v.Platforms[i] = registry.Platform{OS: r.oss[i], Arch: r.archs[i], Filename: r.names[i], SHA256: r.sums[i], Size: r.sizes[i]}
		}
	}
	return v, nil
}

// keyRow receives the keyColumns of one row.
type keyRow struct {
	k       registry.SigningKey
	expires *time.Time
}

func (r *keyRow) targets() []any {
	return []any{&r.k.Namespace, &r.k.KeyID, &r.k.Fingerprint, &r.k.ASCIIArmor, &r.k.CreatedAt, &r.expires}
}

func (r *keyRow) decode() registry.SigningKey {
	k := r.k
	k.CreatedAt, k.ExpiresAt = k.CreatedAt.UTC(), fromOptTime(r.expires)
	return k
}
