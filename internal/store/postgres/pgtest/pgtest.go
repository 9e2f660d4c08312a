// Package pgtest gives tests a real PostgreSQL: a fresh, empty database
// per test on the shared server named by TROVE_TEST_POSTGRES_DSN, and, for
// fault tests that stop and restart PostgreSQL, a private server of their
// own (so that stopping it cannot disturb other tests).
//
// Without TROVE_TEST_POSTGRES_DSN a test skips, unless
// TROVE_REQUIRE_BACKENDS=1 (the test script sets it) turns the skip into
// a failure, so that CI never passes without having run them. The script
// scripts/testenv/postgres.sh starts a suitable throwaway server and sets
// the variables.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables read by the package.
const (
	// EnvDSN is the DSN of a PostgreSQL server on which the tests may
	// create and drop databases (a superuser's, or one with CREATEDB).
	EnvDSN = "TROVE_TEST_POSTGRES_DSN"
	// EnvPgCtl is the pg_ctl binary, whose directory holds the binaries
	// StartServer uses (default: the PATH, then /usr/lib/postgresql/*/bin).
	EnvPgCtl = "TROVE_TEST_PG_CTL"
	// EnvRequire set to 1 makes a missing server a failure, not a skip.
	EnvRequire = "TROVE_REQUIRE_BACKENDS"
)

// ServerDSN returns the DSN of the test server, skipping (or, with
// TROVE_REQUIRE_BACKENDS=1, failing) the test when there is none.
func ServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1: start PostgreSQL with scripts/testenv/postgres.sh (scripts/test.sh does)", EnvDSN, EnvRequire)
		}
		t.Skipf("%s is not set: skipping a test that needs PostgreSQL (source scripts/testenv/postgres.sh to run it)", EnvDSN)
	}
	return dsn
}

// NewDatabase creates an empty database on the test server and returns
// its DSN; the database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerDSN(t)
	name := "trove_test_" + randomHex(t, 8)
	run := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := run(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Logf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return withDatabase(t, server, name)
}

// NewSchema creates an empty schema in the test server's database and
// returns a DSN whose search_path is that schema, so that an index opened
// with it creates its tables there: a fresh index at a fraction of the
// cost of a database. The schema is dropped when the test ends. Schemas
// share their database's notification channels and advisory locks; a test
// of those needs NewDatabase.
func NewSchema(t testing.TB) string {
	t.Helper()
	server := ServerDSN(t)
	name := "trove_test_" + randomHex(t, 8)
	run := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, `CREATE SCHEMA `+name); err != nil {
		t.Fatalf("pgtest: creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := run(ctx, `DROP SCHEMA IF EXISTS `+name+` CASCADE`); err != nil {
			t.Logf("pgtest: dropping schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("pgtest: %s must be a postgres:// URL", EnvDSN)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// withDatabase returns dsn with its database replaced by name.
func withDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("pgtest: %s must be a postgres:// URL", EnvDSN)
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Server is a private PostgreSQL server that one test starts, stops and
// restarts (fault tests). It is separate from the shared test server so
// that stopping it cannot break the tests of packages running in parallel.
type Server struct {
	DSN   string // superuser DSN of its postgres database (Unix socket, trust authentication)
	dir   string
	data  string
	bin   string // directory of initdb, pg_ctl and postgres
	owner string // the user to run them as when the test runs as root
}

// StartServer initializes and starts a private server, listening on a
// Unix socket in a directory of its own, from the PostgreSQL binaries of the machine (the directory of
// TROVE_TEST_PG_CTL, the PATH, or /usr/lib/postgresql/*/bin), and stops
// and deletes it when the test ends. It skips or fails as ServerDSN does
// when no PostgreSQL test environment is configured.
func StartServer(t testing.TB) *Server {
	t.Helper()
	ServerDSN(t)
	s := &Server{bin: findBin(t)}
	if os.Geteuid() == 0 { // PostgreSQL refuses to run as root
		if _, err := user.Lookup("postgres"); err != nil {
			t.Fatalf("pgtest: running as root, PostgreSQL needs a postgres user to run as: %v", err)
		}
		s.owner = "postgres"
	}
	dir, err := os.MkdirTemp("", "trove-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.data = dir, filepath.Join(dir, "data")
	t.Cleanup(func() {
		if s.Running() {
			s.pgCtl("stop", "-m", "immediate", "-w")
		}
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if s.owner != "" {
		u, _ := user.Lookup(s.owner)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.command("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	// The server listens on a Unix socket in its own directory, not on a
	// TCP port: a port freed while the server is stopped can be taken by
	// any other process of the machine (a listener on port 0, the local end
	// of an outgoing connection), and Start would then fail. The socket's
	// path is this server's alone.
	conf := fmt.Sprintf("port = %d\nlisten_addresses = ''\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\n", socketPort, dir)
	if out, err := s.command("sh", "-c", `cat > "$1"`, "sh", filepath.Join(s.data, "postgresql.auto.conf")).
		withStdin(conf).CombinedOutput(); err != nil {
		t.Fatalf("pgtest: writing the configuration: %v\n%s", err, out)
	}
	if out, err := s.pgCtl("start", "-w", "-t", "60", "-l", filepath.Join(dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		t.Fatalf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	q := url.Values{"host": {dir}, "port": {strconv.Itoa(socketPort)}, "sslmode": {"disable"}}
	s.DSN = "postgres://postgres@/postgres?" + q.Encode()
	return s
}

// socketPort is the port number of a private server: with no TCP
// listener, it only names the socket file (.s.PGSQL.<port>).
const socketPort = 5432

// findBin returns the directory of the PostgreSQL server binaries.
func findBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvPgCtl); p != "" {
		return filepath.Dir(p)
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) < versionOf(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i]
		}
	}
	t.Fatalf("pgtest: the PostgreSQL binaries (initdb, pg_ctl) are not on the PATH nor in /usr/lib/postgresql/*/bin; set %s", EnvPgCtl)
	return ""
}

func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// cmd is an *exec.Cmd that can be given a standard input.
type cmd struct{ *exec.Cmd }

func (c cmd) withStdin(s string) cmd {
	c.Stdin = strings.NewReader(s)
	return c
}

// command returns name (a PostgreSQL binary, or another program) with
// args, run as the owner of the server's files.
func (s *Server) command(name string, args ...string) cmd {
	if !strings.Contains(name, "/") && name != "sh" {
		name = filepath.Join(s.bin, name)
	}
	if s.owner != "" {
		return cmd{exec.Command("runuser", append([]string{"-u", s.owner, "--", name}, args...)...)}
	}
	return cmd{exec.Command(name, args...)}
}

// pgCtl runs pg_ctl on the server's data directory.
func (s *Server) pgCtl(args ...string) ([]byte, error) {
	return s.command("pg_ctl", append([]string{"-D", s.data}, args...)...).CombinedOutput()
}

// Stop stops the server the way an operator restarting it would
// (pg_ctl stop -m fast: open connections are terminated).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.pgCtl("stop", "-m", "fast", "-w", "-t", "60"); err != nil {
		t.Fatalf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
}

// Start starts the stopped server again on the same socket and waits until
// it accepts connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if out, err := s.pgCtl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		t.Fatalf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// Running reports whether the server runs (pg_ctl status).
func (s *Server) Running() bool {
	_, err := s.pgCtl("status")
	return err == nil
}
