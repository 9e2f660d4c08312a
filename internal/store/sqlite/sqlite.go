// Package sqlite is Trove's embedded metadata index: store.Index on one
// SQLite file, through modernc.org/sqlite (pure Go, no cgo). The index
// itself is sqlstore's, run with this package's dialect; this package
// opens the file and applies the migrations.
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
// connections; every read is one statement (or statements on rows that are
// immutable once visible), which sees one consistent snapshot.
//
// Encoding: times are UTC Unix microseconds, NULL for an optional time
// that is zero; scopes and protocols are JSON arrays. Commits are fully
// synchronous: a version reported as published survives a power loss.
//
// Changes: the index is its own store.ChangeFeed, reporting the provider
// and module changes this process commits, in commit order, as the
// PostgreSQL index reports those of every replica. Another process
// writing the same file (a second `trove` on one data directory, which is
// not supported) is not seen.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlstore"
)

// busyTimeout is how long a statement waits for a lock held by another
// process before failing with Unavailable.
const busyTimeout = 10 * time.Second

// readerCacheSize is the page cache of each read connection: 512 KiB
// (SQLite's default is 2,000 KiB). The page caches live outside the Go
// heap, and the SQLite allocator gives each cached 4 KiB page an 8 KiB
// slot, so the default cost about 4 MiB of resident memory per
// connection, five connections on two CPUs; the hot reads are answered
// from the response caches, and a page missing here comes from the
// kernel's page cache (docs/benchmarks.md, "Where the resident memory
// goes"). The writer keeps SQLite's default.
const readerCacheSize = "cache_size(-512)"

// Index is a store.Index on a SQLite file, implemented by sqlstore with
// the SQLite dialect. It is its own store.ChangeFeed: this process is the
// only writer of the file, and reports the changes it commits. It is safe
// for concurrent use.
type Index struct {
	*sqlstore.Index
	w *sql.DB // one connection: every write
	r *sql.DB // query-only connections: every read
}

var (
	_ store.Index      = (*Index)(nil)
	_ store.ChangeFeed = (*Index)(nil)
	_ store.SoleWriter = (*Index)(nil)
)

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

	r, err := sql.Open("sqlite", dsn(abs, "", append(pragmas, "query_only(1)", readerCacheSize)...))
	if err != nil {
		w.Close()
		return nil, registry.Wrap(registry.Internal, err, "opening index "+abs)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	x := &Index{Index: sqlstore.New(w, dialect{}, sqlstore.Options{Reader: r, Feed: true}), w: w, r: r}
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

// dialect is SQLite's sqlstore.Dialect. One connection writes, and each
// write transaction begins IMMEDIATE (see the DSN), so a transaction needs
// no row locks; times are Unix microseconds; lists are JSON arrays.
type dialect struct{}

// Rebind turns $N into SQLite's ?N: each $ followed by a digit becomes
// a ?, one byte for another (a regular expression cost a tenth of a
// publish's allocations).
func (dialect) Rebind(query string) string {
	i := strings.IndexByte(query, '$')
	if i < 0 {
		return query
	}
	b := []byte(query)
	for ; i < len(b)-1; i++ {
		if b[i] == '$' && b[i+1] >= '0' && b[i+1] <= '9' {
			b[i] = '?'
		}
	}
	return string(b)
}

func (dialect) Time(t time.Time) any { return t.UnixMicro() }

func (dialect) Strings(s []string) any {
	if s == nil {
		s = []string{}
	}
	b, _ := json.Marshal(s) // a []string always encodes
	return string(b)
}

func (dialect) ScanStrings(dst *[]string) any { return jsonStrings{dst} }

func (dialect) ArrayOf(column, rest string) string {
	return `(SELECT json_group_array(` + column + `) ` + rest + `)`
}

func (dialect) Contains(haystack, needle string) string {
	return `instr(lower(` + haystack + `), lower(` + needle + `)) > 0`
}

func (dialect) ForUpdate() string { return "" }

func (dialect) LockTx(context.Context, *sql.Tx, int64) error { return nil }

func (dialect) LockTxShared(context.Context, *sql.Tx, int64) error { return nil }

func (dialect) Notify(context.Context, *sql.Tx, store.Change) error { return nil }

// Classify reads SQLite's result codes.
func (dialect) Classify(err error) (sqlstore.Failure, string) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return sqlstore.FailOther, ""
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlstore.FailUnique, ""
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlstore.FailForeignKey, ""
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return sqlstore.FailUnavailable, "the index is locked by another process"
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY:
		return sqlstore.FailUnavailable, "the index file cannot be read or written"
	}
	return sqlstore.FailOther, ""
}

// jsonStrings scans a JSON array of strings.
type jsonStrings struct{ dst *[]string }

func (j jsonStrings) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return registry.Errorf(registry.Internal, "a list column holds a %T", src)
	}
	*j.dst = nil
	return json.Unmarshal(b, j.dst)
}

// classify turns err into a *registry.Error (see sqlstore.Classify).
func classify(err error, what string) error { return sqlstore.Classify(dialect{}, err, what) }
