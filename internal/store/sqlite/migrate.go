package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"time"

	"trove.dev/trove/internal/registry"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one schema step: migrations/<version>_<name>.sql.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations returns the embedded migrations in order. Their versions
// must run 1, 2, 3, ... without gaps.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", e.Name())
		}
		body, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Atoi(m[1])
		ms = append(ms, migration{version: v, name: m[2], sql: string(body)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: want version %d (versions run 1, 2, 3, ...)", m.version, m.name, i+1)
		}
	}
	return ms, nil
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
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return classify(err, "reading the index schema version")
	}
	if current > len(ms) {
		return registry.Errorf(registry.Internal,
			"the index has schema version %d but this Trove knows versions up to %d: run a newer Trove", current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration unless another process applied it meanwhile.
func apply(ctx context.Context, db *sql.DB, m migration) error {
	what := fmt.Sprintf("applying index migration %04d_%s", m.version, m.name)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err, what)
	}
	defer tx.Rollback()
	var done bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?)`, m.version).Scan(&done); err != nil {
		return classify(err, what)
	}
	if done {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return classify(err, what)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMicro()); err != nil {
		return classify(err, what)
	}
	return classify(tx.Commit(), what)
}
