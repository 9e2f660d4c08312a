package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
)

const tokenColumns = `id, hash, namespace, user_name, scopes, description, created_at, expires_at, revoked_at`

// tokenSelect is tokenColumns followed by the token's bindings, for a
// query on tokens (see scanToken).
const tokenSelect = tokenColumns + `,
	ARRAY(SELECT b.namespace FROM token_namespaces b WHERE b.token_id = tokens.id)`

// boundTo is the condition on tokens that selects those bound to the
// namespace $1: through their bindings or through the legacy column alone
// (see migration 0005).
const boundTo = `(namespace = $1 OR id IN (SELECT token_id FROM token_namespaces WHERE namespace = $1))`

// CreateToken stores t and its bindings in one transaction; Conflict if
// its ID or hash is taken, NotFound if it is bound to a namespace or a
// user that does not exist.
func (x *Index) CreateToken(ctx context.Context, t registry.Token) error {
	args, err := tokenArgs(t)
	if err != nil {
		return err
	}
	return x.write(ctx, "creating token "+t.ID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := insertToken(ctx, tx, t, args, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`)
		return err
	})
}

// insertToken runs insert, an INSERT of t's row with args, then stores
// t's bindings if it inserted the row, and reports whether it did. A
// namespace of the set that does not exist is NotFound.
func insertToken(ctx context.Context, tx pgx.Tx, t registry.Token, args []any, insert string) (bool, error) {
	namespaces := sortedSet(t.Namespaces)
	var missing *string
	if err := tx.QueryRow(ctx, `SELECT min(n) FROM unnest($1::text[]) n WHERE NOT EXISTS (SELECT 1 FROM namespaces WHERE name = n)`,
		namespaces).Scan(&missing); err != nil {
		return false, err
	}
	if missing != nil {
		return false, notFoundNamespace(*missing)
	}
	tag, err := tx.Exec(ctx, insert, args...)
	if err != nil || tag.RowsAffected() == 0 {
		return false, tokenInsertError(t, err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO token_namespaces (token_id, namespace) SELECT $1, unnest($2::text[])`, t.ID, namespaces)
	return true, tokenInsertError(t, err)
}

// sortedSet returns names sorted and without duplicates, never nil (so
// that it encodes as an empty array).
func sortedSet(names []string) []string {
	return slices.Compact(append([]string{}, slices.Sorted(slices.Values(names))...))
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
		created, err = insertToken(ctx, tx, t, args, `INSERT INTO tokens (`+tokenColumns+`)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM tokens)`)
		return err
	})
	return created, err
}

// tokenArgs returns t's columns in the order of tokenColumns; namespace
// is the first namespace of the set (see migration 0005).
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
	if set := sortedSet(t.Namespaces); len(set) > 0 {
		ns = &set[0]
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
	case pgCode(err) == "23503": // a namespace deleted since it was checked
		return registry.Errorf(registry.NotFound, "a namespace of token %s was deleted meanwhile", t.ID)
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
	t, err := scanToken(x.pool.QueryRow(ctx, `SELECT `+tokenSelect+` FROM tokens WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Token{}, registry.Errorf(registry.NotFound, "no token has that secret")
	}
	if err != nil {
		return registry.Token{}, x.fail(err, "looking up a token")
	}
	return t, nil
}

// ListTokens returns the tokens bound to namespace (among others), or all
// tokens for "", ordered by CreatedAt then ID.
func (x *Index) ListTokens(ctx context.Context, namespace string) ([]registry.Token, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	query, args := `SELECT `+tokenSelect+` FROM tokens ORDER BY created_at, id`, []any{}
	if namespace != "" {
		query = `SELECT ` + tokenSelect + ` FROM tokens WHERE ` + boundTo + ` ORDER BY created_at, id`
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
	var scopes, bindings []string
	var expires, revoked *time.Time
	if err := row.Scan(&t.ID, &t.Hash, &ns, &user, &scopes, &t.Description, &t.CreatedAt, &expires, &revoked, &bindings); err != nil {
		return registry.Token{}, err
	}
	if ns != nil {
		bindings = append(bindings, *ns)
	}
	if len(bindings) > 0 {
		t.Namespaces = sortedSet(bindings)
	}
	if user != nil {
		t.User = *user
	}
	t.Scopes = toScopes(scopes)
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = t.CreatedAt.UTC(), fromOptTime(expires), fromOptTime(revoked)
	return t, nil
}
