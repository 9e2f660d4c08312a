package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/storecopy"
)

func storeCopyCommand() *command {
	return &command{
		name: "store copy", args: "--from-config FILE --to-config FILE",
		summary: "Copy a whole registry, every blob verified, between storage backends (e.g. SQLite and files to PostgreSQL and S3, or back); safe to run again.",
		examples: []string{
			"trove store copy --from-config embedded.env --to-config scale-out.env",
			"# embedded.env:   TROVE_DATA_DIR=/var/lib/trove",
			"# scale-out.env:  TROVE_INDEX_BACKEND=postgres",
			"#                 TROVE_POSTGRES_DSN=${TROVE_POSTGRES_DSN}   (expanded from the environment)",
			"#                 TROVE_BLOB_BACKEND=s3",
			"#                 TROVE_S3_BUCKET=trove",
			"# It skips what the target has: run it once while the old server runs, again after stopping it,",
			"# then start Trove on the target (a target that holds data the source lacks is refused).",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			from := fs.String("from-config", "", "`file` of TROVE_* settings of `trove serve` (KEY=VALUE lines) that select the source index and blob store")
			to := fs.String("to-config", "", "`file` of TROVE_* settings that select the target index and blob store")
			return func(ctx context.Context, _ []string) error {
				if *from == "" || *to == "" {
					return usagef("both --from-config and --to-config are needed")
				}
				return storeCopy(ctx, cl.env, *from, *to)
			}
		},
	}
}

// storeCopy opens the stores the two settings files select and copies the
// first into the second, logging progress to stderr and printing a summary
// to stdout.
func storeCopy(ctx context.Context, e env, fromFile, toFile string) error {
	fromCfg, err := loadSettings(fromFile, e.getenv)
	if err != nil {
		return err
	}
	toCfg, err := loadSettings(toFile, e.getenv)
	if err != nil {
		return err
	}
	// Never create or migrate anything on the source side.
	fromCfg.Index.Postgres.MigrateOnStart = false
	if err := mustExist(fromCfg); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	from, closeFrom, err := openStore(ctx, fromCfg, log, "source")
	if err != nil {
		return err
	}
	defer closeFrom()
	to, closeTo, err := openStore(ctx, toCfg, log, "target")
	if err != nil {
		return err
	}
	defer closeTo()

	r, err := storecopy.Copy(ctx, from, to, storecopy.Options{Secrets: []string{urlSigningKeyName}, Logger: log})
	if err != nil {
		return err
	}
	printCopyReport(e.stdout, r)
	return nil
}

// openStore opens the index and blob store of cfg; side names it in errors.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger, side string) (storecopy.Store, func(), error) {
	idx, err := openIndex(ctx, cfg, log)
	if err != nil {
		return storecopy.Store{}, nil, fmt.Errorf("%s: %w", side, err)
	}
	blobs, err := openBlobs(ctx, cfg, log)
	if err != nil {
		idx.Close()
		return storecopy.Store{}, nil, fmt.Errorf("%s: %w", side, err)
	}
	// The rows a copy writes name blobs it copied earlier: a collection
	// of the target in between makes the write fail rather than lose them.
	idx.GuardBlobs(store.BlobsPresent(blobs))
	return storecopy.Store{Index: idx, Blobs: blobs}, func() { idx.Close() }, nil
}

// mustExist checks that the embedded stores of a source exist, since
// opening them would create empty ones (a typo in the data directory would
// otherwise copy an empty registry).
func mustExist(cfg config.Config) error {
	var paths []string
	if cfg.Index.Backend == config.IndexSQLite {
		paths = append(paths, cfg.Index.SQLite.Path)
	}
	if cfg.Blobs.Backend == config.BlobsFS {
		paths = append(paths, cfg.Blobs.FS.Dir)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return registry.Errorf(registry.NotFound, "source: %s does not exist; check TROVE_DATA_DIR (or TROVE_SQLITE_PATH, TROVE_FS_BLOB_DIR) in --from-config", p)
		}
	}
	return nil
}

// loadSettings loads the configuration of `trove serve` from a settings
// file alone (config.LoadFile): TROVE_* variables of the process do not
// leak into it, since the two sides would share them.
func loadSettings(path string, getenv func(string) string) (config.Config, error) {
	cfg, err := config.LoadFile(path, getenv)
	if err != nil {
		return config.Config{}, usagef("%s", err)
	}
	return cfg, nil
}

// printCopyReport prints what a copy did.
func printCopyReport(w io.Writer, r storecopy.Report) {
	for _, row := range []struct {
		name string
		c    storecopy.Count
	}{
		{"namespaces", r.Namespaces}, {"users", r.Users}, {"memberships", r.Memberships},
		{"signing keys", r.SigningKeys}, {"trust policies", r.TrustPolicies}, {"webhooks", r.Webhooks}, {"retention rules", r.RetentionRules}, {"tokens", r.Tokens}, {"provider versions", r.ProviderVersions},
		{"module versions", r.ModuleVersions}, {"audit events", r.AuditEvents}, {"server secrets", r.Secrets},
		{"blobs", r.Blobs},
	} {
		fmt.Fprintf(w, "%-18s %6d copied, %6d already there\n", row.name, row.c.Copied, row.c.Present)
	}
	fmt.Fprintf(w, "%-18s %6d bytes of blobs copied\n", "", r.BlobBytes)
	fmt.Fprintf(w, "%-18s %6d records brought up to date\n", "", r.Updated)
}
