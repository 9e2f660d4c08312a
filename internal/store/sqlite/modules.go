package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
)

// defaultModuleLimit is the page size of ListModules when none is given.
const defaultModuleLimit = 100

// CreateModuleVersion stores v and counts it into its module's summary in
// one transaction. NotFound without the namespace; Conflict if the version
// exists.
func (x *Index) CreateModuleVersion(ctx context.Context, v registry.ModuleVersion) error {
	what := fmt.Sprintf("storing module %s/%s/%s version %s", v.Namespace, v.Name, v.System, v.Version)
	semver, err := registry.ParseVersion(v.Version)
	if err != nil {
		return err
	}
	published, err := micros(v.PublishedAt, "publication time")
	if err != nil {
		return err
	}
	var metadata any // NULL for nil
	if v.Metadata != nil {
		metadata = v.Metadata
	}
	return x.write(ctx, what, func(tx *sql.Tx) error {
		if err := namespaceExists(ctx, tx, v.Namespace); err != nil {
			return err
		}
		// A version with the same precedence (equal but for build
		// metadata) is taken too: the clients could not tell the two apart.
		core := registry.VersionPrecedence(v.Version)
		var existing string
		err := tx.QueryRowContext(ctx, `SELECT version FROM module_versions
			WHERE namespace = ? AND name = ? AND system = ? AND (version = ? OR substr(version, 1, ?) = ?) LIMIT 1`,
			v.Namespace, v.Name, v.System, core, len(core)+1, core+"+").Scan(&existing)
		switch {
		case err == nil:
			return registry.PrecedenceConflict(fmt.Sprintf("module %s/%s/%s", v.Namespace, v.Name, v.System), v.Version, existing)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := addToModule(ctx, tx, v, semver, published); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO module_versions
			(namespace, name, system, version, archive_digest, archive_format, archive_size, metadata, description, origin, published_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.Namespace, v.Name, v.System, v.Version, v.ArchiveDigest, v.ArchiveFormat, v.ArchiveSize,
			metadata, v.Description, v.Origin, published)
		return err
	})
}

// addToModule counts a new version into its module's summary row.
func addToModule(ctx context.Context, tx *sql.Tx, v registry.ModuleVersion, semver *version.Version, published int64) error {
	var count int
	var latest, description string
	var updated int64
	err := tx.QueryRowContext(ctx, `SELECT version_count, latest_version, description, updated_at FROM modules
		WHERE namespace = ? AND name = ? AND system = ?`, v.Namespace, v.Name, v.System).Scan(&count, &latest, &description, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.ExecContext(ctx, `INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
			VALUES (?, ?, ?, 1, ?, ?, ?)`, v.Namespace, v.Name, v.System, v.Version, v.Description, published)
		return err
	}
	if err != nil {
		return err
	}
	if cur, err := version.NewSemver(latest); err != nil || newerLatest(semver, cur) {
		latest, description = v.Version, v.Description
	}
	_, err = tx.ExecContext(ctx, `UPDATE modules SET version_count = ?, latest_version = ?, description = ?, updated_at = ?
		WHERE namespace = ? AND name = ? AND system = ?`,
		count+1, latest, description, max(updated, published), v.Namespace, v.Name, v.System)
	return err
}

// newerLatest reports whether v should replace cur as a module's latest
// version, as modules.v1 means "latest": a release beats every
// pre-release, and otherwise the higher version wins. A module's summary
// names a pre-release only when the module has no release.
func newerLatest(v, cur *version.Version) bool {
	if release := v.Prerelease() == ""; release != (cur.Prerelease() == "") {
		return release
	}
	return v.GreaterThan(cur)
}

// moduleVersionColumns are the columns moduleVersionRow receives, in its order.
const moduleVersionColumns = `version, archive_digest, archive_format, archive_size, description, origin, published_at`

// moduleVersionRow receives the moduleVersionColumns of one row.
type moduleVersionRow struct {
	registry.ModuleVersion
	published int64
}

func (r *moduleVersionRow) targets() []any {
	return []any{&r.Version, &r.ArchiveDigest, &r.ArchiveFormat, &r.ArchiveSize, &r.Description, &r.Origin, &r.published}
}

func (r *moduleVersionRow) decode(namespace, name, system string) registry.ModuleVersion {
	v := r.ModuleVersion
	v.Namespace, v.Name, v.System = namespace, name, system
	v.PublishedAt = fromMicros(r.published)
	return v
}

// GetModuleVersion returns one version with its metadata, or NotFound.
func (x *Index) GetModuleVersion(ctx context.Context, namespace, name, system, ver string) (registry.ModuleVersion, error) {
	var r moduleVersionRow
	var metadata []byte
	err := x.r.QueryRowContext(ctx, `SELECT `+moduleVersionColumns+`, metadata FROM module_versions
		WHERE namespace = ? AND name = ? AND system = ? AND version = ?`, namespace, name, system, ver).
		Scan(append(r.targets(), &metadata)...)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.ModuleVersion{}, registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)
	}
	if err != nil {
		return registry.ModuleVersion{}, x.fail(err, fmt.Sprintf("reading module %s/%s/%s version %s", namespace, name, system, ver))
	}
	v := r.decode(namespace, name, system)
	v.Metadata = metadata
	return v, nil
}

// ListModuleVersions returns every version of a module without metadata,
// or NotFound if it has none.
func (x *Index) ListModuleVersions(ctx context.Context, namespace, name, system string) ([]registry.ModuleVersion, error) {
	what := fmt.Sprintf("listing the versions of module %s/%s/%s", namespace, name, system)
	rows, err := x.r.QueryContext(ctx, `SELECT `+moduleVersionColumns+` FROM module_versions
		WHERE namespace = ? AND name = ? AND system = ?`, namespace, name, system)
	if err != nil {
		return nil, x.fail(err, what)
	}
	defer rows.Close()
	var out []registry.ModuleVersion
	for rows.Next() {
		var r moduleVersionRow
		if err := rows.Scan(r.targets()...); err != nil {
			return nil, x.fail(err, what)
		}
		out = append(out, r.decode(namespace, name, system))
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, what)
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s has no versions", namespace, name, system)
	}
	return out, nil
}

// moduleFilterWhere is the WHERE clause of ListModules; its parameters
// are, in order: namespace, system, query (each "" for any).
const moduleFilterWhere = ` WHERE (?1 = '' OR namespace = ?1) AND (?2 = '' OR system = ?2)
	AND (?3 = '' OR instr(lower(namespace), lower(?3)) > 0 OR instr(lower(name), lower(?3)) > 0
		OR instr(lower(description), lower(?3)) > 0)`

// ListModules returns one page of the modules matching f and the number
// of all matches, read from one snapshot.
func (x *Index) ListModules(ctx context.Context, f registry.ModuleFilter) ([]registry.Module, int, error) {
	limit, offset := f.Limit, max(f.Offset, 0)
	if limit <= 0 {
		limit = defaultModuleLimit
	}
	var out []registry.Module
	var total int
	err := x.read(ctx, "listing modules", func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM modules`+moduleFilterWhere,
			f.Namespace, f.System, f.Query).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT namespace, name, system, version_count, latest_version, description, updated_at
			FROM modules`+moduleFilterWhere+` ORDER BY namespace, name, system LIMIT ?4 OFFSET ?5`,
			f.Namespace, f.System, f.Query, limit, offset)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m registry.Module
			var updated int64
			if err := rows.Scan(&m.Namespace, &m.Name, &m.System, &m.VersionCount, &m.LatestVersion, &m.Description, &updated); err != nil {
				return err
			}
			m.UpdatedAt = fromMicros(updated)
			out = append(out, m)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// DeleteModuleVersion removes one version and recomputes its module's
// summary (or removes it with the last version) in one transaction.
func (x *Index) DeleteModuleVersion(ctx context.Context, namespace, name, system, ver string) error {
	what := fmt.Sprintf("deleting module %s/%s/%s version %s", namespace, name, system, ver)
	return x.write(ctx, what, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM module_versions WHERE namespace = ? AND name = ? AND system = ? AND version = ?`,
			namespace, name, system, ver)
		if err != nil {
			return err
		}
		if err := rowsAffected(res, registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)); err != nil {
			return err
		}
		return recountModule(ctx, tx, namespace, name, system)
	})
}

// recountModule rebuilds a module's summary row from its versions, and
// removes the row when no version is left.
func recountModule(ctx context.Context, tx *sql.Tx, namespace, name, system string) error {
	rows, err := tx.QueryContext(ctx, `SELECT version, description, published_at FROM module_versions
		WHERE namespace = ? AND name = ? AND system = ?`, namespace, name, system)
	if err != nil {
		return err
	}
	defer rows.Close()
	var count int
	var latest *version.Version
	var latestName, description string
	var updated int64
	for rows.Next() {
		var v, d string
		var published int64
		if err := rows.Scan(&v, &d, &published); err != nil {
			return err
		}
		count++
		updated = max(updated, published)
		if sv, err := version.NewSemver(v); err == nil && (latest == nil || newerLatest(sv, latest)) {
			latest, latestName, description = sv, v, d
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	if count == 0 {
		_, err = tx.ExecContext(ctx, `DELETE FROM modules WHERE namespace = ? AND name = ? AND system = ?`, namespace, name, system)
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE modules SET version_count = ?, latest_version = ?, description = ?, updated_at = ?
		WHERE namespace = ? AND name = ? AND system = ?`, count, latestName, description, updated, namespace, name, system)
	return err
}
