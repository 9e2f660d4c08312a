// Package sqlite is Trove's embedded metadata index: store.Index on one
// SQLite file, through modernc.org/sqlite (pure Go, no cgo).
//
// Schema: the numbered SQL files in migrations/ are applied in order by
// Open and recorded in the schema_migrations table; a file never changes
// once released, a schema change is a new file. A PostgreSQL backend is
// meant to mirror this scheme and the tables.
//
// Concurrency: the database runs in WAL mode. Writes go through a pool of
// exactly one connection, so that this process's writers queue in Go
// rather than fail with SQLITE_BUSY, and each write transaction begins
// IMMEDIATE, taking the write lock up front (busy_timeout covers other
// processes on the same file). Reads use a separate pool of query-only
// connections; a read transaction sees one consistent snapshot.
//
// Encoding: times are UTC Unix microseconds, NULL for an optional time
// that is zero; scopes and protocols are JSON arrays. Commits are fully
// synchronous: a version reported as published survives a power loss.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// busyTimeout is how long a statement waits for a lock held by another
// process before failing with Unavailable.
const busyTimeout = 10 * time.Second

// Index is a store.Index on a SQLite file. It is safe for concurrent use.
type Index struct {
	w      *sql.DB // one connection: every write
	r      *sql.DB // query-only connections: every read
	closed atomic.Bool
	once   sync.Once
	err    error
}

var _ store.Index = (*Index)(nil)

// Open opens the index in the file at path, creating the file (mode 0600:
// it holds server secrets) and its directory if needed, and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*Index, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, registry.Errorf(registry.Invalid, "invalid index path %q: want the path of a database file", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "resolving index path "+path)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, registry.Wrap(registry.Internal, err, "creating the index directory")
	}
	// SQLite gives its -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "opening index file "+abs)
	}
	f.Close()

	pragmas := []string{"busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")"}
	w, err := sql.Open("sqlite", dsn(abs, "immediate", append(pragmas,
		"journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(1)")...))
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "opening index "+abs)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, err
	}

	r, err := sql.Open("sqlite", dsn(abs, "", append(pragmas, "query_only(1)")...))
	if err != nil {
		w.Close()
		return nil, registry.Wrap(registry.Internal, err, "opening index "+abs)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	x := &Index{w: w, r: r}
	if err := x.Ping(ctx); err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// dsn returns the driver's name for the file at path: a SQLite URI, so
// that any character of the path is escaped, carrying the driver's
// per-connection settings.
func dsn(path, txlock string, pragmas ...string) string {
	q := url.Values{"_pragma": pragmas}
	if txlock != "" {
		q.Set("_txlock", txlock)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// Ping reports whether the database answers a query.
func (x *Index) Ping(ctx context.Context) error {
	var one int
	if err := x.r.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return x.fail(err, "pinging the index")
	}
	return nil
}

// Close closes the database. Later calls return the first call's result.
func (x *Index) Close() error {
	x.once.Do(func() {
		x.closed.Store(true)
		x.err = errors.Join(x.r.Close(), x.w.Close())
	})
	return x.err
}

// write runs fn in a write transaction and commits it if fn succeeds.
func (x *Index) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := x.w.BeginTx(ctx, nil)
	if err != nil {
		return x.fail(err, what)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return x.fail(err, what)
	}
	if err := tx.Commit(); err != nil {
		return x.fail(err, what)
	}
	return nil
}

// read runs fn in a read-only transaction: a consistent snapshot.
func (x *Index) read(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	tx, err := x.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return x.fail(err, what)
	}
	defer tx.Rollback()
	return x.fail(fn(tx), what)
}

// fail classifies err as a *registry.Error (see classify); once the index
// is closed, failures are Unavailable.
func (x *Index) fail(err error, what string) error {
	var re *registry.Error
	if err != nil && !errors.As(err, &re) && x.closed.Load() {
		return registry.Wrap(registry.Unavailable, err, what+": the index is closed")
	}
	return classify(err, what)
}

// classify turns err into a *registry.Error, keeping the kind of one that
// is classified already. what describes the failed operation.
func classify(err error, what string) error {
	if err == nil {
		return nil
	}
	var re *registry.Error
	switch {
	case errors.As(err, &re):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, sql.ErrConnDone):
		return registry.Wrap(registry.Unavailable, err, what)
	case isUnique(err):
		return registry.Wrap(registry.Conflict, err, what+": it exists already")
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return registry.Wrap(registry.Unavailable, err, what+": the index is locked by another process")
		case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
			return registry.Wrap(registry.Unavailable, err, what+": the index file cannot be read or written")
		}
	}
	return registry.Wrap(registry.Internal, err, what)
}

// isUnique reports whether err is a violated primary key or unique index.
func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) &&
		(se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// micros encodes a time; times outside the years 1 to 9999 are refused.
func micros(t time.Time, field string) (int64, error) {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return 0, registry.Errorf(registry.Invalid, "%s %s is out of range", field, t.UTC().Format(time.RFC3339))
	}
	return t.UnixMicro(), nil
}

// optMicros encodes an optional time: the zero time is NULL.
func optMicros(t time.Time, field string) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	v, err := micros(t, field)
	return sql.NullInt64{Int64: v, Valid: err == nil}, err
}

// fromMicros decodes a time.
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// fromOptMicros decodes an optional time.
func fromOptMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// exists runs a "SELECT EXISTS (...)" query.
func exists(ctx context.Context, tx *sql.Tx, query string, args ...any) (bool, error) {
	var ok bool
	err := tx.QueryRowContext(ctx, query, args...).Scan(&ok)
	return ok, err
}

// namespaceExists fails with NotFound unless namespace exists.
func namespaceExists(ctx context.Context, tx *sql.Tx, namespace string) error {
	ok, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM namespaces WHERE name = ?)`, namespace)
	if err == nil && !ok {
		err = registry.Errorf(registry.NotFound, "namespace %q not found", namespace)
	}
	return err
}

// rowsAffected fails with notFound if res changed no row.
func rowsAffected(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return notFound
	}
	return err
}
