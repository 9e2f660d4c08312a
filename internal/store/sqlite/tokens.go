package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"trove.dev/trove/internal/registry"
)

const tokenColumns = `id, hash, namespace, user_name, scopes, description, created_at, expires_at, revoked_at`

// tokenSelect is tokenColumns followed by the token's bindings as a JSON
// array, for a query on tokens (see scanToken).
const tokenSelect = tokenColumns + `,
	(SELECT json_group_array(b.namespace) FROM token_namespaces b WHERE b.token_id = tokens.id)`

// CreateToken stores t and its bindings; Conflict if its ID or hash is
// taken, NotFound if it is bound to a namespace that does not exist.
func (x *Index) CreateToken(ctx context.Context, t registry.Token) error {
	row, err := newTokenRow(t)
	if err != nil {
		return err
	}
	return x.write(ctx, "creating token "+t.ID, func(tx *sql.Tx) error { return row.insert(ctx, tx) })
}

// tokenRow is a token encoded for its tables. namespace is the legacy
// tokens.namespace column: the first namespace of the set (see migration
// 0005).
type tokenRow struct {
	t                registry.Token
	namespaces       []string
	scopes           string
	created          int64
	expires, revoked sql.NullInt64
	namespace, user  sql.NullString
}

func newTokenRow(t registry.Token) (tokenRow, error) {
	scopes, err := json.Marshal(nonNil(t.Scopes))
	if err != nil {
		return tokenRow{}, registry.Wrap(registry.Internal, err, "encoding token scopes")
	}
	created, err := micros(t.CreatedAt, "token creation time")
	if err != nil {
		return tokenRow{}, err
	}
	expires, err := optMicros(t.ExpiresAt, "token expiry")
	if err != nil {
		return tokenRow{}, err
	}
	revoked, err := optMicros(t.RevokedAt, "token revocation time")
	if err != nil {
		return tokenRow{}, err
	}
	r := tokenRow{
		t: t, namespaces: slices.Compact(slices.Sorted(slices.Values(t.Namespaces))),
		scopes: string(scopes), created: created, expires: expires, revoked: revoked,
		user: sql.NullString{String: t.User, Valid: t.User != ""},
	}
	if len(r.namespaces) > 0 {
		r.namespace = sql.NullString{String: r.namespaces[0], Valid: true}
	}
	return r, nil
}

// insert stores the row after checking what it refers to.
func (r tokenRow) insert(ctx context.Context, tx *sql.Tx) error {
	for _, ns := range r.namespaces {
		if err := namespaceExists(ctx, tx, ns); err != nil {
			return err
		}
	}
	if r.user.Valid {
		if err := userExists(ctx, tx, r.t.User); err != nil {
			return err
		}
	}
	taken, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM tokens WHERE id = ?)`, r.t.ID)
	if err != nil {
		return err
	}
	if taken {
		return registry.Errorf(registry.Conflict, "token ID %q is taken", r.t.ID)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.t.ID, r.t.Hash, r.namespace, r.user, r.scopes, r.t.Description, r.created, r.expires, r.revoked)
	if isUnique(err) {
		return registry.Errorf(registry.Conflict, "a token with the same secret exists already")
	}
	if err != nil {
		return err
	}
	for _, ns := range r.namespaces {
		if _, err := tx.ExecContext(ctx, `INSERT INTO token_namespaces (token_id, namespace) VALUES (?, ?)`, r.t.ID, ns); err != nil {
			return err
		}
	}
	return nil
}

// TokenByHash returns the token with that hash, revoked and expired ones
// included, or NotFound.
func (x *Index) TokenByHash(ctx context.Context, hash string) (registry.Token, error) {
	t, err := scanToken(x.r.QueryRowContext(ctx, `SELECT `+tokenSelect+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
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
	query, args := `SELECT `+tokenSelect+` FROM tokens ORDER BY created_at, id`, []any{}
	if namespace != "" {
		query = `SELECT ` + tokenSelect + ` FROM tokens WHERE ` + boundTo + ` ORDER BY created_at, id`
		args = append(args, namespace, namespace)
	}
	rows, err := x.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, x.fail(err, "listing tokens")
	}
	defer rows.Close()
	var out []registry.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, x.fail(err, "listing tokens")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing tokens")
	}
	return out, nil
}

// RevokeToken sets the token's RevokedAt unless it is set already.
func (x *Index) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "revoking token %s: the revocation time is missing", id)
	}
	revoked, err := micros(at, "token revocation time")
	if err != nil {
		return err
	}
	return x.write(ctx, "revoking token "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, revoked, id)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "token %q not found", id))
	})
}

// CreateFirstToken stores t only if the tokens table is empty. SQLite
// runs one writer at a time, so the check and the insert are one step.
func (x *Index) CreateFirstToken(ctx context.Context, t registry.Token) (bool, error) {
	row, err := newTokenRow(t)
	if err != nil {
		return false, err
	}
	var created bool
	err = x.write(ctx, "creating the first token", func(tx *sql.Tx) error {
		taken, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM tokens)`)
		if err != nil || taken {
			return err
		}
		created = true
		return row.insert(ctx, tx)
	})
	return created && err == nil, err
}

// CountTokens returns how many tokens exist, revoked ones included.
func (x *Index) CountTokens(ctx context.Context) (int, error) {
	var n int
	if err := x.r.QueryRowContext(ctx, `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		return 0, x.fail(err, "counting tokens")
	}
	return n, nil
}

// boundTo is the condition on tokens that selects those bound to the
// namespace given twice as arguments: through their bindings or through
// the legacy column alone (see migration 0005).
const boundTo = `(namespace = ? OR id IN (SELECT token_id FROM token_namespaces WHERE namespace = ?))`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanToken(s scanner) (registry.Token, error) {
	var t registry.Token
	var ns, user sql.NullString
	var scopes, bindings string
	var created int64
	var expires, revoked sql.NullInt64
	if err := s.Scan(&t.ID, &t.Hash, &ns, &user, &scopes, &t.Description, &created, &expires, &revoked, &bindings); err != nil {
		return registry.Token{}, err
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return registry.Token{}, registry.Wrap(registry.Internal, err, "decoding the scopes of token "+t.ID)
	}
	if err := json.Unmarshal([]byte(bindings), &t.Namespaces); err != nil {
		return registry.Token{}, registry.Wrap(registry.Internal, err, "decoding the namespaces of token "+t.ID)
	}
	if ns.Valid {
		t.Namespaces = append(t.Namespaces, ns.String)
	}
	if len(t.Namespaces) == 0 {
		t.Namespaces = nil
	} else {
		slices.Sort(t.Namespaces)
		t.Namespaces = slices.Compact(t.Namespaces)
	}
	t.User = user.String
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = fromMicros(created), fromOptMicros(expires), fromOptMicros(revoked)
	return t, nil
}

// nonNil returns s, or an empty slice for nil, so that it encodes as [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
