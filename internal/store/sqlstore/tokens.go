package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"trove.dev/trove/internal/registry"
)

const tokenColumns = `id, hash, namespace, user_name, scopes, description, created_at, expires_at, revoked_at`

// boundTo is the condition on tokens that selects those bound to the
// namespace $1: through their bindings or through the legacy column alone
// (see migration 0005).
const boundTo = `(namespace = $1 OR id IN (SELECT token_id FROM token_namespaces WHERE namespace = $1))`

// firstTokenLock is the key of the lock that serializes CreateFirstToken
// across replicas.
const firstTokenLock int64 = 0x74726f76652e6674 // "trove.ft"

// tokenSelect is tokenColumns followed by the token's bindings, for a
// query on tokens (see scanToken).
func (x *Index) tokenSelect() string {
	return `SELECT ` + tokenColumns + `, ` +
		x.d.ArrayOf(`b.namespace`, `FROM token_namespaces b WHERE b.token_id = tokens.id`) + ` FROM tokens `
}

// CreateToken stores t and its bindings in one transaction; Conflict if
// its ID or hash is taken, NotFound if it is bound to a namespace or a
// user that does not exist.
func (x *Index) CreateToken(ctx context.Context, t registry.Token) error {
	args, err := x.tokenArgs(t)
	if err != nil {
		return err
	}
	return x.write(ctx, "creating token "+t.ID, func(ctx context.Context, tx tx) error {
		return x.insertToken(ctx, tx, t, args)
	})
}

// CreateFirstToken stores t only if the tokens table is empty. The lock
// makes the check and the insert one step for every replica.
func (x *Index) CreateFirstToken(ctx context.Context, t registry.Token) (bool, error) {
	args, err := x.tokenArgs(t)
	if err != nil {
		return false, err
	}
	var created bool
	err = x.write(ctx, "creating the first token", func(ctx context.Context, tx tx) error {
		created = false
		if err := x.d.LockTx(ctx, tx.Tx, firstTokenLock); err != nil {
			return err
		}
		taken, err := tx.exists(ctx, `SELECT EXISTS (SELECT 1 FROM tokens)`)
		if err != nil || taken {
			return err
		}
		created = true
		return x.insertToken(ctx, tx, t, args)
	})
	return created && err == nil, err
}

// tokenArgs checks t and returns its columns in the order of
// tokenColumns; namespace is the first namespace of the set (see
// migration 0005).
func (x *Index) tokenArgs(t registry.Token) ([]any, error) {
	created, err := x.time(t.CreatedAt, "token creation time")
	if err != nil {
		return nil, err
	}
	expires, err := x.optTime(t.ExpiresAt, "token expiry")
	if err != nil {
		return nil, err
	}
	revoked, err := x.optTime(t.RevokedAt, "token revocation time")
	if err != nil {
		return nil, err
	}
	var ns, user sql.NullString
	if set := sortedSet(t.Namespaces); len(set) > 0 {
		ns = sql.NullString{String: set[0], Valid: true}
	}
	if t.User != "" {
		user = sql.NullString{String: t.User, Valid: true}
	}
	scopes, err := scopeStrings(t.Scopes)
	if err != nil {
		return nil, err
	}
	return []any{t.ID, t.Hash, ns, user, x.d.Strings(scopes), t.Description, created, expires, revoked}, nil
}

// insertToken stores t's row (args) and its bindings after checking what
// they refer to.
func (x *Index) insertToken(ctx context.Context, t tx, tok registry.Token, args []any) error {
	namespaces := sortedSet(tok.Namespaces)
	for _, ns := range namespaces {
		if err := namespaceExists(ctx, t, ns); err != nil {
			return err
		}
	}
	if tok.User != "" {
		if err := userExists(ctx, t, tok.User); err != nil {
			return err
		}
	}
	taken, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM tokens WHERE id = $1)`, tok.ID)
	if err != nil {
		return err
	}
	if taken {
		return registry.Errorf(registry.Conflict, "token ID %q is taken", tok.ID)
	}
	_, err = t.exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, args...)
	if x.is(err, FailUnique) {
		return registry.Errorf(registry.Conflict, "a token with the same secret exists already")
	}
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		if _, err := t.exec(ctx, `INSERT INTO token_namespaces (token_id, namespace) VALUES ($1, $2)`, tok.ID, ns); err != nil {
			return err
		}
	}
	if tok.CI != nil {
		claims, err := json.Marshal(tok.CI)
		if err != nil {
			return err
		}
		if _, err := t.exec(ctx, `INSERT INTO token_ci_claims (token_id, claims) VALUES ($1, $2)`, tok.ID, string(claims)); err != nil {
			return err
		}
	}
	return nil
}

// TokenCIClaims returns the CI claims stored with a token, and false for
// a token stored without (or no such token).
func (x *Index) TokenCIClaims(ctx context.Context, tokenID string) (registry.CIClaims, bool, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var claims string
	err := x.row(ctx, `SELECT claims FROM token_ci_claims WHERE token_id = $1`, tokenID).Scan(&claims)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.CIClaims{}, false, nil
	}
	if err != nil {
		return registry.CIClaims{}, false, x.fail(err, "reading the CI claims of token "+tokenID)
	}
	var c registry.CIClaims
	if err := json.Unmarshal([]byte(claims), &c); err != nil {
		return registry.CIClaims{}, false, fmt.Errorf("the stored CI claims of token %s do not parse: %w", tokenID, err)
	}
	return c, true, nil
}

// TokenByHash returns the token with that hash, revoked and expired ones
// included, or NotFound.
func (x *Index) TokenByHash(ctx context.Context, hash string) (registry.Token, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	t, err := x.scanToken(x.row(ctx, x.tokenSelect()+`WHERE hash = $1`, hash))
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
	if namespace == "" {
		return x.listTokens(ctx, "listing tokens", `ORDER BY created_at, id`)
	}
	return x.listTokens(ctx, "listing tokens", `WHERE `+boundTo+` ORDER BY created_at, id`, namespace)
}

// ListUserTokens returns the tokens of a user ordered by CreatedAt then ID.
func (x *Index) ListUserTokens(ctx context.Context, user string) ([]registry.Token, error) {
	return x.listTokens(ctx, "listing the tokens of user "+user, `WHERE user_name = $1 ORDER BY created_at, id`, user)
}

// listTokens returns the tokens that the query tokenSelect()+rest selects.
func (x *Index) listTokens(ctx context.Context, what, rest string, args ...any) ([]registry.Token, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, x.tokenSelect()+rest, args...)
	out, err := collect(rows, err, x.scanToken)
	return out, x.fail(err, what)
}

// RevokeToken sets the token's RevokedAt unless it is set already.
func (x *Index) RevokeToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "revoking token %s: the revocation time is missing", id)
	}
	revoked, err := x.time(at, "token revocation time")
	if err != nil {
		return err
	}
	return x.writeChange(ctx, "revoking token "+id, &changeAccess, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2`, revoked, id)
		return affected(res, err, registry.Errorf(registry.NotFound, "token %q not found", id))
	})
}

// ExpireToken moves the token's expiry to at unless it expires earlier.
func (x *Index) ExpireToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "expiring token %s: the expiry time is missing", id)
	}
	v, err := x.time(at, "token expiry")
	if err != nil {
		return err
	}
	return x.writeChange(ctx, "expiring token "+id, &changeAccess, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE tokens SET expires_at = CASE WHEN expires_at IS NOT NULL AND expires_at < $1
			THEN expires_at ELSE $1 END WHERE id = $2`, v, id)
		return affected(res, err, registry.Errorf(registry.NotFound, "token %q not found", id))
	})
}

// CountTokens returns how many tokens exist, revoked ones included.
func (x *Index) CountTokens(ctx context.Context) (int, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var n int
	if err := x.row(ctx, `SELECT count(*) FROM tokens`).Scan(&n); err != nil {
		return 0, x.fail(err, "counting tokens")
	}
	return n, nil
}

// scanToken scans the columns of tokenSelect.
func (x *Index) scanToken(s scanner) (registry.Token, error) {
	var t registry.Token
	var ns, user sql.NullString
	var scopes, bindings []string
	if err := s.Scan(&t.ID, &t.Hash, &ns, &user, x.d.ScanStrings(&scopes), &t.Description,
		at(&t.CreatedAt), at(&t.ExpiresAt), at(&t.RevokedAt), x.d.ScanStrings(&bindings)); err != nil {
		return registry.Token{}, err
	}
	if ns.Valid {
		bindings = append(bindings, ns.String)
	}
	if len(bindings) > 0 {
		t.Namespaces = sortedSet(bindings)
	}
	t.User = user.String
	t.Scopes = toScopes(scopes)
	return t, nil
}

// sortedSet returns names sorted and without duplicates, never nil (so
// that it encodes as an empty list).
func sortedSet(names []string) []string {
	return slices.Compact(append([]string{}, slices.Sorted(slices.Values(names))...))
}

// scopeStrings encodes scopes as a list of strings. Invalid if one of
// them is not a registry scope (registry.ParseScope).
func scopeStrings(scopes []registry.Scope) ([]string, error) {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		if _, err := registry.ParseScope(string(s)); err != nil {
			return nil, err
		}
		out[i] = string(s)
	}
	return out, nil
}

// toScopes decodes a list of scopes; an empty list is nil. A scope this
// version does not know (only another version can have stored it) is
// left out: it would grant nothing (registry.Scope.Includes).
func toScopes(s []string) []registry.Scope {
	var out []registry.Scope
	for _, v := range s {
		if scope, err := registry.ParseScope(v); err == nil {
			out = append(out, scope)
		}
	}
	return out
}
