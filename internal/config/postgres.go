package config

import (
	"flag"
	"strings"

	"trove.dev/trove/internal/registry"
)

// IndexPostgres names the PostgreSQL index backend.
const IndexPostgres = "postgres"

// Postgres configures the PostgreSQL index, for several replicas sharing
// one database.
type Postgres struct {
	// DSN names the database: a postgres:// URL or libpq key=value pairs.
	// It holds the password, so it is never printed.
	DSN string
	// MaxConns is the size of each replica's connection pool; 0 means the
	// DSN's pool_max_conns, else the backend's default.
	MaxConns int
	// MigrateOnStart applies missing schema migrations at start-up (under
	// a lock, so replicas starting together do not race). Without it a
	// start with an outdated schema fails and asks for `trove migrate`.
	MigrateOnStart bool
}

// postgresFlags defines the flags of the PostgreSQL index on fs.
func (c *Config) postgresFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Index.Postgres.DSN, "postgres-dsn", "",
		"PostgreSQL `DSN` of the index with --index-backend postgres, e.g. postgres://trove:PASSWORD@db:5432/trove?sslmode=verify-full (prefer the environment variable: it holds the password)")
	fs.IntVar(&c.Index.Postgres.MaxConns, "postgres-max-conns", 0,
		"size of the PostgreSQL connection `pool` of this replica (default: pool_max_conns from the DSN, else 10)")
	fs.BoolVar(&c.Index.Postgres.MigrateOnStart, "migrate-on-start", true,
		"apply missing index schema migrations at start-up (PostgreSQL; with false, run `trove migrate` before upgrading)")
}

// validatePostgres checks the PostgreSQL settings; the DSN is parsed and
// tried when the index is opened, whose errors never repeat it.
func (p Postgres) validate() []error {
	var errs []error
	if strings.TrimSpace(p.DSN) == "" {
		errs = append(errs, registry.Errorf(registry.Invalid,
			"--index-backend postgres needs --postgres-dsn (or TROVE_POSTGRES_DSN), e.g. postgres://trove:PASSWORD@db:5432/trove?sslmode=verify-full"))
	}
	if p.MaxConns < 0 {
		errs = append(errs, registry.Errorf(registry.Invalid, "--postgres-max-conns must not be negative, got %d", p.MaxConns))
	}
	return errs
}
