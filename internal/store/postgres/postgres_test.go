package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/storetest"
	"trove.dev/trove/internal/trovetest/logbuf"
)

// open opens an index on dsn, closed when the test ends.
func open(t testing.TB, dsn string, opts ...Option) *Index {
	t.Helper()
	x, err := Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestConformance(t *testing.T) {
	pgtest.ServerDSN(t)
	storetest.TestIndex(t, func(t *testing.T) store.Index {
		return open(t, pgtest.NewSchema(t))
	})
}

// closedPort returns a loopback port on which nothing listens.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestOpenErrors(t *testing.T) {
	server := pgtest.ServerDSN(t)
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-Pa55word"
	wrongPassword := *u
	wrongPassword.User = url.UserPassword(u.User.Username(), secret)
	missingDB := *u
	missingDB.Path = "/trove_no_such_database"
	refused := *u
	refused.User = url.UserPassword(u.User.Username(), secret)
	refused.Host = fmt.Sprintf("127.0.0.1:%d", closedPort(t))

	tests := map[string]struct {
		dsn      string
		kind     registry.Kind
		contains string
	}{
		"empty":                            {"", registry.Invalid, "DSN is empty"},
		"malformed URL with a password":    {"postgres://trove:" + secret + "@127.0.0.1:notaport/db", registry.Invalid, "invalid PostgreSQL DSN"},
		"malformed key=value":              {"host=127.0.0.1 password=" + secret + " port=x", registry.Invalid, "invalid PostgreSQL DSN"},
		"unknown sslmode":                  {"postgres://trove:" + secret + "@127.0.0.1/db?sslmode=sometimes", registry.Invalid, "invalid PostgreSQL DSN"},
		"wrong password":                   {wrongPassword.String(), registry.Invalid, "refused the credentials"},
		"missing database":                 {missingDB.String(), registry.Invalid, "does not exist"},
		"nothing listens on the port":      {refused.String(), registry.Unavailable, "cannot reach PostgreSQL at 127.0.0.1:"},
		"nothing listens, key=value style": {fmt.Sprintf("host=127.0.0.1 port=%d user=x password=%s dbname=y", closedPort(t), secret), registry.Unavailable, "cannot reach PostgreSQL"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			x, err := Open(t.Context(), tc.dsn)
			if err == nil {
				x.Close()
				t.Fatal("Open succeeded")
			}
			t.Log(err)
			if !registry.IsKind(err, tc.kind) {
				t.Errorf("error kind %v, want %v: %v", registry.KindOf(err), tc.kind, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not say %q", err, tc.contains)
			}
			serverPassword, _ := u.User.Password()
			if strings.Contains(err.Error(), secret) || serverPassword != "" && strings.Contains(err.Error(), serverPassword) {
				t.Errorf("error %q contains the password", err)
			}
			if d := time.Since(start); d > DefaultConnectTimeout+5*time.Second {
				t.Errorf("Open took %s to fail, more than the connect timeout", d)
			}
		})
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	const n = 6
	idx := make([]*Index, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { idx[i], errs[i] = Open(t.Context(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer idx[i].Close()
	}
	var rows, newest int
	if err := idx[0].pool.QueryRow(t.Context(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &newest); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || newest != SchemaVersion() {
		t.Errorf("schema_migrations has %d rows up to version %d, want %d up to %d", rows, newest, len(ms), SchemaVersion())
	}
	got, err := idx[n-1].CurrentSchemaVersion(t.Context())
	if err != nil || got != SchemaVersion() {
		t.Errorf("CurrentSchemaVersion = %d, %v; want %d", got, err, SchemaVersion())
	}
}

func TestSchemaChecksWithoutMigrating(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	_, err := Open(t.Context(), dsn, WithMigrations(false))
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "trove migrate") {
		t.Errorf("Open without migrations of an empty database: %v; want Invalid asking for trove migrate", err)
	}
	x := open(t, dsn) // migrates
	open(t, dsn, WithMigrations(false))
	if _, err := x.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', now())`); err != nil {
		t.Fatal(err)
	}
	for _, migrate := range []bool{true, false} {
		_, err := Open(t.Context(), dsn, WithMigrations(migrate))
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "run a newer Trove") {
			t.Errorf("Open (migrate %v) of a newer schema: %v; want Invalid asking for a newer Trove", migrate, err)
		}
	}
}

func TestMigrationsLoad(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != ms[len(ms)-1].Version {
		t.Errorf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
}

func TestChangePayloads(t *testing.T) {
	tests := map[string]store.Change{
		"provider":  {Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
		"module":    {Kind: store.ChangeModule, Namespace: "acme", Name: "net-work_2", System: "aws"},
		"mirrored":  {Kind: store.ChangeMirrored, Host: "registry.example", Namespace: "acme", Name: "cloud"},
		"namespace": {Kind: store.ChangeNamespace, Namespace: "acme"},
		"access":    {Kind: store.ChangeAccess},
		"all":       {Kind: store.ChangeAll},
		"unknown":   {Kind: store.ChangeKind(99), Namespace: "acme"},
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			payload, err := notification(c)
			if err != nil {
				t.Fatal(err)
			}
			want := c
			if c.Kind > store.ChangeAccess {
				want = store.Change{Kind: store.ChangeAll}
			}
			if got := parseChange(payload); got != want {
				t.Errorf("parseChange(notification(%+v)) = %+v, want %+v", c, got, want)
			}
		})
	}
	// Payloads this version does not understand drop everything.
	for _, payload := range []string{"", "garbage", `{"k":"provider"}`, `{"k":"module","ns":"a","n":"b"}`, `{"k":"future","ns":"a"}`,
		`{"k":"mirrored","ns":"a","n":"b"}`, `{"k":"namespace"}`} {
		if got := parseChange(payload); got != (store.Change{Kind: store.ChangeAll}) {
			t.Errorf("parseChange(%q) = %+v, want ChangeAll", payload, got)
		}
	}
}

// watch runs WatchChanges on x until the test ends and returns the
// channel of the changes it reports.
func watch(t *testing.T, x *Index) <-chan store.Change {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan store.Change, 100)
	done := make(chan error, 1)
	go func() { done <- x.WatchChanges(ctx, func(c store.Change) { ch <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("WatchChanges returned %v after its context ended, want context.Canceled", err)
		}
	})
	return ch
}

// next returns the next change, failing the test if none comes in time.
func next(t *testing.T, ch <-chan store.Change, within time.Duration) store.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(within):
		t.Fatalf("no change reported within %s", within)
		return store.Change{}
	}
}

// TestChangeFeed watches one index while another on the same database
// writes: the notifications cross processes.
func TestChangeFeed(t *testing.T) {
	storetest.TestChangeFeed(t, func(t *testing.T) (store.Index, store.ChangeFeed) {
		dsn := pgtest.NewDatabase(t)
		return open(t, dsn), open(t, dsn)
	})
}

// An index on a database other replicas write to is not its sole
// writer: the caches of its hook keep their maximum age.
func TestNotSoleWriter(t *testing.T) {
	x := open(t, pgtest.NewDatabase(t))
	if x.SoleWriter() {
		t.Error("a PostgreSQL index reports being its database's sole writer")
	}
}

// TestRestart stops the database under an open index and a change feed,
// checks that operations fail fast with Unavailable and that the feed
// reports its loss, and that both recover by themselves once it is back.
func TestRestart(t *testing.T) {
	srv := pgtest.StartServer(t)
	x := open(t, srv.DSN)
	ctx := t.Context()
	ch := watch(t, x)
	if c := next(t, ch, 10*time.Second); c.Kind != store.ChangeAll {
		t.Fatalf("first change = %+v, want ChangeAll", c)
	}
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// The namespace's own change arrives before the outage, so that the
	// next change read below is the one the reconnection reports.
	if c := next(t, ch, 10*time.Second); c.Kind != store.ChangeNamespace || c.Namespace != "acme" {
		t.Fatalf("change of the new namespace = %+v, want ChangeNamespace acme", c)
	}

	srv.Stop(t)
	for name, op := range map[string]func() error{
		"Ping":                 func() error { return x.Ping(ctx) },
		"GetNamespace":         func() error { _, err := x.GetNamespace(ctx, "acme"); return err },
		"ListProviderVersions": func() error { _, err := x.ListProviderVersions(ctx, "acme", "cloud"); return err },
		"CreateNamespace": func() error {
			return x.CreateNamespace(ctx, registry.Namespace{Name: "other", CreatedAt: time.Now()})
		},
	} {
		start := time.Now()
		err := op()
		if !registry.IsKind(err, registry.Unavailable) {
			t.Errorf("%s with the database stopped: %v (kind %v), want Unavailable", name, err, registry.KindOf(err))
		}
		if d := time.Since(start); d > DefaultConnectTimeout {
			t.Errorf("%s took %s to fail with the database stopped", name, d)
		}
	}
	// The feed found its connection gone and said so: its watchers no
	// longer hear of changes as they commit.
	if c := next(t, ch, 30*time.Second); c.Kind != store.ChangeLost {
		t.Fatalf("change after the stop = %+v, want ChangeLost", c)
	}

	srv.Start(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := x.GetNamespace(ctx, "acme")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GetNamespace still fails after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The feed reconnected and said that changes may have been missed.
	if c := next(t, ch, 30*time.Second); c.Kind != store.ChangeAll {
		t.Fatalf("change after the restart = %+v, want ChangeAll", c)
	}
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "other", CreatedAt: time.Now()}); err != nil {
		t.Errorf("CreateNamespace after the restart: %v", err)
	}
}

// TestFeedWithoutDelivery: a listening connection that notifications do
// not reach (as behind a pooler in transaction mode; here, it listens in
// another database than the one the index writes) is found out by the
// feed's probe: it never reports a ChangeAll, so that no watcher takes
// it for a feed that tells it of every change, and it says why.
func TestFeedWithoutDelivery(t *testing.T) {
	var logs logbuf.Buffer
	x := open(t, pgtest.NewDatabase(t), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	other, err := pgx.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	x.listen.Database = other.Database
	ch := watch(t, x)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "notifications do not reach the listening connection") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning that notifications do not arrive; log: %s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case c := <-ch:
		t.Errorf("the feed reported %+v although its notifications do not arrive", c)
	default:
	}
}
