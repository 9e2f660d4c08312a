package sqlite

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
)

// CreateProviderVersion stores v with its platforms in one transaction.
// NotFound without the namespace; Conflict if the version exists.
func (x *Index) CreateProviderVersion(ctx context.Context, v registry.ProviderVersion) error {
	what := fmt.Sprintf("storing provider %s/%s version %s", v.Namespace, v.Type, v.Version)
	in, err := encodeVersion(v)
	if err != nil {
		return err
	}
	return x.write(ctx, what, func(tx *sql.Tx) error {
		if err := namespaceExists(ctx, tx, v.Namespace); err != nil {
			return err
		}
		return createVersion(ctx, tx, v, in)
	})
}

// encodedVersion holds the columns of a version that need encoding.
type encodedVersion struct {
	semver    *version.Version
	protocols string
	published int64
	keyDigest string
	keyCreate int64
	keyExpiry sql.NullInt64
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
	protocols, err := json.Marshal(nonNil(v.Protocols))
	if err != nil {
		return in, registry.Wrap(registry.Internal, err, "encoding protocols")
	}
	in.protocols = string(protocols)
	if in.published, err = micros(v.PublishedAt, "publication time"); err != nil {
		return in, err
	}
	k := v.SigningKey
	if in.keyCreate, err = micros(k.CreatedAt, "key creation time"); err != nil {
		return in, err
	}
	if in.keyExpiry, err = optMicros(k.ExpiresAt, "key expiry"); err != nil {
		return in, err
	}
	// The snapshot's identity: every column, each length-prefixed.
	h := sha256.New()
	for _, s := range []string{v.Namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(in.keyCreate)))
	if in.keyExpiry.Valid {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(in.keyExpiry.Int64)))
	}
	in.keyDigest = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

// createVersion writes a checked, encoded version in tx, whose namespace
// exists.
func createVersion(ctx context.Context, tx *sql.Tx, v registry.ProviderVersion, in encodedVersion) error {
	// A version with the same precedence (equal but for build metadata)
	// is taken too: the clients could not tell the two apart.
	core := registry.VersionPrecedence(v.Version)
	var existing string
	err := tx.QueryRowContext(ctx, `SELECT version FROM provider_versions WHERE namespace = ? AND type = ?
		AND (version = ? OR substr(version, 1, ?) = ?) LIMIT 1`,
		v.Namespace, v.Type, core, len(core)+1, core+"+").Scan(&existing)
	switch {
	case err == nil:
		return registry.PrecedenceConflict(fmt.Sprintf("provider %s/%s", v.Namespace, v.Type), v.Version, existing)
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if err := updateProvider(ctx, tx, v, in); err != nil {
		return err
	}

	k := v.SigningKey
	var keyID int64
	if _, err := tx.ExecContext(ctx, `INSERT INTO signing_key_snapshots
		(digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING`,
		in.keyDigest, v.Namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor, in.keyCreate, in.keyExpiry); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT id FROM signing_key_snapshots WHERE digest = ?`, in.keyDigest).Scan(&keyID); err != nil {
		return err
	}

	res, err := tx.ExecContext(ctx, `INSERT INTO provider_versions
		(namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		v.Namespace, v.Type, v.Version, in.protocols, v.SHASumsDigest, v.SHASumsSignatureDigest, keyID, in.published)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if len(v.Platforms) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO provider_platforms (version_id, os, arch, filename, sha256, size) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, p := range v.Platforms {
		if _, err := stmt.ExecContext(ctx, id, p.OS, p.Arch, p.Filename, p.SHA256, p.Size); err != nil {
			return err
		}
	}
	return nil
}

// updateProvider counts the new version into its provider's summary row.
func updateProvider(ctx context.Context, tx *sql.Tx, v registry.ProviderVersion, in encodedVersion) error {
	var count int
	var latest string
	var updated int64
	err := tx.QueryRowContext(ctx, `SELECT version_count, latest_version, updated_at FROM providers WHERE namespace = ? AND type = ?`,
		v.Namespace, v.Type).Scan(&count, &latest, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `INSERT INTO providers (namespace, type, version_count, latest_version, updated_at) VALUES (?, ?, 1, ?, ?)`,
			v.Namespace, v.Type, v.Version, in.published)
		return err
	}
	if err != nil {
		return err
	}
	if cur, err := version.NewSemver(latest); err != nil || in.semver.GreaterThan(cur) {
		latest = v.Version
	}
	_, err = tx.ExecContext(ctx, `UPDATE providers SET version_count = ?, latest_version = ?, updated_at = ? WHERE namespace = ? AND type = ?`,
		count+1, latest, max(updated, in.published), v.Namespace, v.Type)
	return err
}

// versionColumns are the columns versionRow receives, in its order.
const versionColumns = `v.id, v.version, v.protocols, v.shasums_digest, v.shasums_signature_digest, v.published_at`

// keyColumns are the columns keyRow receives, in its order.
const keyColumns = `k.key_namespace, k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at`

// GetProviderVersion returns one version with its platforms, or NotFound.
func (x *Index) GetProviderVersion(ctx context.Context, namespace, typ, ver string) (registry.ProviderVersion, error) {
	var v registry.ProviderVersion
	err := x.read(ctx, fmt.Sprintf("reading provider %s/%s version %s", namespace, typ, ver), func(tx *sql.Tx) error {
		var vr versionRow
		var kr keyRow
		err := tx.QueryRowContext(ctx, `SELECT `+versionColumns+`, `+keyColumns+`
			FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot
			WHERE v.namespace = ? AND v.type = ? AND v.version = ?`, namespace, typ, ver).
			Scan(append(vr.targets(), kr.targets()...)...)
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, ver)
		}
		if err != nil {
			return err
		}
		if v, err = vr.decode(namespace, typ); err != nil {
			return err
		}
		v.SigningKey = kr.decode()
		rows, err := tx.QueryContext(ctx, `SELECT os, arch, filename, sha256, size FROM provider_platforms
			WHERE version_id = ? ORDER BY os, arch`, vr.id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p registry.Platform
			if err := rows.Scan(&p.OS, &p.Arch, &p.Filename, &p.SHA256, &p.Size); err != nil {
				return err
			}
			v.Platforms = append(v.Platforms, p)
		}
		return rows.Err()
	})
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	return v, nil
}

// ListProviderVersions returns every version of a provider with its
// platforms, or NotFound if it has none. It reads versions, platforms and
// key snapshots in three queries, each signing key once.
func (x *Index) ListProviderVersions(ctx context.Context, namespace, typ string) ([]registry.ProviderVersion, error) {
	var out []registry.ProviderVersion
	err := x.read(ctx, fmt.Sprintf("listing the versions of provider %s/%s", namespace, typ), func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+versionColumns+`, v.signing_key_snapshot
			FROM provider_versions v WHERE v.namespace = ? AND v.type = ?`, namespace, typ)
		if err != nil {
			return err
		}
		defer rows.Close()
		index := map[int64]int{}   // version id -> position in out
		keyOf := map[int64][]int{} // snapshot id -> positions in out
		for rows.Next() {
			var vr versionRow
			var snapshot int64
			if err := rows.Scan(append(vr.targets(), &snapshot)...); err != nil {
				return err
			}
			v, err := vr.decode(namespace, typ)
			if err != nil {
				return err
			}
			index[vr.id] = len(out)
			keyOf[snapshot] = append(keyOf[snapshot], len(out))
			out = append(out, v)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out) == 0 {
			return registry.Errorf(registry.NotFound, "provider %s/%s has no versions", namespace, typ)
		}

		rows, err = tx.QueryContext(ctx, `SELECT p.version_id, p.os, p.arch, p.filename, p.sha256, p.size
			FROM provider_versions v JOIN provider_platforms p ON p.version_id = v.id
			WHERE v.namespace = ? AND v.type = ?`, namespace, typ)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var p registry.Platform
			if err := rows.Scan(&id, &p.OS, &p.Arch, &p.Filename, &p.SHA256, &p.Size); err != nil {
				return err
			}
			if i, ok := index[id]; ok {
				out[i].Platforms = append(out[i].Platforms, p)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}

		for i := range out { // in the order of GetProviderVersion; usually sorted already
			slices.SortFunc(out[i].Platforms, comparePlatforms)
		}

		rows, err = tx.QueryContext(ctx, `SELECT k.id, `+keyColumns+` FROM signing_key_snapshots k
			WHERE k.id IN (SELECT signing_key_snapshot FROM provider_versions WHERE namespace = ? AND type = ?)`, namespace, typ)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var kr keyRow
			if err := rows.Scan(append([]any{&id}, kr.targets()...)...); err != nil {
				return err
			}
			k := kr.decode()
			for _, i := range keyOf[id] {
				out[i].SigningKey = k
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListProviders returns the providers of a namespace ordered by type.
func (x *Index) ListProviders(ctx context.Context, namespace string) ([]registry.Provider, error) {
	var out []registry.Provider
	err := x.read(ctx, "listing the providers of namespace "+namespace, func(tx *sql.Tx) error {
		if err := namespaceExists(ctx, tx, namespace); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT type, version_count, latest_version, updated_at
			FROM providers WHERE namespace = ? ORDER BY type`, namespace)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			p := registry.Provider{Namespace: namespace}
			var updated int64
			if err := rows.Scan(&p.Type, &p.VersionCount, &p.LatestVersion, &updated); err != nil {
				return err
			}
			p.UpdatedAt = fromMicros(updated)
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func comparePlatforms(a, b registry.Platform) int {
	return cmp.Or(strings.Compare(a.OS, b.OS), strings.Compare(a.Arch, b.Arch))
}

// versionRow receives the versionColumns of one row.
type versionRow struct {
	id                            int64
	version, protocols, sums, sig string
	published                     int64
}

func (r *versionRow) targets() []any {
	return []any{&r.id, &r.version, &r.protocols, &r.sums, &r.sig, &r.published}
}

func (r *versionRow) decode(namespace, typ string) (registry.ProviderVersion, error) {
	v := registry.ProviderVersion{
		Namespace: namespace, Type: typ, Version: r.version,
		SHASumsDigest: r.sums, SHASumsSignatureDigest: r.sig, PublishedAt: fromMicros(r.published),
	}
	if err := json.Unmarshal([]byte(r.protocols), &v.Protocols); err != nil {
		return v, registry.Wrap(registry.Internal, err, "decoding the protocols of version "+r.version)
	}
	return v, nil
}

// keyRow receives the keyColumns of one row.
type keyRow struct {
	namespace, id, fingerprint, armor string
	created                           int64
	expires                           sql.NullInt64
}

func (k *keyRow) targets() []any {
	return []any{&k.namespace, &k.id, &k.fingerprint, &k.armor, &k.created, &k.expires}
}

func (k *keyRow) decode() registry.SigningKey {
	return registry.SigningKey{
		Namespace: k.namespace, KeyID: k.id, Fingerprint: k.fingerprint, ASCIIArmor: k.armor,
		CreatedAt: fromMicros(k.created), ExpiresAt: fromOptMicros(k.expires),
	}
}
