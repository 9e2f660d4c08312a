package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

var _ store.Access = (*Index)(nil)

// userExists fails with NotFound unless the user exists.
func userExists(ctx context.Context, tx *sql.Tx, name string) error {
	ok, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM users WHERE name = ?)`, name)
	if err == nil && !ok {
		err = registry.Errorf(registry.NotFound, "user %q not found", name)
	}
	return err
}

// CreateUser stores u; Conflict if the name is taken.
func (x *Index) CreateUser(ctx context.Context, u registry.User) error {
	created, err := micros(u.CreatedAt, "user creation time")
	if err != nil {
		return err
	}
	return x.write(ctx, "creating user "+u.Name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO users (name, password_hash, admin, disabled, created_at) VALUES (?, ?, ?, ?, ?)`,
			u.Name, u.PasswordHash, u.Admin, u.Disabled, created)
		if isUnique(err) {
			return registry.Errorf(registry.Conflict, "user %q exists already", u.Name)
		}
		return err
	})
}

const userColumns = `name, password_hash, admin, disabled, created_at`

func scanUser(s scanner) (registry.User, error) {
	var u registry.User
	var created int64
	if err := s.Scan(&u.Name, &u.PasswordHash, &u.Admin, &u.Disabled, &created); err != nil {
		return registry.User{}, err
	}
	u.CreatedAt = fromMicros(created)
	return u, nil
}

// GetUser returns the user, or NotFound.
func (x *Index) GetUser(ctx context.Context, name string) (registry.User, error) {
	u, err := scanUser(x.r.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.User{}, registry.Errorf(registry.NotFound, "user %q not found", name)
	}
	if err != nil {
		return registry.User{}, x.fail(err, "reading user "+name)
	}
	return u, nil
}

// ListUsers returns every user ordered by name.
func (x *Index) ListUsers(ctx context.Context) ([]registry.User, error) {
	rows, err := x.r.QueryContext(ctx, `SELECT `+userColumns+` FROM users ORDER BY name`)
	if err != nil {
		return nil, x.fail(err, "listing users")
	}
	defer rows.Close()
	var out []registry.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, x.fail(err, "listing users")
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing users")
	}
	return out, nil
}

// UpdateUser replaces the password hash and the admin and disabled flags.
func (x *Index) UpdateUser(ctx context.Context, u registry.User) error {
	return x.write(ctx, "updating user "+u.Name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ?, admin = ?, disabled = ? WHERE name = ?`,
			u.PasswordHash, u.Admin, u.Disabled, u.Name)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "user %q not found", u.Name))
	})
}

// SetMembership adds a membership or changes its role.
func (x *Index) SetMembership(ctx context.Context, m registry.Membership) error {
	if _, err := registry.ParseRole(string(m.Role)); err != nil {
		return err
	}
	created, err := micros(m.CreatedAt, "membership creation time")
	if err != nil {
		return err
	}
	return x.write(ctx, "setting the role of user "+m.User+" in namespace "+m.Namespace, func(tx *sql.Tx) error {
		if err := userExists(ctx, tx, m.User); err != nil {
			return err
		}
		if err := namespaceExists(ctx, tx, m.Namespace); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO memberships (user_name, namespace, role, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (user_name, namespace) DO UPDATE SET role = excluded.role`,
			m.User, m.Namespace, string(m.Role), created)
		return err
	})
}

// DeleteMembership removes a membership; NotFound if there is none.
func (x *Index) DeleteMembership(ctx context.Context, user, namespace string) error {
	return x.write(ctx, "removing user "+user+" from namespace "+namespace, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM memberships WHERE user_name = ? AND namespace = ?`, user, namespace)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "user %q is not a member of namespace %q", user, namespace))
	})
}

// ListMemberships returns the memberships matching user and namespace
// ("" matches any), ordered by namespace then user.
func (x *Index) ListMemberships(ctx context.Context, user, namespace string) ([]registry.Membership, error) {
	rows, err := x.r.QueryContext(ctx, `SELECT user_name, namespace, role, created_at FROM memberships
		WHERE (? = '' OR user_name = ?) AND (? = '' OR namespace = ?) ORDER BY namespace, user_name`,
		user, user, namespace, namespace)
	if err != nil {
		return nil, x.fail(err, "listing memberships")
	}
	defer rows.Close()
	var out []registry.Membership
	for rows.Next() {
		var m registry.Membership
		var created int64
		if err := rows.Scan(&m.User, &m.Namespace, &m.Role, &created); err != nil {
			return nil, x.fail(err, "listing memberships")
		}
		m.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing memberships")
	}
	return out, nil
}

// ListUserTokens returns the tokens of a user ordered by CreatedAt then ID.
func (x *Index) ListUserTokens(ctx context.Context, user string) ([]registry.Token, error) {
	rows, err := x.r.QueryContext(ctx, `SELECT `+tokenSelect+` FROM tokens WHERE user_name = ? ORDER BY created_at, id`, user)
	if err != nil {
		return nil, x.fail(err, "listing the tokens of user "+user)
	}
	defer rows.Close()
	var out []registry.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, x.fail(err, "listing the tokens of user "+user)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing the tokens of user "+user)
	}
	return out, nil
}

// ExpireToken moves the token's expiry to at unless it expires earlier.
func (x *Index) ExpireToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "expiring token %s: the expiry time is missing", id)
	}
	v, err := micros(at, "token expiry")
	if err != nil {
		return err
	}
	return x.write(ctx, "expiring token "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET expires_at = MIN(COALESCE(expires_at, ?), ?) WHERE id = ?`, v, v, id)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "token %q not found", id))
	})
}

// CreateAuthCode stores an authorization code.
func (x *Index) CreateAuthCode(ctx context.Context, c registry.AuthCode) error {
	scopes, err := json.Marshal(nonNil(c.Scopes))
	if err != nil {
		return registry.Wrap(registry.Internal, err, "encoding authorization code scopes")
	}
	created, err := micros(c.CreatedAt, "authorization code creation time")
	if err != nil {
		return err
	}
	expires, err := micros(c.ExpiresAt, "authorization code expiry")
	if err != nil {
		return err
	}
	used, err := optMicros(c.UsedAt, "authorization code use time")
	if err != nil {
		return err
	}
	return x.write(ctx, "storing an authorization code", func(tx *sql.Tx) error {
		if err := userExists(ctx, tx, c.User); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO auth_codes (hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.Hash, c.ClientID, c.RedirectURI, c.Challenge, c.User, string(scopes), c.TokenID, created, expires, used)
		if isUnique(err) {
			return registry.Errorf(registry.Conflict, "an authorization code with the same hash exists already")
		}
		return err
	})
}

// UseAuthCode marks a code as used and returns it as it was before.
func (x *Index) UseAuthCode(ctx context.Context, hash string, at time.Time) (registry.AuthCode, error) {
	usedAt, err := micros(at, "authorization code use time")
	if err != nil {
		return registry.AuthCode{}, err
	}
	var c registry.AuthCode
	err = x.write(ctx, "using an authorization code", func(tx *sql.Tx) error {
		var scopes string
		var created, expires int64
		var used sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at
			FROM auth_codes WHERE hash = ?`, hash).
			Scan(&c.Hash, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.User, &scopes, &c.TokenID, &created, &expires, &used)
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.NotFound, "no such authorization code")
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(scopes), &c.Scopes); err != nil {
			return registry.Wrap(registry.Internal, err, "decoding the scopes of an authorization code")
		}
		c.CreatedAt, c.ExpiresAt, c.UsedAt = fromMicros(created), fromMicros(expires), fromOptMicros(used)
		if used.Valid {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE auth_codes SET used_at = ? WHERE hash = ?`, usedAt, hash)
		return err
	})
	if err != nil {
		return registry.AuthCode{}, err
	}
	return c, nil
}

// DeleteAuthCodes removes the codes that expired before the given time.
func (x *Index) DeleteAuthCodes(ctx context.Context, expiredBefore time.Time) (int, error) {
	before, err := micros(expiredBefore, "authorization code expiry")
	if err != nil {
		return 0, err
	}
	var n int64
	err = x.write(ctx, "deleting expired authorization codes", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM auth_codes WHERE expires_at < ?`, before)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// AppendAudit stores an audit event and returns its ID.
func (x *Index) AppendAudit(ctx context.Context, e registry.AuditEvent) (int64, error) {
	at, err := micros(e.Time, "audit event time")
	if err != nil {
		return 0, err
	}
	var id int64
	err = x.write(ctx, "appending to the audit log", func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO audit_events (at, action, actor, source_addr, namespace, target, details)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			at, e.Action, e.Actor, e.SourceAddr, e.Namespace, e.Target, e.Details).Scan(&id)
	})
	return id, err
}

// Bounds of an audit listing.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// ListAudit returns the events matching f, newest first.
func (x *Index) ListAudit(ctx context.Context, f registry.AuditFilter) ([]registry.AuditEvent, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) {
		where = append(where, cond)
		args = append(args, arg)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Namespace != "" {
		add("namespace = ?", f.Namespace)
	}
	if !f.Since.IsZero() {
		v, err := micros(f.Since, "audit filter start")
		if err != nil {
			return nil, err
		}
		add("at >= ?", v)
	}
	if !f.Until.IsZero() {
		v, err := micros(f.Until, "audit filter end")
		if err != nil {
			return nil, err
		}
		add("at < ?", v)
	}
	if f.BeforeID > 0 {
		add("id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultAuditLimit
	}
	limit = min(limit, maxAuditLimit)
	query := `SELECT id, at, action, actor, source_addr, namespace, target, details FROM audit_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := x.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, x.fail(err, "reading the audit log")
	}
	defer rows.Close()
	var out []registry.AuditEvent
	for rows.Next() {
		var e registry.AuditEvent
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Action, &e.Actor, &e.SourceAddr, &e.Namespace, &e.Target, &e.Details); err != nil {
			return nil, x.fail(err, "reading the audit log")
		}
		e.Time = fromMicros(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "reading the audit log")
	}
	return out, nil
}
