package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// TestTerminatedConnectionsDropped ends the sessions of an index's pooled
// connections as PostgreSQL's shutdown does (admin_shutdown, 57P01): an
// operation that meets one fails as Unavailable, and the pool keeps none
// of the others for the next operations.
func TestTerminatedConnectionsDropped(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	x := open(t, dsn)
	ctx := t.Context()
	var held []*pgxpool.Conn
	var pids []uint32
	for range 4 { // four connections in the pool
		c, err := x.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		pids = append(pids, c.Conn().PgConn().PID())
	}
	for _, c := range held {
		c.Release()
	}

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, pid := range pids {
		var done bool
		if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, int32(pid)).Scan(&done); err != nil || !done {
			t.Fatalf("terminating session %d: %v, %v", pid, done, err)
		}
	}

	// A connection idle for more than a second is pinged before use, and
	// the ping finds it closed; one idle for less is used, and its query
	// meets the termination.
	if err := x.Ping(ctx); err != nil && !registry.IsKind(err, registry.Unavailable) {
		t.Fatalf("Ping after the sessions ended: %v, want success or Unavailable", err)
	}
	terminated := map[uint32]bool{}
	for _, pid := range pids {
		terminated[pid] = true
	}
	for _, c := range x.pool.AcquireAllIdle(ctx) {
		if pid := c.Conn().PgConn().PID(); terminated[pid] {
			t.Errorf("the pool still holds the connection of the ended session %d", pid)
		}
		c.Release()
	}
	if err := x.Ping(ctx); err != nil {
		t.Errorf("Ping after the first: %v", err)
	}
}
