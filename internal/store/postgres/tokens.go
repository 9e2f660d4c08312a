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
	created, err := checkTime(t.CreatedAt, "token creation time")
	if err != nil {
		return err
	}
	expires, err := optTime(t.ExpiresAt, "token expiry")
	if err != nil {
		return err
	}
	revoked, err := optTime(t.RevokedAt, "token revocation time")
	if err != nil {
		return err
	}
	var ns, user *string
	if t.Namespace != "" {
		ns = &t.Namespace
	}
	if t.User != "" {
		user = &t.User
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		t.ID, t.Hash, ns, user, scopeStrings(t.Scopes), t.Description, created, expires, revoked)
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
	return x.fail(err, "creating token "+t.ID)
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
