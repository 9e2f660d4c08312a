// Package postgres is Trove's scale-out metadata index: store.Index on
// PostgreSQL through pgx, for several Trove replicas sharing one database.
// The index itself is sqlstore's, run with this package's dialect over
// pgx's database/sql adapter; this package opens the pool, applies the
// migrations and runs the change feed.
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
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlstore"
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

// Index is a store.Index on PostgreSQL: sqlstore with the PostgreSQL
// dialect over pgx's database/sql adapter on pool, which also serves the
// migrations and the LISTEN connection of WatchChanges. It is safe for
// concurrent use.
type Index struct {
	*sqlstore.Index
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
	// That ping misses a restart shorter than a second; the first query
	// that learns of it drops the pool's other connections too.
	gone := &serverGone{}
	cfg.ConnConfig.Tracer = gone

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "invalid PostgreSQL DSN: %s", scrub(err.Error(), cfg.ConnConfig.Password))
	}
	gone.pool.Store(pool)
	closing, cancel := context.WithCancel(context.Background())
	x := &Index{
		Index:   sqlstore.New(stdlib.OpenDBFromPool(pool), dialect{}, sqlstore.Options{Timeout: o.timeout, Rows: rowReader{pool}}),
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

// serverGone is the pool's query tracer: when a query fails because the
// server ended its connection as it does every connection when it shuts
// down or restarts (admin_shutdown, crash_shutdown, cannot_connect_now),
// it resets the pool, so that the idle connections that server closed are
// not handed to the next requests (pgxpool pings only connections idle
// for more than a second, so a quick restart would fail a request per
// such connection). The request that met the failure still fails, as
// Unavailable; the following ones connect again.
type serverGone struct{ pool atomic.Pointer[pgxpool.Pool] }

func (g *serverGone) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (g *serverGone) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	switch pgCode(data.Err) {
	case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
		if p := g.pool.Load(); p != nil {
			p.Reset()
		}
	}
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
		case pgErr.Code == codeInvalidPassword || pgErr.Code == codeInvalidAuthorization:
			return registry.Errorf(registry.Invalid,
				"PostgreSQL at %s refused the credentials: check the user and password in the DSN (--postgres-dsn / TROVE_POSTGRES_DSN) and the server's pg_hba.conf: %s", x.target, detail)
		case pgErr.Code == codeInvalidCatalogName:
			return registry.Errorf(registry.Invalid,
				"database %q does not exist on PostgreSQL at %s: create it (CREATE DATABASE ...) or fix the database name in the DSN: %s", x.listen.Database, x.target, detail)
		}
	}
	return registry.Errorf(registry.Unavailable,
		"cannot reach PostgreSQL at %s: check that it runs and that the DSN's host, port and sslmode are right: %s", x.target, detail)
}

// Close closes the database and stops WatchChanges. Later calls do
// nothing.
func (x *Index) Close() error {
	x.closeErr.Do(func() {
		x.close()
		x.Index.Close()
		x.pool.Close()
	})
	return nil
}

// opContext bounds one operation by the query timeout.
func (x *Index) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, x.timeout)
}

// fail classifies err as a *registry.Error (see sqlstore.Classify); once
// the index is closed, failures are Unavailable.
func (x *Index) fail(err error, what string) error {
	var re *registry.Error
	if err != nil && !errors.As(err, &re) && x.closing.Err() != nil {
		return registry.Wrap(registry.Unavailable, err, what+": the index is closed")
	}
	return sqlstore.Classify(dialect{}, err, what)
}

// SQLSTATE codes the index tells apart (PostgreSQL's Appendix A).
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeUndefinedTable       = "42P01"
	codeUndefinedColumn      = "42703"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeInvalidPassword      = "28P01"
	codeInvalidAuthorization = "28000"
	codeInvalidCatalogName   = "3D000" // the database does not exist
	codeReadOnlyTransaction  = "25006" // a standby or a read-only server
	codeAdminShutdown        = "57P01" // the server is shutting down (or an administrator ended the session)
	codeCrashShutdown        = "57P02" // the server restarts after a crash
	codeCannotConnectNow     = "57P03" // the server is starting or shutting down
	// Classes of codes.
	classConnection    = "08" // connection_exception
	classResources     = "53" // insufficient_resources (too many connections, disk full)
	classOperator      = "57" // operator_intervention (shutdown, query canceled)
	classAuthorization = "28" // invalid_authorization_specification
	classRollback      = "40" // transaction_rollback
)

// dialect is PostgreSQL's sqlstore.Dialect: writers run concurrently in
// READ COMMITTED transactions and lock the rows they change next; times
// are timestamptz; lists are text[].
type dialect struct{}

func (dialect) Rebind(query string) string { return query }

func (dialect) Time(t time.Time) any { return t.UTC().Truncate(time.Microsecond) }

func (dialect) Strings(s []string) any {
	if s == nil {
		return []string{}
	}
	return s
}

func (dialect) ScanStrings(dst *[]string) any { return textArray{dst} }

func (dialect) ArrayOf(column, rest string) string {
	return `ARRAY(SELECT ` + column + ` ` + rest + `)`
}

// Contains uses strpos, which has no wildcards; lower() under the "C"
// collation folds only ASCII letters.
func (dialect) Contains(haystack, needle string) string {
	return `strpos(lower(` + haystack + ` COLLATE "C"), lower(` + needle + ` COLLATE "C")) > 0`
}

func (dialect) ForUpdate() string { return " FOR UPDATE" }

// LockTx takes a transaction-level advisory lock.
func (dialect) LockTx(ctx context.Context, tx *sql.Tx, key int64) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
	return err
}

// LockTxShared takes the shared side of a transaction-level advisory lock.
func (dialect) LockTxShared(ctx context.Context, tx *sql.Tx, key int64) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, key)
	return err
}

// Notify sends c on changeChannel, delivered when tx commits.
func (dialect) Notify(ctx context.Context, tx *sql.Tx, c store.Change) error {
	note, err := notification(c)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, changeChannel, note)
	return err
}

// Classify reads the SQLSTATE of a PostgreSQL error, and tells a database
// that cannot be reached from a failed statement.
func (dialect) Classify(err error) (sqlstore.Failure, string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		code := pgErr.Code
		switch {
		case code == codeUniqueViolation:
			return sqlstore.FailUnique, ""
		case code == codeForeignKeyViolation:
			return sqlstore.FailForeignKey, ""
		case code == codeSerializationFailure || code == codeDeadlockDetected:
			return sqlstore.FailRetry, "PostgreSQL refused it"
		case code == codeUndefinedTable || code == codeUndefinedColumn:
			return sqlstore.FailSchema, "the index schema is missing or outdated (run trove migrate)"
		case strings.HasPrefix(code, classConnection), strings.HasPrefix(code, classResources),
			strings.HasPrefix(code, classOperator), strings.HasPrefix(code, classAuthorization),
			strings.HasPrefix(code, classRollback), code == codeInvalidCatalogName, code == codeReadOnlyTransaction:
			return sqlstore.FailUnavailable, "PostgreSQL refused it"
		}
		return sqlstore.FailOther, ""
	}
	if connectionFailure(err) {
		return sqlstore.FailUnavailable, "PostgreSQL is not reachable"
	}
	return sqlstore.FailOther, ""
}

// connectionFailure reports whether err means the database could not be
// reached or the connection broke, rather than a failed statement.
func connectionFailure(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err)
}

// textArray scans a text[] column, which the database/sql adapter returns
// in PostgreSQL's text format.
type textArray struct{ dst *[]string }

// typeMaps holds pgtype.Maps, which are not safe for concurrent use.
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

func (a textArray) Scan(src any) error {
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	return m.SQLScanner(a.dst).Scan(src)
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
