package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// CreateModuleVersion stores v and counts it into its module's summary in
// one transaction. NotFound without the namespace; Conflict if the version
// exists. The summary row is created if missing and locked first, so that
// concurrent writes of the module's versions run one after the other.
func (x *Index) CreateModuleVersion(ctx context.Context, v registry.ModuleVersion) error {
	store.EffectsFrom(ctx).Bound(v)
	what := fmt.Sprintf("storing module %s/%s/%s version %s", v.Namespace, v.Name, v.System, v.Version)
	semver, err := registry.ParseVersion(v.Version)
	if err != nil {
		return err
	}
	published, err := x.time(v.PublishedAt, "publication time")
	if err != nil {
		return err
	}
	if err := checkModuleProvenance(v); err != nil {
		return err
	}
	change := store.Change{Kind: store.ChangeModule, Namespace: v.Namespace, Name: v.Name, System: v.System}
	return x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		if err := x.guardBlobs(ctx, t, v.ArchiveDigest); err != nil {
			return err
		}
		if err := x.lockModule(ctx, t, v, published); err != nil {
			return err
		}
		var count int
		var latest, description string
		var updated time.Time
		if err := t.row(ctx, `SELECT version_count, latest_version, description, updated_at FROM modules
			WHERE namespace = $1 AND name = $2 AND system = $3`, v.Namespace, v.Name, v.System).
			Scan(&count, &latest, &description, at(&updated)); err != nil {
			return err
		}
		// A version with the same precedence (equal but for build
		// metadata) is taken too: the clients could not tell the two apart.
		// The lock above makes this check and the insert one step.
		existing, _, err := x.samePrecedenceModule(ctx, t, v)
		switch {
		case err == nil:
			return registry.PrecedenceConflict(fmt.Sprintf("module %s/%s/%s", v.Namespace, v.Name, v.System), v.Version, existing)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := x.insertModuleVersion(ctx, t, v, published); err != nil {
			return err
		}
		if cur, err := version.NewSemver(latest); err != nil || registry.NewerLatestModule(semver, cur) {
			latest, description = v.Version, v.Description
		}
		if count == 0 || v.PublishedAt.After(updated) {
			updated = v.PublishedAt
		}
		_, err = t.exec(ctx, `UPDATE modules SET version_count = $1, latest_version = $2, description = $3, updated_at = $4
			WHERE namespace = $5 AND name = $6 AND system = $7`,
			count+1, latest, description, x.d.Time(updated), v.Namespace, v.Name, v.System)
		return err
	})
}

// checkModuleProvenance refuses provenance keys without the provenance
// they verify (Invalid).
func checkModuleProvenance(v registry.ModuleVersion) error {
	if len(v.Provenance) == 0 && len(v.ProvenanceKeys) > 0 {
		return registry.Errorf(registry.Invalid, "module %s/%s/%s version %s: provenance keys come with the provenance they verify", v.Namespace, v.Name, v.System, v.Version)
	}
	return nil
}

// lockModule creates v's module summary row if it is missing and locks
// it (PostgreSQL; SQLite's write transactions run one at a time), so
// that the writes of a module's versions run one after the other.
// NotFound without the namespace. CreateModuleVersion and ImportBundle
// share it.
func (x *Index) lockModule(ctx context.Context, t tx, v registry.ModuleVersion, published any) error {
	_, err := t.exec(ctx, `INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
		VALUES ($1, $2, $3, 0, '', '', $4) ON CONFLICT (namespace, name, system) DO NOTHING`, v.Namespace, v.Name, v.System, published)
	if x.is(err, FailForeignKey) {
		return notFoundNamespace(v.Namespace)
	}
	if err != nil {
		return err
	}
	var one int
	return t.row(ctx, `SELECT 1 FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`+x.d.ForUpdate(),
		v.Namespace, v.Name, v.System).Scan(&one)
}

// samePrecedenceModule returns the stored version of v's module with
// v's precedence (equal but for build metadata, or v itself) and its
// archive digest; sql.ErrNoRows if there is none. It reads a range of
// the primary key (see precedenceRange). CreateModuleVersion and
// ImportBundle share it.
func (x *Index) samePrecedenceModule(ctx context.Context, t tx, v registry.ModuleVersion) (existing, archive string, err error) {
	core, below := precedenceRange(v.Version)
	err = t.row(ctx, `SELECT version, archive_digest FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3 AND version >= $4 AND version < $5
		AND (version = $4 OR substr(version, 1, $6) = $7) LIMIT 1`,
		v.Namespace, v.Name, v.System, core, below, len(core)+1, core+"+").Scan(&existing, &archive)
	return existing, archive, err
}

// insertModuleVersion inserts v's row, its provenance and the keys that
// verify that provenance (an imported version's), if any. Conflict if the
// version exists. The caller holds the module's lock (lockModule) and
// counts the version into the module's summary. CreateModuleVersion and
// ImportBundle share it.
func (x *Index) insertModuleVersion(ctx context.Context, t tx, v registry.ModuleVersion, published any) error {
	var metadata any // NULL for nil
	if v.Metadata != nil {
		metadata = v.Metadata
	}
	_, err := t.exec(ctx, `INSERT INTO module_versions
		(namespace, name, system, version, archive_digest, archive_format, archive_size, metadata, description, origin, published_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		v.Namespace, v.Name, v.System, v.Version, v.ArchiveDigest, v.ArchiveFormat, v.ArchiveSize,
		metadata, v.Description, v.Origin, published)
	if x.is(err, FailUnique) {
		return registry.Errorf(registry.Conflict, "module %s/%s/%s version %s exists already; published versions are immutable",
			v.Namespace, v.Name, v.System, v.Version)
	}
	if err != nil {
		return err
	}
	if len(v.Provenance) == 0 {
		return nil
	}
	if _, err := t.exec(ctx, `INSERT INTO module_provenance (namespace, name, system, version, envelope) VALUES ($1, $2, $3, $4, $5)`,
		v.Namespace, v.Name, v.System, v.Version, string(v.Provenance)); err != nil {
		return err
	}
	if len(v.ProvenanceKeys) == 0 {
		return nil
	}
	data, err := provenanceKeysJSON(v.ProvenanceKeys)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO module_provenance_keys (namespace, name, system, version, keys) VALUES ($1, $2, $3, $4, $5)`,
		v.Namespace, v.Name, v.System, v.Version, data)
	return err
}

// ModuleProvenance returns the provenance envelope stored with a module
// version. NotFound if there is no such version or it has none.
func (x *Index) ModuleProvenance(ctx context.Context, namespace, name, system, ver string) ([]byte, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var envelope string
	var has bool
	err := x.row(ctx, `SELECT p.envelope IS NOT NULL, COALESCE(p.envelope, '') FROM module_versions v
		LEFT JOIN module_provenance p ON p.namespace = v.namespace AND p.name = v.name AND p.system = v.system AND p.version = v.version
		WHERE v.namespace = $1 AND v.name = $2 AND v.system = $3 AND v.version = $4`, namespace, name, system, ver).Scan(&has, &envelope)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)
	}
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("reading the provenance of module %s/%s/%s version %s", namespace, name, system, ver))
	}
	if !has {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s version %s has no provenance: it was published before Trove recorded module provenance, "+
			"its namespace had no Trove-managed signing key then, or Trove made it itself (git source, mirror, bundle import)", namespace, name, system, ver)
	}
	return []byte(envelope), nil
}

// moduleVersionColumns are the columns moduleVersionTargets receives, in
// its order.
var moduleVersionColumns = `version, archive_digest, archive_format, archive_size, description, origin, published_at, ` +
	lifecycleColumns("")

// moduleVersionTargets returns the scan destinations of the
// moduleVersionColumns; call done after the scan to set v's lifecycle.
func moduleVersionTargets(v *registry.ModuleVersion) (targets []any, done func()) {
	var lc lifecycleRow
	return append([]any{&v.Version, &v.ArchiveDigest, &v.ArchiveFormat, &v.ArchiveSize, &v.Description, &v.Origin, at(&v.PublishedAt)},
			lc.targets()...), func() {
			v.Deprecation, v.Revocation = lc.states()
		}
}

// GetModuleVersion returns one version with its metadata, or NotFound.
func (x *Index) GetModuleVersion(ctx context.Context, namespace, name, system, ver string) (registry.ModuleVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	v := registry.ModuleVersion{Namespace: namespace, Name: name, System: system}
	targets, done := moduleVersionTargets(&v)
	err := x.row(ctx, `SELECT `+moduleVersionColumns+`, metadata FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4`, namespace, name, system, ver).
		Scan(append(targets, &v.Metadata)...)
	done()
	if errors.Is(err, sql.ErrNoRows) {
		return registry.ModuleVersion{}, registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)
	}
	if err != nil {
		return registry.ModuleVersion{}, x.fail(err, fmt.Sprintf("reading module %s/%s/%s version %s", namespace, name, system, ver))
	}
	return v, nil
}

// ListModuleVersions returns every version of a module without metadata,
// or NotFound if it has none.
func (x *Index) ListModuleVersions(ctx context.Context, namespace, name, system string) ([]registry.ModuleVersion, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+moduleVersionColumns+` FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
	out, err := collect(rows, err, func(s scanner) (registry.ModuleVersion, error) {
		v := registry.ModuleVersion{Namespace: namespace, Name: name, System: system}
		targets, done := moduleVersionTargets(&v)
		err := s.Scan(targets...)
		done()
		return v, err
	})
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("listing the versions of module %s/%s/%s", namespace, name, system))
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s has no versions", namespace, name, system)
	}
	return out, nil
}

// moduleFilterWhere returns the WHERE clause of ListModules; its
// parameters are namespace, system and query, each "" for any.
func (x *Index) moduleFilterWhere() string {
	return ` WHERE ($1 = '' OR namespace = $1) AND ($2 = '' OR system = $2)
		AND ($3 = '' OR ` + x.d.Contains("namespace", "$3") + ` OR ` + x.d.Contains("name", "$3") +
		` OR ` + x.d.Contains("description", "$3") + `)`
}

// ListModules returns one page of the modules matching f and the number
// of all matches, in one statement (count(*) OVER () counts the matches
// before LIMIT; an empty page is counted separately).
func (x *Index) ListModules(ctx context.Context, f registry.ModuleFilter) ([]registry.Module, int, error) {
	limit, offset := registry.ModulePage(f)
	ctx, cancel := x.op(ctx)
	defer cancel()
	total := 0
	rows, err := x.query(ctx, `SELECT namespace, name, system, version_count, latest_version, description, updated_at,
			count(*) OVER ()
		FROM modules`+x.moduleFilterWhere()+` ORDER BY namespace, name, system LIMIT $4 OFFSET $5`,
		f.Namespace, f.System, f.Query, limit, offset)
	out, err := collect(rows, err, func(s scanner) (registry.Module, error) {
		var m registry.Module
		err := s.Scan(&m.Namespace, &m.Name, &m.System, &m.VersionCount, &m.LatestVersion, &m.Description, at(&m.UpdatedAt), &total)
		return m, err
	})
	if err != nil {
		return nil, 0, x.fail(err, "listing modules")
	}
	if len(out) == 0 && offset > 0 { // past the end: the window saw no row to count
		if err := x.row(ctx, `SELECT count(*) FROM modules`+x.moduleFilterWhere(),
			f.Namespace, f.System, f.Query).Scan(&total); err != nil {
			return nil, 0, x.fail(err, "counting modules")
		}
	}
	return out, total, nil
}

// DeleteModuleVersion removes one version and recomputes its module's
// summary (or removes it with the last version) in one transaction.
func (x *Index) DeleteModuleVersion(ctx context.Context, namespace, name, system, ver string) error {
	what := fmt.Sprintf("deleting module %s/%s/%s version %s", namespace, name, system, ver)
	missing := registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)
	change := store.Change{Kind: store.ChangeModule, Namespace: namespace, Name: name, System: system}
	return x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		// Lock the summary row first, as creates do, so that the recount
		// below sees every committed version.
		var one int
		err := t.row(ctx, `SELECT 1 FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`+x.d.ForUpdate(),
			namespace, name, system).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return missing
		}
		if err != nil {
			return err
		}
		const which = `namespace = $1 AND name = $2 AND system = $3 AND version = $4`
		digests, err := moduleBlobs(ctx, t, which, namespace, name, system, ver)
		if err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM module_versions WHERE `+which, namespace, name, system, ver)
		if err := affected(res, err, missing); err != nil {
			return err
		}
		if err := x.releaseBlobs(ctx, t, digests); err != nil {
			return err
		}
		return x.recountModule(ctx, t, namespace, name, system)
	})
}

// recountModule rebuilds a module's summary row from its versions, and
// removes the row when no version is left. The latest version is the
// newest one not revoked (the newest of all when every one is).
func (x *Index) recountModule(ctx context.Context, t tx, namespace, name, system string) error {
	type row struct {
		version, description string
		published, revoked   time.Time
	}
	rows, err := t.query(ctx, `SELECT version, description, published_at, revoked_at FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
	vs, err := collect(rows, err, func(s scanner) (row, error) {
		var r row
		return r, s.Scan(&r.version, &r.description, at(&r.published), at(&r.revoked))
	})
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		_, err = t.exec(ctx, `DELETE FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
		return err
	}
	var updated time.Time
	var latest, latestAny *version.Version
	var latestName, description, anyName, anyDescription string
	for _, r := range vs {
		if r.published.After(updated) {
			updated = r.published
		}
		sv, err := version.NewSemver(r.version)
		if err != nil {
			continue
		}
		if latestAny == nil || registry.NewerLatestModule(sv, latestAny) {
			latestAny, anyName, anyDescription = sv, r.version, r.description
		}
		if r.revoked.IsZero() && (latest == nil || registry.NewerLatestModule(sv, latest)) {
			latest, latestName, description = sv, r.version, r.description
		}
	}
	if latest == nil {
		latestName, description = anyName, anyDescription
	}
	_, err = t.exec(ctx, `UPDATE modules SET version_count = $1, latest_version = $2, description = $3, updated_at = $4
		WHERE namespace = $5 AND name = $6 AND system = $7`, len(vs), latestName, description, x.d.Time(updated), namespace, name, system)
	return err
}
