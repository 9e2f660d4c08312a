package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/sqlite"
)

func migrateCommand() *command {
	return &command{
		name: "migrate", args: "[FLAGS]",
		summary: "Apply the index schema migrations, print the schema version and exit (reads the index flags of serve).",
		examples: []string{
			"TROVE_INDEX_BACKEND=postgres TROVE_POSTGRES_DSN='postgres://trove:PASSWORD@db:5432/trove?sslmode=verify-full' trove migrate",
			"trove migrate --data-dir /var/lib/trove",
		},
		raw: migrate,
		rawFlags: func() *flag.FlagSet {
			var cfg config.Config
			return cfg.FlagSet("migrate")
		},
		envOf: config.EnvVar,
	}
}

// migrate loads the configuration of trove serve and brings the schema of
// its index up to date.
func migrate(ctx context.Context, e env, args []string) int {
	c, _ := lookup(commands(), []string{"migrate"})
	cfg, err := config.Load(args, e.getenv)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if err != nil {
		return report(e, c, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	msg, err := migrateIndex(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "trove: %s\n", err)
		return exitError
	}
	fmt.Fprintln(e.stdout, msg)
	return exitOK
}

// migrateIndex applies the missing migrations of the index cfg selects
// (opening an index applies them, under a lock for PostgreSQL) and
// describes the result.
func migrateIndex(ctx context.Context, cfg config.Config) (string, error) {
	switch cfg.Index.Backend {
	case config.IndexPostgres:
		idx, err := postgres.Open(ctx, cfg.Index.Postgres.DSN, postgres.WithMaxConns(2), postgres.WithMigrations(true))
		if err != nil {
			return "", fmt.Errorf("migrating the PostgreSQL index: %w", err)
		}
		defer idx.Close()
		v, err := idx.CurrentSchemaVersion(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("PostgreSQL index schema version %d (this trove needs %d): up to date", v, postgres.SchemaVersion()), nil
	case config.IndexSQLite:
		idx, err := sqlite.Open(ctx, cfg.Index.SQLite.Path)
		if err != nil {
			return "", fmt.Errorf("migrating the SQLite index %s: %w", cfg.Index.SQLite.Path, err)
		}
		defer idx.Close()
		var x any = idx
		if sv, ok := x.(interface {
			CurrentSchemaVersion(context.Context) (int, error)
		}); ok {
			v, err := sv.CurrentSchemaVersion(ctx)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("SQLite index %s schema version %d: up to date", cfg.Index.SQLite.Path, v), nil
		}
		return fmt.Sprintf("SQLite index %s: schema up to date", cfg.Index.SQLite.Path), nil
	default:
		return "", fmt.Errorf("unknown index backend %q", cfg.Index.Backend)
	}
}
