package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"
	"time"

	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// localAdminActor is the audit actor of what `trove admin` does directly
// on the index, with no token and no request.
const localAdminActor = "local-admin"

// adminTokenFlags are the flags of `trove admin token` besides the index
// flags of `trove serve`.
type adminTokenFlags struct {
	description string
	expires     time.Duration
}

func (f *adminTokenFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.description, "description", "", "`text` saying what the token is for (default: who created it, where and how)")
	fs.DurationVar(&f.expires, "expires", 0, "lifetime of the token, e.g. 24h (default: never expires)")
}

func adminTokenCommand() *command {
	return &command{
		name: "admin token", args: "[--description TEXT] [--expires DURATION] [FLAGS]",
		summary: "Create a global admin token directly in the index and print it once, to recover admin access " +
			"(reads the index flags of serve; works while the server runs).",
		examples: []string{
			"trove admin token --data-dir /var/lib/trove --description 'recovery, ticket 1234' --expires 24h",
			"TROVE_INDEX_BACKEND=postgres TROVE_POSTGRES_DSN='postgres://trove:PASSWORD@db:5432/trove?sslmode=verify-full' trove admin token",
			"trove admin token --config /etc/trove/trove.env",
		},
		raw: adminToken,
		rawFlags: func() *flag.FlagSet {
			// Every flag of serve is accepted (the server's command line or
			// settings file works as is); help lists those that matter.
			var cfg config.Config
			all := cfg.FlagSet("admin token")
			fs := flag.NewFlagSet("admin token", flag.ContinueOnError)
			all.VisitAll(func(f *flag.Flag) {
				if indexFlag(f.Name) {
					fs.Var(f.Value, f.Name, f.Usage)
					fs.Lookup(f.Name).DefValue = f.DefValue
				}
			})
			(&adminTokenFlags{}).define(fs)
			return fs
		},
		envOf: func(name string) string {
			if name == "description" || name == "expires" {
				return ""
			}
			return config.EnvVar(name)
		},
	}
}

// indexFlag reports whether the serve flag called name selects or
// configures the index (or where the settings come from).
func indexFlag(name string) bool {
	switch name {
	case config.FlagConfig, "data-dir", "index-backend", "sqlite-path":
		return true
	}
	return name == "postgres-dsn" // the command uses a pool of its own size
}

// adminToken opens the index that the configuration of trove serve
// selects, creates a global admin token in it, prints the secret on
// stdout and records the creation in the audit log.
func adminToken(ctx context.Context, e env, args []string) int {
	c, _ := lookup(commands(), []string{"admin", "token"})
	var f adminTokenFlags
	cfg, err := config.LoadWith(args, e.getenv, f.define)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if err == nil && f.expires < 0 {
		err = fmt.Errorf("--expires must be positive, got %s", config.ShortDuration(f.expires))
	}
	if err != nil {
		return report(e, c, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	if err := registry.DescriptionLimit.CheckText(f.description); err != nil {
		return report(e, c, usagef("--description: %s", registry.Message(err)))
	}
	if cfg.Index.Backend == config.IndexSQLite {
		// A mistyped --data-dir would otherwise create an empty index
		// that no server reads.
		if _, err := os.Stat(cfg.Index.SQLite.Path); err != nil {
			return report(e, c, fmt.Errorf("no index at %s (%w): pass the --data-dir, --sqlite-path or --config of the server", cfg.Index.SQLite.Path, err))
		}
	}
	idx, err := openIndexForCLI(ctx, cfg)
	if err != nil {
		return report(e, c, err)
	}
	defer idx.Close()
	secret, t, err := mintAdminToken(ctx, idx, f, time.Now())
	if err != nil {
		return report(e, c, err)
	}
	fmt.Fprintln(e.stdout, secret)
	s := "global admin token " + t.ID
	if !t.ExpiresAt.IsZero() {
		s += ", expires " + when(t.ExpiresAt)
	}
	fmt.Fprintf(e.stderr, "Created %s. Its secret is shown only once and only its hash is stored: keep it now.\n"+
		"Use it with TROVE_TOKEN; list or revoke it with `trove token list` and `trove token revoke %s`.\n", s, t.ID)
	return exitOK
}

// openIndexForCLI opens the index cfg selects for a short command: a
// small PostgreSQL pool, and never a schema migration, which is `trove
// migrate`'s job (an outdated schema is refused with that advice).
func openIndexForCLI(ctx context.Context, cfg config.Config) (store.Index, error) {
	if cfg.Index.Backend == config.IndexPostgres {
		cfg.Index.Postgres.MaxConns = 2
		cfg.Index.Postgres.MigrateOnStart = false
	}
	return openIndex(ctx, cfg, slog.New(slog.DiscardHandler))
}

// mintAdminToken creates a global admin token in idx through the token
// operation (operations.OperatorToken), audited as done by
// localAdminActor on this host.
func mintAdminToken(ctx context.Context, idx operations.Index, f adminTokenFlags, now time.Time) (secret string, t registry.Token, err error) {
	ops := operations.New(operations.Options{Index: idx, Now: func() time.Time { return now }})
	t, secret, err = ops.OperatorToken(ctx, operations.Actor{Operator: localAdminActor}, f.description, localOrigin(), f.expires)
	return secret, t, err
}

// localOrigin says who runs this process and where: "by root on host db1".
func localOrigin() string {
	s := ""
	if u, err := user.Current(); err == nil && u.Username != "" {
		s = "by " + u.Username + " "
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return '?'
		}
		return r
	}, s+"on host "+host)
}
