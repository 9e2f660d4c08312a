package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"trove.dev/trove/internal/registry"
)

// Secret returns the secret stored under name, storing generate()'s result
// first if there is none. Of racing callers, all get the first stored value.
func (x *Index) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := x.r.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, x.fail(err, "reading secret "+name)
	}
	fresh, err := generate()
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "generating secret "+name)
	}
	if len(fresh) == 0 {
		return nil, registry.Errorf(registry.Internal, "generating secret %s: the generated secret is empty", name)
	}
	err = x.write(ctx, "storing secret "+name, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
	})
	if err != nil {
		return nil, err
	}
	return value, nil
}
