package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"trove.dev/trove/internal/registry"
)

// Snapshot writes a transactionally consistent copy of the index file at
// path into the new file out (VACUUM INTO), while other connections and
// processes go on reading and writing the index: the copy holds exactly
// the transactions committed when it began reading. out must not exist.
// The copy is a plain database file (no -wal file to go with it), with
// mode 0600 like the index; it is not synced.
func Snapshot(ctx context.Context, path, out string) error {
	abs, err := existing(path)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return registry.Errorf(registry.Conflict, "snapshot file %s exists already", out)
	}
	// SQLite would create the file with the process's umask: create it
	// empty with mode 0600 first, as Open does, since the index holds
	// secrets (VACUUM INTO writes into an empty file).
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return registry.Wrap(registry.Unavailable, err, "creating snapshot file "+out)
	}
	f.Close()
	db, err := sql.Open("sqlite", dsn(abs, "", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")"))
	if err != nil {
		return registry.Wrap(registry.Internal, err, "opening index "+abs)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, out); err != nil {
		os.Remove(out)
		return classify(err, "writing a snapshot of the index")
	}
	return nil
}

// Inspect opens the index file at path read-only, without migrating it,
// checks its integrity (PRAGMA integrity_check) and returns its schema
// version: the newest migration it records. It is meant for copies of an
// index (a snapshot, a restored backup), not for an index a server uses.
func Inspect(ctx context.Context, path string) (schemaVersion int, err error) {
	abs, err := existing(path)
	if err != nil {
		return 0, err
	}
	q := dsn(abs, "", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")", "query_only(1)") + "&mode=ro"
	db, err := sql.Open("sqlite", q)
	if err != nil {
		return 0, registry.Wrap(registry.Internal, err, "opening index "+abs)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return 0, registry.Wrap(registry.Invalid, err, "checking index "+abs+" (not a SQLite database?)")
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return 0, classify(err, "checking index "+abs)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return 0, registry.Wrap(registry.Invalid, err, "checking index "+abs+" (not a SQLite database?)")
	}
	rows.Close()
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], "...")
		}
		return 0, registry.Errorf(registry.Invalid, "index %s is damaged: %s", abs, strings.Join(problems, "; "))
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, registry.Wrap(registry.Invalid, err, "reading the schema version of index "+abs+" (not a Trove index?)")
	}
	return int(v.Int64), nil
}

// existing returns the absolute path of an index file that must exist:
// opening a missing one would create an empty database.
func existing(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", registry.Wrap(registry.Internal, err, "resolving index path "+path)
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return "", registry.Errorf(registry.NotFound, "no index at %s", abs)
	} else if err != nil {
		return "", registry.Wrap(registry.Unavailable, err, "opening index "+abs)
	}
	return abs, nil
}
