package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
)

const tokenColumns = `id, hash, namespace, user_name, scopes, description, created_at, expires_at, revoked_at`

// CreateToken stores t; Conflict if its ID or hash is taken, NotFound if
// it is bound to a namespace or a user that does not exist.
func (x *Index) CreateToken(ctx context.Context, t registry.Token) error {
	args, err := tokenArgs(t)
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, args...)
	return x.fail(tokenInsertError(t, err), "creating token "+t.ID)
}

// firstTokenLock is the key of the transaction-level advisory lock that
// serializes CreateFirstToken across replicas.
const firstTokenLock int64 = 0x74726f76652e6674 // "trove.ft"

// CreateFirstToken stores t only if the tokens table is empty. The
// advisory lock makes the check and the insert one step for every
// replica: under READ COMMITTED two plain INSERT ... WHERE NOT EXISTS
// could both see an empty table.
func (x *Index) CreateFirstToken(ctx context.Context, t registry.Token) (bool, error) {
	args, err := tokenArgs(t)
	if err != nil {
		return false, err
	}
	var created bool
	err = x.write(ctx, "creating the first token", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, firstTokenLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM tokens)`, args...)
		if err != nil {
			return tokenInsertError(t, err)
		}
		created = tag.RowsAffected() == 1
		return nil
	})
	return created, err
}

// tokenArgs returns t's columns in the order of tokenColumns.
func tokenArgs(t registry.Token) ([]any, error) {
	created, err := checkTime(t.CreatedAt, "token creation time")
	if err != nil {
		return nil, err
	}
	expires, err := optTime(t.ExpiresAt, "token expiry")
	if err != nil {
		return nil, err
	}
	revoked, err := optTime(t.RevokedAt, "token revocation time")
	if err != nil {
		return nil, err
	}
	var ns, user *string
	if t.Namespace != "" {
		ns = &t.Namespace
	}
	if t.User != "" {
		user = &t.User
	}
	return []any{t.ID, t.Hash, ns, user, scopeStrings(t.Scopes), t.Description, created, expires, revoked}, nil
}

// tokenInsertError translates the constraint violations of inserting t.
func tokenInsertError(t registry.Token, err error) error {
	switch {
	case pgCode(err) == "23503" && strings.Contains(constraintOf(err), "user"):
		return notFoundUser(t.User)
	case pgCode(err) == "23503":
		return notFoundNamespace(t.Namespace)
	case pgCode(err) == "23505" && constraintOf(err) == "tokens_pkey":
		return registry.Errorf(registry.Conflict, "token ID %q is taken", t.ID)
	case pgCode(err) == "23505":
		return registry.Errorf(registry.Conflict, "a token with the same secret exists already")
	}
	return err
}

// TokenByHash returns the token with that hash, revoked and expired ones
// included, or NotFound.
func (x *Index) TokenByHash(ctx context.Context, hash string) (registry.Token, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	t, err := scanToken(x.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Token{}, registry.Errorf(registry.NotFound, "no token has that secret")
	}
	if err != nil {
		return registry.Token{}, x.fail(err, "looking up a token")
	}
	return t, nil
}

// ListTokens returns the tokens bound to namespace, or all tokens for "",
// ordered by CreatedAt then ID.
func (x *Index) ListTokens(ctx context.Context, namespace string) ([]registry.Token, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	query, args := `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`, []any{}
	if namespace != "" {
		query = `SELECT ` + tokenColumns + ` FROM tokens WHERE namespace = $1 ORDER BY created_at, id`
		args = append(args, namespace)
	}
	rows, err := x.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, x.fail(err, "listing tokens")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.Token, error) { return scanToken(row) })
	if err != nil {
		return nil, x.fail(err, "listing tokens")
	}
	return out, nil
}

// RevokeToken sets the token's RevokedAt unless it is set already.
func (x *Index) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "revoking token %s: the revocation time is missing", id)
	}
	revoked, err := checkTime(at, "token revocation time")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, revoked, id)
	if err != nil {
		return x.fail(err, "revoking token "+id)
	}
	if tag.RowsAffected() == 0 {
		return registry.Errorf(registry.NotFound, "token %q not found", id)
	}
	return nil
}

// CountTokens returns how many tokens exist, revoked ones included.
func (x *Index) CountTokens(ctx context.Context) (int, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	var n int
	if err := x.pool.QueryRow(ctx, `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		return 0, x.fail(err, "counting tokens")
	}
	return n, nil
}

func scanToken(row pgx.Row) (registry.Token, error) {
	var t registry.Token
	var ns, user *string
	var scopes []string
	var expires, revoked *time.Time
	if err := row.Scan(&t.ID, &t.Hash, &ns, &user, &scopes, &t.Description, &t.CreatedAt, &expires, &revoked); err != nil {
		return registry.Token{}, err
	}
	if ns != nil {
		t.Namespace = *ns
	}
	if user != nil {
		t.User = *user
	}
	t.Scopes = toScopes(scopes)
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = t.CreatedAt.UTC(), fromOptTime(expires), fromOptTime(revoked)
	return t, nil
}
