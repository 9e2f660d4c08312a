package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	version "github.com/hashicorp/go-version"
	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// defaultModuleLimit is the page size of ListModules when none is given.
const defaultModuleLimit = 100

// lockModule creates the summary row of a module if it is missing (the
// foreign key checks the namespace) and locks it, so that concurrent
// writes of the module's versions run one after the other.
func lockModule(ctx context.Context, tx pgx.Tx, namespace, name, system string, published time.Time) (count int, latest, description string, updated time.Time, err error) {
	_, err = tx.Exec(ctx, `INSERT INTO modules (namespace, name, system, version_count, latest_version, description, updated_at)
		VALUES ($1, $2, $3, 0, '', '', $4) ON CONFLICT (namespace, name, system) DO NOTHING`, namespace, name, system, published)
	if pgCode(err) == "23503" {
		return 0, "", "", time.Time{}, notFoundNamespace(namespace)
	}
	if err != nil {
		return 0, "", "", time.Time{}, err
	}
	err = tx.QueryRow(ctx, `SELECT version_count, latest_version, description, updated_at FROM modules
		WHERE namespace = $1 AND name = $2 AND system = $3 FOR UPDATE`, namespace, name, system).
		Scan(&count, &latest, &description, &updated)
	return count, latest, description, updated, err
}

// CreateModuleVersion stores v and counts it into its module's summary in
// one transaction. NotFound without the namespace; Conflict if the version
// exists.
func (x *Index) CreateModuleVersion(ctx context.Context, v registry.ModuleVersion) error {
	what := fmt.Sprintf("storing module %s/%s/%s version %s", v.Namespace, v.Name, v.System, v.Version)
	semver, err := registry.ParseVersion(v.Version)
	if err != nil {
		return err
	}
	published, err := checkTime(v.PublishedAt, "publication time")
	if err != nil {
		return err
	}
	note, err := notification(store.Change{Kind: store.ChangeModule, Namespace: v.Namespace, Name: v.Name, System: v.System})
	if err != nil {
		return err
	}
	var metadata []byte // NULL for nil
	if v.Metadata != nil {
		metadata = v.Metadata
	}
	return x.write(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		count, latest, description, updated, err := lockModule(ctx, tx, v.Namespace, v.Name, v.System, published)
		if err != nil {
			return err
		}
		// A version with the same precedence (equal but for build
		// metadata) is taken too: the clients could not tell the two apart.
		// The lock above makes this check and the insert one step.
		core := registry.VersionPrecedence(v.Version)
		var existing string
		err = tx.QueryRow(ctx, `SELECT version FROM module_versions
			WHERE namespace = $1 AND name = $2 AND system = $3 AND (version = $4 OR substr(version, 1, $5) = $6) LIMIT 1`,
			v.Namespace, v.Name, v.System, core, len(core)+1, core+"+").Scan(&existing)
		switch {
		case err == nil:
			return registry.PrecedenceConflict(fmt.Sprintf("module %s/%s/%s", v.Namespace, v.Name, v.System), v.Version, existing)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO module_versions
			(namespace, name, system, version, archive_digest, archive_format, archive_size, metadata, description, origin, published_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			v.Namespace, v.Name, v.System, v.Version, v.ArchiveDigest, v.ArchiveFormat, v.ArchiveSize,
			metadata, v.Description, v.Origin, published)
		if pgCode(err) == "23505" {
			return registry.Errorf(registry.Conflict, "module %s/%s/%s version %s exists already; published versions are immutable",
				v.Namespace, v.Name, v.System, v.Version)
		}
		if err != nil {
			return err
		}
		if cur, err := version.NewSemver(latest); err != nil || newerLatest(semver, cur) {
			latest, description = v.Version, v.Description
		}
		if count == 0 || published.After(updated) {
			updated = published
		}
		if _, err := tx.Exec(ctx, `UPDATE modules SET version_count = $1, latest_version = $2, description = $3, updated_at = $4
			WHERE namespace = $5 AND name = $6 AND system = $7`,
			count+1, latest, description, updated, v.Namespace, v.Name, v.System); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changeChannel, note)
		return err
	})
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
}

func (r *moduleVersionRow) targets() []any {
	return []any{&r.Version, &r.ArchiveDigest, &r.ArchiveFormat, &r.ArchiveSize, &r.Description, &r.Origin, &r.PublishedAt}
}

func (r *moduleVersionRow) decode(namespace, name, system string) registry.ModuleVersion {
	v := r.ModuleVersion
	v.Namespace, v.Name, v.System = namespace, name, system
	v.PublishedAt = v.PublishedAt.UTC()
	return v
}

// GetModuleVersion returns one version with its metadata, or NotFound.
func (x *Index) GetModuleVersion(ctx context.Context, namespace, name, system, ver string) (registry.ModuleVersion, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	var r moduleVersionRow
	var metadata []byte
	err := x.pool.QueryRow(ctx, `SELECT `+moduleVersionColumns+`, metadata FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4`, namespace, name, system, ver).
		Scan(append(r.targets(), &metadata)...)
	if errors.Is(err, pgx.ErrNoRows) {
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
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	what := fmt.Sprintf("listing the versions of module %s/%s/%s", namespace, name, system)
	rows, err := x.pool.Query(ctx, `SELECT `+moduleVersionColumns+` FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
	if err != nil {
		return nil, x.fail(err, what)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.ModuleVersion, error) {
		var r moduleVersionRow
		err := row.Scan(r.targets()...)
		return r.decode(namespace, name, system), err
	})
	if err != nil {
		return nil, x.fail(err, what)
	}
	if len(out) == 0 {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s has no versions", namespace, name, system)
	}
	return out, nil
}

// moduleFilterWhere is the WHERE clause of ListModules; its parameters
// are namespace, system and query, each "" for any. The query is matched
// with strpos, which has no wildcards, and lower() under the "C" collation
// folds only ASCII letters.
const moduleFilterWhere = ` WHERE ($1 = '' OR namespace = $1) AND ($2 = '' OR system = $2)
	AND ($3 = '' OR strpos(lower(namespace), lower($3 COLLATE "C")) > 0 OR strpos(lower(name), lower($3 COLLATE "C")) > 0
		OR strpos(lower(description COLLATE "C"), lower($3 COLLATE "C")) > 0)`

// ListModules returns one page of the modules matching f and the number
// of all matches, in one statement (count(*) OVER () counts the matches
// before LIMIT; an empty page is counted separately).
func (x *Index) ListModules(ctx context.Context, f registry.ModuleFilter) ([]registry.Module, int, error) {
	limit, offset := f.Limit, max(f.Offset, 0)
	if limit <= 0 {
		limit = defaultModuleLimit
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT namespace, name, system, version_count, latest_version, description, updated_at,
			count(*) OVER ()
		FROM modules`+moduleFilterWhere+` ORDER BY namespace, name, system LIMIT $4 OFFSET $5`,
		f.Namespace, f.System, f.Query, limit, offset)
	if err != nil {
		return nil, 0, x.fail(err, "listing modules")
	}
	total := 0
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.Module, error) {
		var m registry.Module
		err := row.Scan(&m.Namespace, &m.Name, &m.System, &m.VersionCount, &m.LatestVersion, &m.Description, &m.UpdatedAt, &total)
		m.UpdatedAt = m.UpdatedAt.UTC()
		return m, err
	})
	if err != nil {
		return nil, 0, x.fail(err, "listing modules")
	}
	if len(out) == 0 && offset > 0 { // past the end: the window saw no row to count
		if err := x.pool.QueryRow(ctx, `SELECT count(*) FROM modules`+moduleFilterWhere,
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
	note, err := notification(store.Change{Kind: store.ChangeModule, Namespace: namespace, Name: name, System: system})
	if err != nil {
		return err
	}
	missing := registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, ver)
	return x.write(ctx, what, func(ctx context.Context, tx pgx.Tx) error {
		// Lock the summary row first, as creates do, so that the recount
		// below sees every committed version.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM modules WHERE namespace = $1 AND name = $2 AND system = $3 FOR UPDATE`,
			namespace, name, system).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return missing
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM module_versions WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4`,
			namespace, name, system, ver)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return missing
		}
		if err := recountModule(ctx, tx, namespace, name, system); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, changeChannel, note)
		return err
	})
}

// recountModule rebuilds a module's summary row from its versions, and
// removes the row when no version is left.
func recountModule(ctx context.Context, tx pgx.Tx, namespace, name, system string) error {
	rows, err := tx.Query(ctx, `SELECT version, description, published_at FROM module_versions
		WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
	if err != nil {
		return err
	}
	var count int
	var latest *version.Version
	var latestName, description string
	var updated time.Time
	for rows.Next() {
		var v, d string
		var published time.Time
		if err := rows.Scan(&v, &d, &published); err != nil {
			rows.Close()
			return err
		}
		count++
		if published.After(updated) {
			updated = published
		}
		if sv, err := version.NewSemver(v); err == nil && (latest == nil || newerLatest(sv, latest)) {
			latest, latestName, description = sv, v, d
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if count == 0 {
		_, err = tx.Exec(ctx, `DELETE FROM modules WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE modules SET version_count = $1, latest_version = $2, description = $3, updated_at = $4
		WHERE namespace = $5 AND name = $6 AND system = $7`, count, latestName, description, updated, namespace, name, system)
	return err
}
