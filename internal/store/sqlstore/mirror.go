package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// SetPackageHash records h1 for the published packages of digest sha256
// that have none yet, in one statement.
func (x *Index) SetPackageHash(ctx context.Context, sha256, h1 string) error {
	return x.write(ctx, "recording the hash of package "+sha256, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `UPDATE provider_platforms SET h1 = $1 WHERE sha256 = $2 AND h1 = ''`, h1, sha256)
		return err
	})
}

// PackagesWithoutHash returns up to limit distinct digests of published
// packages without a hash (none for a limit below 1), in digest order:
// the migration's partial index holds exactly those rows.
func (x *Index) PackagesWithoutHash(ctx context.Context, limit int) ([]string, error) {
	if limit < 1 {
		return nil, nil
	}
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT DISTINCT sha256 FROM provider_platforms WHERE h1 = '' ORDER BY sha256 LIMIT $1`, limit)
	out, err := collect(rows, err, func(s scanner) (string, error) {
		var d string
		return d, s.Scan(&d)
	})
	return out, x.fail(err, "listing the packages without a hash")
}

// errMirroredExists rolls back a PutMirroredVersion that found its version
// stored already.
var errMirroredExists = registry.Errorf(registry.Conflict, "the mirrored version is stored already")

// PutMirroredVersion stores v unless it is stored already, then returns
// the stored version. A version stored already is found before anything
// is written; one stored concurrently (PostgreSQL) makes the insert do
// nothing, and the transaction is rolled back. Either way, as on any
// Conflict (a unique violation), the stored version is read back.
//
// v's Provenance, with its ProvenanceKeys, is stored with it (as
// ImportBundle stores them; `trove store copy` copies them so): a version
// stored already without provenance gains it, one stored with the same
// envelope keeps it, and one stored with another is a Conflict that is
// returned, not read back.
func (x *Index) PutMirroredVersion(ctx context.Context, v registry.MirroredVersion) (registry.MirroredVersion, error) {
	what := fmt.Sprintf("storing mirrored provider %s/%s/%s version %s", v.Host, v.Namespace, v.Type, v.Version)
	if len(v.Platforms) == 0 {
		return registry.MirroredVersion{}, registry.Errorf(registry.Invalid, "%s: it has no platforms", what)
	}
	if _, err := registry.ParseVersion(v.Version); err != nil {
		return registry.MirroredVersion{}, err
	}
	if err := registry.CheckPlatforms(v.ProviderVersion); err != nil {
		return registry.MirroredVersion{}, err
	}
	if (len(v.Provenance) == 0) != (len(v.ProvenanceKeys) == 0) {
		return registry.MirroredVersion{}, registry.Errorf(registry.Invalid, "%s: provenance comes with the keys that verify it", what)
	}
	var provErr error // a provenance Conflict, returned as it is
	err := x.writeChange(ctx, what, &store.Change{Kind: store.ChangeMirrored, Host: v.Host, Namespace: v.Namespace, Name: v.Type}, func(ctx context.Context, t tx) error {
		stored, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM mirrored_versions
			WHERE host = $1 AND namespace = $2 AND type = $3 AND version = $4)`, v.Host, v.Namespace, v.Type, v.Version)
		if err != nil {
			return err
		}
		if stored && len(v.Provenance) == 0 {
			return errMirroredExists
		}
		if stored {
			// Provenance names the archives of one release only.
			var sums string
			if err := t.row(ctx, `SELECT shasums_digest FROM mirrored_versions
				WHERE host = $1 AND namespace = $2 AND type = $3 AND version = $4`, v.Host, v.Namespace, v.Type, v.Version).Scan(&sums); err != nil {
				return err
			}
			if sums != v.SHASumsDigest {
				provErr = registry.Errorf(registry.Conflict, "%s: it is stored already with another SHA256SUMS (%s, not %s); its provenance is not added to another release", what, sums, v.SHASumsDigest)
				return provErr
			}
		} else {
			// Its packages are named before they are held: only these two
			// must be stored (a package is Put before SetMirroredPackage, while
			// this row keeps it from the collector).
			if err := x.guardBlobs(ctx, t, v.SHASumsDigest, v.SHASumsSignatureDigest); err != nil {
				return err
			}
			if err := x.insertMirrored(ctx, t, notHeld(v)); err != nil { // Conflict when stored concurrently
				return err
			}
		}
		provErr = x.importMirroredProvenance(ctx, t, v)
		return provErr
	})
	if provErr != nil || (err != nil && !registry.IsKind(err, registry.Conflict)) {
		return registry.MirroredVersion{}, err
	}
	stored, gerr := x.GetMirroredVersion(ctx, v.Host, v.Namespace, v.Type, v.Version)
	if gerr != nil && err != nil {
		return registry.MirroredVersion{}, err
	}
	return stored, gerr
}

// notHeld returns v with no package held: PutMirroredVersion stores
// platforms without their sizes and hashes, which SetMirroredPackage
// records once a package is fetched.
func notHeld(v registry.MirroredVersion) registry.MirroredVersion {
	v.Platforms = slices.Clone(v.Platforms)
	for i := range v.Platforms {
		v.Platforms[i].Size, v.Platforms[i].H1 = 0, ""
	}
	return v
}

// mirroredColumns are the columns readMirrored receives, in its order:
// a row per platform of a version. Whether a version has provenance is
// a lookup of mirrored_provenance's primary key, not a read of the
// envelope.
const mirroredColumns = `v.id, v.host, v.namespace, v.type, v.version, v.protocols,
	v.shasums_digest, v.shasums_signature_digest, v.fetched_at,
	k.key_namespace, k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at,
	p.os, p.arch, p.filename, p.sha256, p.size, p.h1, pv.version_id IS NOT NULL
	FROM mirrored_versions v JOIN mirrored_signing_keys k ON k.id = v.signing_key
	JOIN mirrored_platforms p ON p.version_id = v.id
	LEFT JOIN mirrored_provenance pv ON pv.version_id = v.id`

// readMirrored returns the mirrored versions a query of mirroredColumns
// (with its WHERE clause in rest) yields, with their platforms, ordered
// by host, namespace, type and version.
func (x *Index) readMirrored(ctx context.Context, rest string, args ...any) ([]registry.MirroredVersion, error) {
	var out []registry.MirroredVersion
	index := map[int64]int{} // version id -> position in out
	rows, err := x.query(ctx, `SELECT `+mirroredColumns+` `+rest+
		` ORDER BY v.host, v.namespace, v.type, v.version, p.os, p.arch`, args...)
	_, err = collect(rows, err, func(s scanner) (struct{}, error) {
		var id int64
		var v registry.MirroredVersion
		var p registry.Platform
		targets := []any{&id, &v.Host, &v.Namespace, &v.Type, &v.Version, x.d.ScanStrings(&v.Protocols),
			&v.SHASumsDigest, &v.SHASumsSignatureDigest, at(&v.PublishedAt)}
		targets = append(targets, keyTargets(&v.SigningKey)...)
		targets = append(targets, &p.OS, &p.Arch, &p.Filename, &p.SHA256, &p.Size, &p.H1, &v.HasProvenance)
		if err := s.Scan(targets...); err != nil {
			return struct{}{}, err
		}
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, v)
		}
		out[i].Platforms = append(out[i].Platforms, p)
		return struct{}{}, nil
	})
	return out, err
}

// GetMirroredVersion returns one mirrored version with its platforms, or
// NotFound, in one statement.
func (x *Index) GetMirroredVersion(ctx context.Context, host, namespace, typ, version string) (registry.MirroredVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	vs, err := x.readMirrored(ctx, `WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3 AND v.version = $4`,
		host, namespace, typ, version)
	if err != nil {
		return registry.MirroredVersion{}, x.fail(err, fmt.Sprintf("reading mirrored provider %s/%s/%s version %s", host, namespace, typ, version))
	}
	if len(vs) == 0 {
		return registry.MirroredVersion{}, registry.Errorf(registry.NotFound, "the mirror has no version %s of provider %s/%s/%s", version, host, namespace, typ)
	}
	return vs[0], nil
}

// ListMirroredVersions returns every mirrored version of a provider with
// its platforms, or NotFound if there is none, in one statement.
func (x *Index) ListMirroredVersions(ctx context.Context, host, namespace, typ string) ([]registry.MirroredVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	vs, err := x.readMirrored(ctx, `WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3`, host, namespace, typ)
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("listing the mirrored versions of provider %s/%s/%s", host, namespace, typ))
	}
	if len(vs) == 0 {
		return nil, registry.Errorf(registry.NotFound, "the mirror has no versions of provider %s/%s/%s", host, namespace, typ)
	}
	return vs, nil
}

// ListAllMirroredVersions returns every mirrored version with its
// platforms, ordered by host, namespace, type and version.
func (x *Index) ListAllMirroredVersions(ctx context.Context) ([]registry.MirroredVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	vs, err := x.readMirrored(ctx, ``)
	return vs, x.fail(err, "listing the mirrored versions")
}

// SetMirroredPackage records the size and h1 of a platform's package. The
// update applies only to a platform not held yet, so that of concurrent
// calls one sets the values and the others compare theirs with them.
func (x *Index) SetMirroredPackage(ctx context.Context, host, namespace, typ, version, os, arch string, size int64, h1 string) error {
	what := fmt.Sprintf("recording the package %s_%s of mirrored provider %s/%s/%s version %s", os, arch, host, namespace, typ, version)
	if size < 1 || h1 == "" {
		return registry.Errorf(registry.Invalid, "%s: a held package has a size and an h1 hash", what)
	}
	return x.writeChange(ctx, what, &store.Change{Kind: store.ChangeMirrored, Host: host, Namespace: namespace, Name: typ}, func(ctx context.Context, t tx) error {
		const platform = `(SELECT id FROM mirrored_versions WHERE host = $1 AND namespace = $2 AND type = $3 AND version = $4)
			AND os = $5 AND arch = $6`
		res, err := t.exec(ctx, `UPDATE mirrored_platforms SET size = $7, h1 = $8
			WHERE size = 0 AND h1 = '' AND version_id = `+platform, host, namespace, typ, version, os, arch, size, h1)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			if err != nil {
				return err
			}
			// A package is its bytes: every other mirrored platform with
			// the same digest (a release published to two registries) is
			// held too.
			_, err = t.exec(ctx, `UPDATE mirrored_platforms SET size = $1, h1 = $2
				WHERE size = 0 AND h1 = '' AND sha256 = (SELECT p.sha256
					FROM mirrored_platforms p JOIN mirrored_versions v ON v.id = p.version_id
					WHERE v.host = $3 AND v.namespace = $4 AND v.type = $5 AND v.version = $6 AND p.os = $7 AND p.arch = $8)`,
				size, h1, host, namespace, typ, version, os, arch)
			return err
		}
		var haveSize int64
		var haveH1 string
		err = t.row(ctx, `SELECT size, h1 FROM mirrored_platforms WHERE version_id = `+platform,
			host, namespace, typ, version, os, arch).Scan(&haveSize, &haveH1)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return registry.Errorf(registry.NotFound, "the mirror has no platform %s_%s of provider %s/%s/%s version %s", os, arch, host, namespace, typ, version)
		case err != nil:
			return err
		case haveSize != size || haveH1 != h1:
			return registry.Errorf(registry.Conflict, "%s: it is recorded already with size %d and hash %s; a package never changes", what, haveSize, haveH1)
		}
		return nil
	})
}

// FindMirroredPackage returns the first mirrored version (by host,
// namespace, type, version, os and arch) with a package of digest sha256,
// and that platform: the first is found through the index on sha256, then
// read whole.
func (x *Index) FindMirroredPackage(ctx context.Context, sha256 string) (registry.MirroredVersion, registry.Platform, error) {
	what := "finding the mirrored package " + sha256
	rctx, cancel := x.op(ctx)
	var host, namespace, typ, version, os, arch string
	err := x.row(rctx, `SELECT v.host, v.namespace, v.type, v.version, p.os, p.arch
		FROM mirrored_platforms p JOIN mirrored_versions v ON v.id = p.version_id
		WHERE p.sha256 = $1 ORDER BY v.host, v.namespace, v.type, v.version, p.os, p.arch LIMIT 1`, sha256).
		Scan(&host, &namespace, &typ, &version, &os, &arch)
	cancel()
	if errors.Is(err, sql.ErrNoRows) {
		return registry.MirroredVersion{}, registry.Platform{}, registry.Errorf(registry.NotFound, "the mirror has no package %s", sha256)
	}
	if err != nil {
		return registry.MirroredVersion{}, registry.Platform{}, x.fail(err, what)
	}
	// Mirrored versions are never deleted (an operator may still delete
	// rows by hand): the version is read whole, and found again.
	v, err := x.GetMirroredVersion(ctx, host, namespace, typ, version)
	if err != nil {
		return registry.MirroredVersion{}, registry.Platform{}, err
	}
	p, ok := v.Platform(os, arch)
	if !ok {
		return registry.MirroredVersion{}, registry.Platform{}, registry.Errorf(registry.NotFound, "the mirror has no package %s", sha256)
	}
	return v, p, nil
}

// upstreamColumns are the columns scanUpstream receives, in its order.
const upstreamColumns = `host, service_url, ca_certificates, allow, description, created_at, updated_at`

// scanUpstream reads one row of upstreamColumns.
func scanUpstream(s scanner) (registry.MirrorUpstream, error) {
	var u registry.MirrorUpstream
	var allow string
	if err := s.Scan(&u.Host, &u.ServiceURL, &u.CACertificates, &allow, &u.Description, at(&u.CreatedAt), at(&u.UpdatedAt)); err != nil {
		return u, err
	}
	if err := json.Unmarshal([]byte(allow), &u.Allow); err != nil {
		return u, registry.Wrap(registry.Internal, err, "mirror upstream "+u.Host+" has unreadable allow rules")
	}
	if len(u.Allow) == 0 {
		u.Allow = nil
	}
	return u, nil
}

// PutMirrorUpstream creates u or replaces every field of the stored one
// but CreatedAt, in one statement.
func (x *Index) PutMirrorUpstream(ctx context.Context, u registry.MirrorUpstream) error {
	what := "storing mirror upstream " + u.Host
	if u.Host == "" {
		return registry.Errorf(registry.Invalid, "a mirror upstream needs a host")
	}
	created, err := x.time(u.CreatedAt, "creation time")
	if err != nil {
		return err
	}
	updated, err := x.time(u.UpdatedAt, "update time")
	if err != nil {
		return err
	}
	allow, err := json.Marshal(nonNil(u.Allow))
	if err != nil {
		return registry.Wrap(registry.Internal, err, what)
	}
	return x.write(ctx, what, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO mirror_upstreams (`+upstreamColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (host) DO UPDATE SET service_url = excluded.service_url, ca_certificates = excluded.ca_certificates,
			allow = excluded.allow, description = excluded.description, updated_at = excluded.updated_at`,
			u.Host, u.ServiceURL, u.CACertificates, string(allow), u.Description, created, updated)
		return err
	})
}

// GetMirrorUpstream returns one upstream, or NotFound.
func (x *Index) GetMirrorUpstream(ctx context.Context, host string) (registry.MirrorUpstream, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	u, err := scanUpstream(x.row(ctx, `SELECT `+upstreamColumns+` FROM mirror_upstreams WHERE host = $1`, host))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.MirrorUpstream{}, registry.Errorf(registry.NotFound, "mirror upstream %s not found", host)
	}
	if err != nil {
		return registry.MirrorUpstream{}, x.fail(err, "reading mirror upstream "+host)
	}
	return u, nil
}

// ListMirrorUpstreams returns every upstream ordered by host.
func (x *Index) ListMirrorUpstreams(ctx context.Context) ([]registry.MirrorUpstream, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+upstreamColumns+` FROM mirror_upstreams ORDER BY host`)
	out, err := collect(rows, err, scanUpstream)
	return out, x.fail(err, "listing the mirror upstreams")
}

// DeleteMirrorUpstream removes an upstream, or fails with NotFound.
func (x *Index) DeleteMirrorUpstream(ctx context.Context, host string) error {
	return x.write(ctx, "deleting mirror upstream "+host, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM mirror_upstreams WHERE host = $1`, host)
		return affected(res, err, registry.Errorf(registry.NotFound, "mirror upstream %s not found", host))
	})
}
