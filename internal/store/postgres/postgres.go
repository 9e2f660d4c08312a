// Package postgres is Trove's scale-out metadata index: store.Index on
// PostgreSQL through pgx, for several Trove replicas sharing one database.
//
// Schema: the numbered SQL files in migrations/ mirror the SQLite index's
// tables (PostgreSQL types: timestamptz, text[], bytea; names COLLATE "C"
// so that they sort bytewise, as in SQLite). They are embedded in the
// binary, recorded in the schema_migrations table, and applied by Open (or
// `trove migrate`) while holding a PostgreSQL advisory lock, so that
// replicas starting together apply each migration once. A file never
// changes once released; a schema change is a new file.
//
// Concurrency: writes run in READ COMMITTED transactions; uniqueness is
// enforced by constraints (a unique violation is Conflict), and the
// providers summary row serializes concurrent publishes of one provider.
// Transactions that fail with a serialization failure or deadlock are
// retried. Reads are single statements (or statements whose rows are
// immutable once visible), so they need no transaction.
//
// Changes: every transaction that adds or removes a provider or module
// version sends a notification on the channel trove_changes as part of
// the transaction (delivered only if it commits). WatchChanges listens on
// a dedicated connection and implements store.ChangeFeed, so that every
// replica drops its cached responses at once.
//
// Failures: connections have a connect timeout and every operation a
// deadline (WithQueryTimeout), so that an unreachable database makes
// requests fail fast with Unavailable; the pool reconnects by itself when
// the database returns.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Defaults of the options.
const (
	// DefaultConnectTimeout bounds establishing one connection when the
	// DSN sets no connect_timeout.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultQueryTimeout bounds one index operation.
	DefaultQueryTimeout = 15 * time.Second
	// DefaultMaxConns is the pool size when neither WithMaxConns nor the
	// DSN's pool_max_conns sets one.
	DefaultMaxConns = 10
)

// writeRetries is how many times a write transaction is retried after a
// serialization failure or deadlock.
const writeRetries = 3

// Index is a store.Index on PostgreSQL. It is safe for concurrent use.
type Index struct {
	pool     *pgxpool.Pool
	listen   *pgx.ConnConfig // for the LISTEN connection of WatchChanges
	timeout  time.Duration
	log      *slog.Logger
	target   string // "host:port/database", for messages
	closing  context.Context
	close    context.CancelFunc
	closeErr sync.Once
}

var (
	_ store.Index      = (*Index)(nil)
	_ store.ChangeFeed = (*Index)(nil)
)

// options collects what the Options set.
type options struct {
	maxConns int32
	migrate  bool
	timeout  time.Duration
	log      *slog.Logger
}

// Option adjusts Open.
type Option func(*options)

// WithMaxConns sets the size of the connection pool (n > 0), overriding
// the DSN's pool_max_conns.
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = int32(min(n, 1<<20))
		}
	}
}

// WithMigrations says whether Open applies the migrations the database
// lacks (the default). With false, Open only checks that the schema is
// current and fails with a request to run `trove migrate` otherwise.
func WithMigrations(apply bool) Option {
	return func(o *options) { o.migrate = apply }
}

// WithQueryTimeout bounds every index operation (DefaultQueryTimeout if
// d <= 0), so that a database that stopped answering fails requests
// instead of hanging them.
func WithQueryTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithLogger makes the index log what happens in the background (the
// change feed losing and regaining its connection).
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
}

// Open connects to the PostgreSQL database that dsn names (a
// postgres:// URL or key=value pairs, as libpq accepts them), checks that
// it answers, and applies the missing migrations (see WithMigrations).
//
// Errors are Invalid for a malformed DSN, refused credentials or a missing
// database, Unavailable for a server that cannot be reached; their
// messages never contain the password.
func Open(ctx context.Context, dsn string, opts ...Option) (*Index, error) {
	o := options{migrate: true, timeout: DefaultQueryTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	} else if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	// An idle connection is pinged before use (pgxpool does so after one
	// second idle), so a restarted server costs no failed request; check
	// idle ones in the background often enough to notice a restart early.
	cfg.HealthCheckPeriod = 15 * time.Second
	cfg.PingTimeout = 3 * time.Second

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "invalid PostgreSQL DSN: %s", scrub(err.Error(), cfg.ConnConfig.Password))
	}
	closing, cancel := context.WithCancel(context.Background())
	x := &Index{
		pool:    pool,
		listen:  cfg.ConnConfig.Copy(),
		timeout: o.timeout,
		log:     o.log,
		target:  describeTarget(cfg.ConnConfig),
		closing: closing,
		close:   cancel,
	}
	if err := x.connect(ctx); err != nil {
		x.Close()
		return nil, err
	}
	if o.migrate {
		err = x.migrate(ctx)
	} else {
		err = x.checkSchema(ctx)
	}
	if err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// parseDSN parses a DSN into a pool configuration with Trove's timeouts.
func parseDSN(dsn string) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, registry.Errorf(registry.Invalid,
			"the PostgreSQL DSN is empty: set --postgres-dsn or TROVE_POSTGRES_DSN, e.g. postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=verify-full")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid,
			"invalid PostgreSQL DSN: %s; want postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=... or key=value pairs (host=... user=... dbname=...)",
			dsnProblem(err))
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = cmpOr(cfg.ConnConfig.RuntimeParams["application_name"], "trove")
	return cfg, nil
}

// dsnProblem describes why a DSN did not parse without repeating the DSN,
// which holds the password.
func dsnProblem(err error) string {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return "it cannot be parsed"
	}
	s := pce.Error()
	if i := strings.Index(s, "`: "); i >= 0 { // "cannot parse `<dsn>`: why"
		s = s[i+3:]
	}
	var ue *url.Error // its text repeats the URL
	if errors.As(pce, &ue) {
		s = strings.ReplaceAll(s, ue.Error(), ue.Err.Error())
	}
	if u, perr := url.Parse(pce.ConnString); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			s = scrub(s, pw)
		}
	}
	return s
}

// scrub replaces every occurrence of secret in s.
func scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "xxxxx")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// describeTarget names the server and database of cfg for messages.
func describeTarget(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, fmt.Sprint(cfg.Port))
	}
	return fmt.Sprintf("%s/%s (user %s)", host, cfg.Database, cfg.User)
}

// connect checks that the database answers, turning the failures of a
// first connection into actionable errors.
func (x *Index) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, x.listen.ConnectTimeout+x.timeout)
	defer cancel()
	err := x.pool.Ping(ctx)
	if err == nil {
		return nil
	}
	detail := scrub(err.Error(), x.listen.Password)
	detail = strings.NewReplacer(":\n\t", ": ", "\n\t", "; ", "\n", "; ").Replace(detail)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "28P01" || pgErr.Code == "28000":
			return registry.Errorf(registry.Invalid,
				"PostgreSQL at %s refused the credentials: check the user and password in the DSN (--postgres-dsn / TROVE_POSTGRES_DSN) and the server's pg_hba.conf: %s", x.target, detail)
		case pgErr.Code == "3D000":
			return registry.Errorf(registry.Invalid,
				"database %q does not exist on PostgreSQL at %s: create it (CREATE DATABASE ...) or fix the database name in the DSN: %s", x.listen.Database, x.target, detail)
		}
	}
	return registry.Errorf(registry.Unavailable,
		"cannot reach PostgreSQL at %s: check that it runs and that the DSN's host, port and sslmode are right: %s", x.target, detail)
}

// Ping reports whether the database answers a query.
func (x *Index) Ping(ctx context.Context) error {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	var one int
	return x.fail(x.pool.QueryRow(ctx, `SELECT 1`).Scan(&one), "pinging the index")
}

// Close closes the pool and stops WatchChanges. Later calls do nothing.
func (x *Index) Close() error {
	x.closeErr.Do(func() {
		x.close()
		x.pool.Close()
	})
	return nil
}

// opContext bounds one operation by the query timeout.
func (x *Index) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, x.timeout)
}

// write runs fn in a transaction and commits it if fn succeeds, retrying
// the whole transaction after a serialization failure or deadlock.
func (x *Index) write(ctx context.Context, what string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	var err error
	for attempt := 0; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, x.pool, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(ctx, tx) })
		if attempt >= writeRetries || !retryable(err) {
			break
		}
	}
	return x.fail(err, what)
}

// retryable reports whether a transaction failed only because it ran
// concurrently with another and may succeed when run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// fail classifies err as a *registry.Error (see classify); once the index
// is closed, failures are Unavailable.
func (x *Index) fail(err error, what string) error {
	var re *registry.Error
	if err != nil && !errors.As(err, &re) && x.closing.Err() != nil {
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
	if errors.As(err, &re) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case code == "23505": // unique_violation
			return registry.Wrap(registry.Conflict, err, what+": it exists already")
		case code == "23503": // foreign_key_violation
			return registry.Wrap(registry.NotFound, err, what+": a record it refers to does not exist")
		case code == "42P01" || code == "42703": // undefined_table, undefined_column
			return registry.Wrap(registry.Internal, err, what+": the index schema is missing or outdated (run trove migrate)")
		case strings.HasPrefix(code, "08"), // connection_exception
			strings.HasPrefix(code, "53"), // insufficient_resources (too many connections, disk full)
			strings.HasPrefix(code, "57"), // operator_intervention (shutdown, query canceled)
			strings.HasPrefix(code, "28"), // invalid_authorization_specification
			strings.HasPrefix(code, "40"), // transaction_rollback (serialization failure, deadlock)
			code == "3D000",               // invalid_catalog_name: the database is gone
			code == "25006":               // read_only_sql_transaction: a standby or a read-only server
			return registry.Wrap(registry.Unavailable, err, what+": PostgreSQL refused it")
		}
		return registry.Wrap(registry.Internal, err, what)
	}
	if connectionFailure(err) {
		return registry.Wrap(registry.Unavailable, err, what+": PostgreSQL is not reachable")
	}
	return registry.Wrap(registry.Internal, err, what)
}

// connectionFailure reports whether err means the database could not be
// reached or the connection broke, rather than a failed statement.
func connectionFailure(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	}
	// pgx reports a pool or connection closed under it with plain errors.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "conn busy") || strings.Contains(msg, "failed to deallocate cached statement")
}

// checkTime refuses times outside the years 1 to 9999 (as the SQLite index
// does) and drops what is finer than PostgreSQL's microseconds.
func checkTime(t time.Time, field string) (time.Time, error) {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return time.Time{}, registry.Errorf(registry.Invalid, "%s %s is out of range", field, t.UTC().Format(time.RFC3339))
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// optTime encodes an optional time: the zero time is NULL.
func optTime(t time.Time, field string) (*time.Time, error) {
	if t.IsZero() {
		return nil, nil
	}
	v, err := checkTime(t, field)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// fromOptTime decodes an optional time.
func fromOptTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nonNil returns s, or an empty slice for nil, so that it encodes as an
// empty array rather than NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// namespaceExists fails with NotFound unless namespace exists.
func namespaceExists(ctx context.Context, q querier, namespace string) error {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM namespaces WHERE name = $1)`, namespace).Scan(&ok)
	if err == nil && !ok {
		err = notFoundNamespace(namespace)
	}
	return err
}

func notFoundNamespace(namespace string) error {
	return registry.Errorf(registry.NotFound, "namespace %q not found", namespace)
}

// querier is what the pool and a transaction share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// constraintOf returns the name of the constraint err violated, or "".
func constraintOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}
