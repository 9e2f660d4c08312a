package postgres

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the key of the advisory lock held while migrating
// (the first 8 bytes of "trove.migrate" read as a number); every Trove
// replica uses the same one.
const migrationLock int64 = 0x74726f76652e6d69

// migrationTimeout bounds applying all migrations.
const migrationTimeout = 10 * time.Minute

// loadMigrations returns the embedded migrations in order.
func loadMigrations() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrationFS, "migrations")
}

// SchemaVersion is the schema version this build of Trove needs: the
// number of its newest migration.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return sqlstore.Newest(ms)
}

// CurrentSchemaVersion returns the schema version of the database: the
// newest migration applied to it, 0 for an empty database.
func (x *Index) CurrentSchemaVersion(ctx context.Context) (int, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	v, err := currentVersion(ctx, x.pool)
	return v, x.fail(err, "reading the index schema version")
}

// currentVersion reads the newest applied migration, 0 if there is no
// schema_migrations table yet.
func currentVersion(ctx context.Context, q querier) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// checkSchema fails unless the database's schema is the one this build
// needs: its newest migration, and none of this build's missing (a gap
// filled by a later migration).
func (x *Index) checkSchema(ctx context.Context) error {
	current, err := x.CurrentSchemaVersion(ctx)
	if err != nil {
		return err
	}
	if err := compareSchema(current, SchemaVersion()); err != nil {
		return err
	}
	ms, err := loadMigrations()
	if err != nil {
		return registry.Wrap(registry.Internal, err, "loading index migrations")
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	applied, err := appliedVersions(ctx, x.pool)
	if err != nil {
		return x.fail(err, "reading the index schema version")
	}
	if missing := sqlstore.Pending(ms, applied); len(missing) > 0 {
		return registry.Errorf(registry.Invalid,
			"the index lacks migration %04d_%s: run `trove migrate` (or start with --migrate-on-start)", missing[0].Version, missing[0].Name)
	}
	return nil
}

// appliedVersions returns the versions schema_migrations records (none
// without the table).
func appliedVersions(ctx context.Context, q querier) (map[int]bool, error) {
	applied := map[int]bool{}
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return applied, err
	}
	rows, err := q.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

func compareSchema(current, known int) error {
	switch {
	case current > known:
		return registry.Errorf(registry.Invalid,
			"the index has schema version %d but this Trove knows versions up to %d: run a newer Trove", current, known)
	case current < known:
		return registry.Errorf(registry.Invalid,
			"the index has schema version %d but this Trove needs version %d: run `trove migrate` (or start with --migrate-on-start)", current, known)
	}
	return nil
}

// migrate applies the migrations the database lacks, each in its own
// transaction together with its row in schema_migrations, while holding
// the migration advisory lock on one connection, so that concurrent
// callers (replicas starting together) apply each migration once. It
// refuses a database whose schema is newer than this build knows.
func (x *Index) migrate(ctx context.Context) (err error) {
	ms, err := loadMigrations()
	if err != nil {
		return registry.Wrap(registry.Internal, err, "loading index migrations")
	}
	ctx, cancel := context.WithTimeout(ctx, migrationTimeout)
	defer cancel()
	conn, err := x.pool.Acquire(ctx)
	if err != nil {
		return x.fail(err, "connecting to migrate the index")
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return x.fail(err, "waiting for the index migration lock")
	}
	defer func() {
		// A lock that cannot be released dies with its session.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock); uerr != nil {
			conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL
	)`); err != nil {
		return x.fail(err, "creating the schema_migrations table")
	}
	current, err := currentVersion(ctx, conn)
	if err != nil {
		return x.fail(err, "reading the index schema version")
	}
	if current > sqlstore.Newest(ms) {
		return compareSchema(current, sqlstore.Newest(ms))
	}
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return x.fail(err, "reading the index schema version")
	}
	// Every migration not recorded yet, a gap filled later included.
	for _, m := range sqlstore.Pending(ms, applied) {
		what := fmt.Sprintf("applying index migration %04d_%s", m.Version, m.Name)
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().UTC())
			return err
		})
		if err != nil {
			return x.fail(err, what)
		}
		x.log.Info("applied index migration", "version", m.Version, "name", m.Name)
	}
	return nil
}
