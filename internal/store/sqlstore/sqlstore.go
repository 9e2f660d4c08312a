// Package sqlstore is the one implementation of store.Index over
// database/sql that Trove's SQL backends share: the sqlite package runs it
// on modernc.org/sqlite, the postgres package on pgx through its stdlib
// adapter. A backend opens the database, applies its migrations and hands
// the *sql.DB to New with its Dialect, which says what really differs
// between the two: placeholders, how times and lists are stored, how
// errors are classified, row locking and what a write must do to announce
// a change.
//
// Queries are written once, with PostgreSQL's $N placeholders (SQLite
// reads them as ?N). The schemas of both backends have the same tables
// and columns; only the column types differ (see the migrations).
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Failure is what a Dialect makes of a backend error.
type Failure int

// The failures a Dialect tells apart.
const (
	// FailOther is any other failure: Internal.
	FailOther Failure = iota
	// FailUnique is a violated primary key or unique constraint.
	FailUnique
	// FailForeignKey is a violated foreign key.
	FailForeignKey
	// FailRetry is a transaction that failed only because it ran
	// concurrently with another (serialization failure, deadlock): it is
	// run again.
	FailRetry
	// FailUnavailable is a backend that cannot be reached, is locked or
	// refuses service.
	FailUnavailable
	// FailSchema is a schema that is missing or outdated.
	FailSchema
)

// Dialect is what differs between the SQL backends. Its methods must be
// safe for concurrent use.
type Dialect interface {
	// Rebind rewrites a query written with $N placeholders into the
	// backend's own.
	Rebind(query string) string
	// Time encodes a time (already checked to lie in the years 1 to 9999)
	// as a query argument. Times read back are decoded by the package (see
	// timeDest): Unix microseconds or time.Time.
	Time(t time.Time) any
	// Strings encodes a list column (scopes, protocols), never as NULL.
	Strings(s []string) any
	// ScanStrings returns a scan destination that decodes a list column,
	// or the result of ArrayOf, into dst.
	ScanStrings(dst *[]string) any
	// ArrayOf returns an expression whose value is the list of column's
	// values over the rows of "SELECT column rest".
	ArrayOf(column, rest string) string
	// Contains returns a condition that is true when the text needle
	// occurs in haystack, ignoring the case of ASCII letters, without
	// wildcards.
	Contains(haystack, needle string) string
	// ForUpdate is appended to a SELECT of rows a write transaction
	// changes next: " FOR UPDATE" where writers run concurrently, "" where
	// one writer runs at a time.
	ForUpdate() string
	// LockTx takes the transaction-level lock key, serializing the
	// transactions that take it across every process sharing the database
	// (a no-op where one writer runs at a time).
	LockTx(ctx context.Context, tx *sql.Tx, key int64) error
	// LockTxShared takes the shared side of the transaction-level lock
	// key: transactions holding it run concurrently, but not with one
	// that holds it through LockTx (a no-op where one writer runs at a
	// time).
	LockTxShared(ctx context.Context, tx *sql.Tx, key int64) error
	// Notify announces c to the other processes sharing the database as
	// part of tx (delivered only if it commits); a no-op for a database
	// only this process uses.
	Notify(ctx context.Context, tx *sql.Tx, c store.Change) error
	// Classify says what a backend error means, with a few words for the
	// message when it is FailUnavailable or FailSchema.
	Classify(err error) (Failure, string)
}

// Options configure New.
type Options struct {
	// Reader runs the reads when it is not nil (SQLite's query-only
	// connections); the writer runs everything otherwise.
	Reader *sql.DB
	// Timeout bounds every operation when positive.
	Timeout time.Duration
	// Feed makes the index its own change feed (store.ChangeFeed, see
	// WatchChanges): for a database that no other process writes to.
	Feed bool
	// Rows reads the long lists when it is not nil (PostgreSQL's, on
	// pgx's own connections); database/sql on the reader otherwise.
	Rows RowReader
}

// writeRetries is how many times a write transaction is run again after
// a FailRetry.
const writeRetries = 3

// Index is a store.Index over database/sql. It is safe for concurrent use.
type Index struct {
	w, r    *sql.DB
	d       Dialect
	rows    RowReader
	timeout time.Duration
	feed    *feed // nil without Options.Feed
	hooks   hooks // OnCommit's
	check   atomic.Pointer[store.BlobCheck]
	clock   atomic.Pointer[func() time.Time] // nil: time.Now
	closed  atomic.Bool
	once    sync.Once
	err     error
}

var (
	_ store.Index      = (*Index)(nil)
	_ store.ChangeHook = (*Index)(nil)
)

// New returns the index on db, whose schema is current.
func New(db *sql.DB, d Dialect, o Options) *Index {
	x := &Index{w: db, r: db, d: d, timeout: o.Timeout}
	if o.Reader != nil {
		x.r = o.Reader
	}
	x.rows = o.Rows
	if x.rows == nil {
		x.rows = sqlRowReader{x.r, d}
	}
	if o.Feed {
		x.feed = newFeed()
	}
	return x
}

// Ping reports whether the database answers a query.
func (x *Index) Ping(ctx context.Context) error {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var one int
	return x.fail(x.r.QueryRowContext(ctx, "SELECT 1").Scan(&one), "pinging the index")
}

// Close closes the databases and stops WatchChanges. Later calls return
// the first call's result.
func (x *Index) Close() error {
	x.once.Do(func() {
		x.closed.Store(true)
		if x.feed != nil {
			x.feed.close()
		}
		if x.r != x.w {
			x.err = x.r.Close()
		}
		x.err = errors.Join(x.err, x.w.Close())
	})
	return x.err
}

// WatchChanges implements store.ChangeFeed for an index opened with
// Options.Feed: it reports the changes this process commits, the only
// writer of the database.
func (x *Index) WatchChanges(ctx context.Context, fn func(store.Change)) error {
	if x.feed == nil {
		return registry.Errorf(registry.Internal, "watching index changes: this index has no change feed")
	}
	return x.feed.watch(ctx, fn)
}

// SoleWriter implements store.SoleWriter: an index opened with
// Options.Feed is its database's only writer.
func (x *Index) SoleWriter() bool { return x.feed != nil }

// OnCommit implements store.ChangeHook: fn is called with every change
// this index commits, after the commit and before the write returns.
func (x *Index) OnCommit(fn func(store.Change)) (stop func()) { return x.hooks.add(fn) }

// op bounds one operation by the timeout.
func (x *Index) op(ctx context.Context) (context.Context, context.CancelFunc) {
	if x.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, x.timeout)
}

// tx is a transaction whose queries are rebound for the dialect.
type tx struct {
	*sql.Tx
	d Dialect
}

func (t tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.ExecContext(ctx, t.d.Rebind(query), args...)
}

func (t tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.QueryContext(ctx, t.d.Rebind(query), args...)
}

func (t tx) row(ctx context.Context, query string, args ...any) *sql.Row {
	return t.QueryRowContext(ctx, t.d.Rebind(query), args...)
}

// exists runs a "SELECT EXISTS (...)" query.
func (t tx) exists(ctx context.Context, query string, args ...any) (bool, error) {
	var ok bool
	err := t.row(ctx, query, args...).Scan(&ok)
	return ok, err
}

// query runs a read outside a transaction.
func (x *Index) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return x.r.QueryContext(ctx, x.d.Rebind(query), args...)
}

// row runs a one-row read outside a transaction.
func (x *Index) row(ctx context.Context, query string, args ...any) *sql.Row {
	return x.r.QueryRowContext(ctx, x.d.Rebind(query), args...)
}

// write runs fn in a write transaction and commits it if fn succeeds,
// running it again after a FailRetry. The audit entries and webhook
// events ctx carries (store.Effects), unless another transaction took
// them, are inserted last in the transaction and commit with it.
func (x *Index) write(ctx context.Context, what string, fn func(ctx context.Context, t tx) error) error {
	return x.writeChange(ctx, what, nil, fn)
}

// writeChange is write for a transaction that makes change c (if not
// nil): it is announced in the transaction (Dialect.Notify), with an own
// feed reported after the commit in commit order, and handed to the
// OnCommit functions before the write returns.
func (x *Index) writeChange(ctx context.Context, what string, c *store.Change, fn func(ctx context.Context, t tx) error) error {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var err error
	for attempt := 0; ; attempt++ {
		err = x.writeOnce(ctx, c, fn)
		if f, _ := x.d.Classify(err); err == nil || attempt >= writeRetries || f != FailRetry {
			break
		}
	}
	return x.fail(err, what)
}

// errUnchanged is what a write's fn returns when it found nothing to
// change (an idempotent repeat): its transaction is rolled back, no change
// is announced, the effects the context carries stay untaken, and the
// write returns nil.
var errUnchanged = errors.New("sqlstore: nothing to change")

func (x *Index) writeOnce(ctx context.Context, c *store.Change, fn func(ctx context.Context, t tx) error) error {
	// The effects the context carries commit with this transaction, if
	// no other took them (store.Effects).
	fx := store.EffectsFrom(ctx)
	if !fx.Claim() {
		fx = nil
	}
	committed := false
	if fx != nil {
		defer func() {
			if !committed {
				fx.Release()
			}
		}()
	}
	sqlTx, err := x.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	t := tx{sqlTx, x.d}
	if err := fn(ctx, t); errors.Is(err, errUnchanged) {
		return nil
	} else if err != nil {
		return err
	}
	deliveries, err := x.insertEffects(ctx, t, fx)
	if err != nil {
		return err
	}
	if c != nil {
		if err := x.d.Notify(ctx, sqlTx, *c); err != nil {
			return err
		}
		if x.feed != nil {
			x.feed.mu.Lock() // commit and publish in one step: in commit order
			defer x.feed.mu.Unlock()
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return err
	}
	committed = true
	if fx != nil {
		fx.Commit(deliveries)
	}
	if c != nil {
		if x.feed != nil {
			x.feed.publish(*c)
		}
		x.hooks.call(*c)
	}
	return nil
}

// insertEffects writes the audit entries and webhook events of fx (nil
// for none) in t, last before its commit: the audit lock taken here is
// held for the shortest time, and after every other lock of t. It returns
// the number of webhook deliveries enqueued.
func (x *Index) insertEffects(ctx context.Context, t tx, fx *store.Effects) (int, error) {
	if fx == nil {
		return 0, nil
	}
	for _, e := range fx.Audit {
		if _, err := x.appendAudit(ctx, t, e); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, e := range fx.Events {
		newID := fx.NewID
		if newID == nil {
			i := 0
			newID = func() string { i++; return e.ID + "_" + strconv.Itoa(i) }
		}
		k, err := x.enqueueEvent(ctx, t, e, newID)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// fail classifies err as a *registry.Error (see Classify); once the index
// is closed, failures are Unavailable.
func (x *Index) fail(err error, what string) error {
	var re *registry.Error
	if err != nil && !errors.As(err, &re) && x.closed.Load() {
		return registry.Wrap(registry.Unavailable, err, what+": the index is closed")
	}
	return Classify(x.d, err, what)
}

// Classify turns err into a *registry.Error, keeping the kind of one that
// is classified already. what describes the failed operation.
func Classify(d Dialect, err error, what string) error {
	if err == nil {
		return nil
	}
	var re *registry.Error
	switch {
	case errors.As(err, &re):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, sql.ErrConnDone), errors.Is(err, driver.ErrBadConn):
		return registry.Wrap(registry.Unavailable, err, what)
	}
	switch f, why := d.Classify(err); f {
	case FailUnique:
		return registry.Wrap(registry.Conflict, err, what+": it exists already")
	case FailForeignKey:
		return registry.Wrap(registry.NotFound, err, what+": a record it refers to does not exist")
	case FailUnavailable, FailRetry:
		return registry.Wrap(registry.Unavailable, err, what+": "+why)
	case FailSchema:
		return registry.Wrap(registry.Internal, err, what+": "+why)
	}
	return registry.Wrap(registry.Internal, err, what)
}

// is reports whether err is a backend error of kind f.
func (x *Index) is(err error, f Failure) bool {
	if err == nil {
		return false
	}
	got, _ := x.d.Classify(err)
	return got == f
}

// time checks and encodes a time.
func (x *Index) time(t time.Time, field string) (any, error) {
	if err := registry.CheckStoredTime(t, field); err != nil {
		return nil, err
	}
	return x.d.Time(t), nil
}

// optTime checks and encodes an optional time: the zero time is NULL.
func (x *Index) optTime(t time.Time, field string) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	return x.time(t, field)
}

// timeDest is a scan destination for a time column, NULL being the zero
// time: Unix microseconds (SQLite) or a time.Time (PostgreSQL), read back
// in UTC.
type timeDest struct{ t *time.Time }

// at returns a scan destination for a time column.
func at(t *time.Time) timeDest { return timeDest{t} }

// Scan implements sql.Scanner.
func (d timeDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.t = time.Time{}
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case time.Time:
		*d.t = v.UTC()
	default:
		return registry.Errorf(registry.Internal, "a time column holds a %T", src)
	}
	return nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// collect reads every row of rows with scan, then closes rows.
func collect[T any](rows *sql.Rows, err error, scan func(s scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// affected fails with notFound if res changed no row.
func affected(res sql.Result, err error, notFound error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return notFound
	}
	return err
}

// namespaceExists fails with NotFound unless namespace exists.
func namespaceExists(ctx context.Context, t tx, namespace string) error {
	ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM namespaces WHERE name = $1)`, namespace)
	if err == nil && !ok {
		err = notFoundNamespace(namespace)
	}
	return err
}

func notFoundNamespace(namespace string) error {
	return registry.Errorf(registry.NotFound, "namespace %q not found", namespace)
}

// nonNil returns s, or an empty slice for nil, so that it encodes as an
// empty list rather than NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// each scans every row of rows into targets, the same destinations for
// every row, calling fn after each, then closes rows. Reusing the
// destinations spares a list of them and their variables per row.
func each(rows *sql.Rows, targets []any, fn func()) error {
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		fn()
	}
	return rows.Err()
}

// listInterner decodes the list columns (Dialect.ScanStrings) of one
// statement's rows, each distinct encoding once (see decode): rows
// holding the same list (a provider's versions' protocols) share one
// slice, capped at its length so that an append copies it. The lists must
// not be modified.
type listInterner struct {
	seen map[string][]string
}

// stringInterner returns one copy of each distinct string it is given.
type stringInterner map[string]string

func (s *stringInterner) intern(v string) string {
	if got, ok := (*s)[v]; ok {
		return got
	}
	if *s == nil {
		*s = stringInterner{}
	}
	(*s)[v] = v
	return v
}
