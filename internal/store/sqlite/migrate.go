package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// loadMigrations returns the embedded migrations in order.
func loadMigrations() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrationFS, "migrations")
}

// migrate applies the migrations db lacks, each in its own transaction
// together with its row in schema_migrations. It refuses a database whose
// schema is newer than this build knows.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return registry.Wrap(registry.Internal, err, "loading index migrations")
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return classify(err, "creating the schema_migrations table")
	}
	applied, err := appliedVersions(ctx, db)
	if err != nil {
		return classify(err, "reading the index schema version")
	}
	pending, err := sqlstore.Pending(ms, applied)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "checking the index schema version")
	}
	for _, m := range pending {
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

// appliedVersions returns the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, db *sql.DB) ([]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
}

// apply runs one migration unless another process applied it meanwhile.
func apply(ctx context.Context, db *sql.DB, m sqlstore.Migration) error {
	what := fmt.Sprintf("applying index migration %04d_%s", m.Version, m.Name)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err, what)
	}
	defer tx.Rollback()
	var done bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.Version).Scan(&done); err != nil {
		return classify(err, what)
	}
	if done {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return classify(err, what)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro()); err != nil {
		return classify(err, what)
	}
	return classify(tx.Commit(), what)
}

// SchemaVersion is the schema version this build of Trove brings an
// index to: the number of its newest migration.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return sqlstore.Newest(ms)
}
