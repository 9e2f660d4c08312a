package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/internal/app"
	"trove.dev/trove/internal/backup"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/registry"
)

// backupFlags are the flags of `trove backup` besides the storage flags
// of `trove serve`.
type backupFlags struct {
	out           string
	includeSecret bool
}

func (f *backupFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "out", "", "backup `file` to write (a tar archive; gzip-compressed if the name ends in .gz or .tgz); replaced only once the new backup is complete")
	fs.BoolVar(&f.includeSecret, "include-signing-secret", false, "also put the signing secret (--signing-secret-file) into the backup; "+
		"then the backup alone can sign with the registry-managed keys, and so can anyone who reads it (see docs/backup.md)")
}

func backupCommand() *command {
	return &command{
		name: "backup", args: "--out FILE [--include-signing-secret] [FLAGS]",
		summary: "Write a consistent backup of the embedded registry (SQLite index and blobs, every blob checked) while the server runs " +
			"(reads the storage flags of serve).",
		examples: []string{
			"trove backup --data-dir /var/lib/trove --out /backups/trove-$(date +%F).tar.gz",
			"trove backup --config /etc/trove/trove.env --out trove.tar",
			"# PostgreSQL and S3: see docs/backup.md (pg_dump, then a copy of the bucket).",
		},
		raw: runBackup,
		rawFlags: func() *flag.FlagSet {
			var cfg config.Config
			all := cfg.FlagSet("backup")
			fs := flag.NewFlagSet("backup", flag.ContinueOnError)
			all.VisitAll(func(f *flag.Flag) {
				if (indexFlag(f.Name) && f.Name != "postgres-dsn") || blobFlag(f.Name) || f.Name == "signing-secret-file" {
					fs.Var(f.Value, f.Name, f.Usage)
					fs.Lookup(f.Name).DefValue = f.DefValue
				}
			})
			(&backupFlags{}).define(fs)
			return fs
		},
		envOf: func(name string) string {
			if name == "out" || name == "include-signing-secret" {
				return ""
			}
			return config.EnvVar(name)
		},
	}
}

// blobFlag reports whether the serve flag called name selects or
// configures the blob store.
func blobFlag(name string) bool {
	return name == "blob-backend" || strings.HasPrefix(name, "fs-") || strings.HasPrefix(name, "s3-")
}

// runBackup loads the configuration of trove serve and writes a backup
// of its embedded index and its blobs.
func runBackup(ctx context.Context, e env, args []string) int {
	c, _ := lookup(commands(), []string{"backup"})
	var f backupFlags
	cfg, err := config.LoadWith(args, e.getenv, f.define)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if err == nil && f.out == "" {
		err = errors.New("--out is needed: the file to write the backup to")
	}
	if err != nil {
		return report(e, c, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	if cfg.Index.Backend != config.IndexSQLite {
		return report(e, c, registry.Errorf(registry.Invalid,
			"trove backup backs up the embedded SQLite index; back up a PostgreSQL index with pg_dump (or PITR), then copy the bucket, as docs/backup.md describes"))
	}
	if _, err := os.Stat(cfg.Index.SQLite.Path); err != nil {
		return report(e, c, fmt.Errorf("no index at %s (%w): pass the --data-dir, --sqlite-path or --config of the server", cfg.Index.SQLite.Path, err))
	}
	if cfg.Blobs.Backend == config.BlobsFS {
		if _, err := os.Stat(cfg.Blobs.FS.Dir); err != nil {
			return report(e, c, fmt.Errorf("no blob store at %s (%w): pass the --data-dir, --fs-blob-dir or --config of the server", cfg.Blobs.FS.Dir, err))
		}
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	blobs, err := app.OpenBlobs(ctx, cfg, log)
	if err != nil {
		return report(e, c, err)
	}
	if closer, ok := blobs.(interface{ Close() error }); ok {
		defer closer.Close()
	}
	opt := backup.Options{IndexPath: cfg.Index.SQLite.Path, Blobs: blobs, TroveVersion: buildVersion(), Logger: log}
	if f.includeSecret {
		if cfg.Signing.SecretFile == "" {
			return report(e, c, usagef("--include-signing-secret: no signing secret file is configured (--signing-secret-file)"))
		}
		opt.SigningSecretFile = cfg.Signing.SecretFile
	}
	m, err := backup.Create(ctx, f.out, opt)
	if err != nil {
		return report(e, c, err)
	}
	abs, _ := filepath.Abs(f.out)
	fmt.Fprintf(e.stdout, "Wrote %s\n%s", abs, backup.Describe(m))
	if m.SigningSecret == nil && m.Counts.ManagedSigningKeys > 0 {
		fmt.Fprintf(e.stderr, "note: the index holds %d registry-managed signing keys, sealed by the signing secret %s, which is not in the backup: keep a copy of that file apart from the backup (or pass --include-signing-secret)\n",
			m.Counts.ManagedSigningKeys, cfg.Signing.SecretFile)
	}
	return exitOK
}

func backupVerifyCommand() *command {
	return &command{
		name: "backup verify", args: "FILE", minArgs: 1, maxArgs: 1,
		summary:  "Check a backup file whole: its manifest, every blob's SHA-256, and that its index opens and names only blobs it holds.",
		examples: []string{"trove backup verify /backups/trove-2026-11-27.tar.gz"},
		setup: func(_ *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				log := slog.New(slog.NewTextHandler(cl.env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
				m, err := backup.Verify(ctx, args[0], log)
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.env.stdout, "%s: a complete, intact backup\n%s", args[0], backup.Describe(m))
				return nil
			}
		},
	}
}

func restoreCommand() *command {
	return &command{
		name: "restore", args: "[--data-dir DIR] [--force] FILE", minArgs: 1, maxArgs: 1,
		summary: "Bring a backup of `trove backup` back into a data directory, everything checked before anything is moved into place; " +
			"refuses while a server runs there.",
		examples: []string{
			"trove restore --data-dir /var/lib/trove /backups/trove-2026-11-27.tar.gz",
			"# A data directory that is not empty needs --force; what it replaces is moved to DIR/.pre-restore-<time>/.",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			dataDir := fs.String("data-dir", "", "`directory` to restore into, as trove serve's --data-dir [TROVE_DATA_DIR] (default $XDG_DATA_HOME/trove, else ~/.local/share/trove)")
			force := fs.Bool("force", false, "restore into a data directory that is not empty, moving the index, blobs and signing secret it holds aside first")
			return func(ctx context.Context, args []string) error {
				dir := *dataDir
				if dir == "" {
					dir = cl.env.getenv(config.EnvVar("data-dir"))
				}
				if dir == "" {
					var err error
					if dir, err = config.DefaultDataDir(cl.env.getenv); err != nil {
						return usagef("%s", registry.Message(err))
					}
				}
				dir, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				log := slog.New(slog.NewTextHandler(cl.env.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
				m, aside, err := backup.Restore(ctx, args[0], backup.Target{
					DataDir: dir, LockFile: filepath.Join(dir, app.LockFileName), Force: *force,
				}, log)
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.env.stdout, "Restored %s into %s\n%s", args[0], dir, backup.Describe(m))
				if aside != "" {
					fmt.Fprintf(cl.env.stdout, "What it replaced is in %s: delete it once the restored registry works.\n", aside)
				}
				if m.SigningSecret == nil && m.Counts.ManagedSigningKeys > 0 {
					fmt.Fprintf(cl.env.stderr, "note: the index holds %d registry-managed signing keys and the backup no signing secret: "+
						"put the signing secret file of the backed-up server at %s (or pass its --signing-secret-file to trove serve) before publishing with them\n",
						m.Counts.ManagedSigningKeys, filepath.Join(dir, config.DefaultSigningSecretName))
				}
				fmt.Fprintf(cl.env.stdout, "Start it with: trove serve --data-dir %s\n", dir)
				return nil
			}
		},
	}
}
