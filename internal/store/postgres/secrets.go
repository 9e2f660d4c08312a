package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
)

// Secret returns the secret stored under name, storing generate()'s result
// first if there is none. Of racing callers, all get the first stored
// value: the insert does nothing on a conflict and the value is read back.
func (x *Index) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	var value []byte
	err := x.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, x.fail(err, "reading secret "+name)
	}
	fresh, err := generate()
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "generating secret "+name)
	}
	if len(fresh) == 0 {
		return nil, registry.Errorf(registry.Internal, "generating secret %s: the generated secret is empty", name)
	}
	// Two statements: the SELECT sees a row a concurrent caller committed
	// while this INSERT waited for it (READ COMMITTED takes a new snapshot
	// per statement).
	if _, err := x.pool.Exec(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
		return nil, x.fail(err, "storing secret "+name)
	}
	if err := x.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value); err != nil {
		return nil, x.fail(err, "reading secret "+name)
	}
	return value, nil
}
