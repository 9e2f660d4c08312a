package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// auditLock is the key of the lock that serializes AppendAudit, so that
// event IDs increase in commit order and a reader paging with BeforeID
// never misses an event committed late.
const auditLock int64 = 0x74726f76652e6175 // "trove.au"

// userExists fails with NotFound unless the user exists.
func userExists(ctx context.Context, t tx, name string) error {
	ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE name = $1)`, name)
	if err == nil && !ok {
		err = notFoundUser(name)
	}
	return err
}

func notFoundUser(name string) error {
	return registry.Errorf(registry.NotFound, "user %q not found", name)
}

// CreateUser stores u; Conflict if the name is taken.
func (x *Index) CreateUser(ctx context.Context, u registry.User) error {
	created, err := x.time(u.CreatedAt, "user creation time")
	if err != nil {
		return err
	}
	return x.write(ctx, "creating user "+u.Name, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO users (name, password_hash, admin, disabled, created_at) VALUES ($1, $2, $3, $4, $5)`,
			u.Name, u.PasswordHash, u.Admin, u.Disabled, created)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "user %q exists already", u.Name)
		}
		return err
	})
}

const userSelect = `SELECT name, password_hash, admin, disabled, created_at FROM users `

func scanUser(s scanner) (registry.User, error) {
	var u registry.User
	err := s.Scan(&u.Name, &u.PasswordHash, &u.Admin, &u.Disabled, at(&u.CreatedAt))
	return u, err
}

// GetUser returns the user, or NotFound.
func (x *Index) GetUser(ctx context.Context, name string) (registry.User, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	u, err := scanUser(x.row(ctx, userSelect+`WHERE name = $1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.User{}, notFoundUser(name)
	}
	if err != nil {
		return registry.User{}, x.fail(err, "reading user "+name)
	}
	return u, nil
}

// ListUsers returns every user ordered by name.
func (x *Index) ListUsers(ctx context.Context) ([]registry.User, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, userSelect+`ORDER BY name`)
	out, err := collect(rows, err, scanUser)
	return out, x.fail(err, "listing users")
}

// UpdateUser replaces the password hash and the admin and disabled flags.
func (x *Index) UpdateUser(ctx context.Context, u registry.User) error {
	return x.writeChange(ctx, "updating user "+u.Name, &changeAccess, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE users SET password_hash = $1, admin = $2, disabled = $3 WHERE name = $4`,
			u.PasswordHash, u.Admin, u.Disabled, u.Name)
		return affected(res, err, notFoundUser(u.Name))
	})
}

// SetMembership adds a membership or changes its role (keeping its
// CreatedAt); NotFound if the user or the namespace does not exist.
func (x *Index) SetMembership(ctx context.Context, m registry.Membership) error {
	if _, err := registry.ParseRole(string(m.Role)); err != nil {
		return err
	}
	created, err := x.time(m.CreatedAt, "membership creation time")
	if err != nil {
		return err
	}
	return x.writeChange(ctx, "setting the role of user "+m.User+" in namespace "+m.Namespace, &changeAccess, func(ctx context.Context, t tx) error {
		if err := userExists(ctx, t, m.User); err != nil {
			return err
		}
		if err := namespaceExists(ctx, t, m.Namespace); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO memberships (user_name, namespace, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_name, namespace) DO UPDATE SET role = excluded.role`,
			m.User, m.Namespace, string(m.Role), created)
		return err
	})
}

// DeleteMembership removes a membership; NotFound if there is none.
func (x *Index) DeleteMembership(ctx context.Context, user, namespace string) error {
	return x.writeChange(ctx, "removing user "+user+" from namespace "+namespace, &changeAccess, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM memberships WHERE user_name = $1 AND namespace = $2`, user, namespace)
		return affected(res, err, registry.Errorf(registry.NotFound, "user %q is not a member of namespace %q", user, namespace))
	})
}

// ListMemberships returns the memberships matching user and namespace
// ("" matches any), ordered by namespace then user.
func (x *Index) ListMemberships(ctx context.Context, user, namespace string) ([]registry.Membership, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT user_name, namespace, role, created_at FROM memberships
		WHERE ($1 = '' OR user_name = $1) AND ($2 = '' OR namespace = $2) ORDER BY namespace, user_name`, user, namespace)
	out, err := collect(rows, err, func(s scanner) (registry.Membership, error) {
		var m registry.Membership
		var role string
		err := s.Scan(&m.User, &m.Namespace, &role, at(&m.CreatedAt))
		m.Role = registry.Role(role)
		return m, err
	})
	return out, x.fail(err, "listing memberships")
}

// CreateAuthCode stores an authorization code; Conflict if its hash is
// taken, NotFound if its user does not exist.
func (x *Index) CreateAuthCode(ctx context.Context, c registry.AuthCode) error {
	created, err := x.time(c.CreatedAt, "authorization code creation time")
	if err != nil {
		return err
	}
	expires, err := x.time(c.ExpiresAt, "authorization code expiry")
	if err != nil {
		return err
	}
	used, err := x.optTime(c.UsedAt, "authorization code use time")
	if err != nil {
		return err
	}
	scopes, err := scopeStrings(c.Scopes)
	if err != nil {
		return err
	}
	return x.write(ctx, "storing an authorization code", func(ctx context.Context, t tx) error {
		if err := userExists(ctx, t, c.User); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO auth_codes (hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			c.Hash, c.ClientID, c.RedirectURI, c.Challenge, c.User, x.d.Strings(scopes), c.TokenID, created, expires, used)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "an authorization code with the same hash exists already")
		}
		return err
	})
}

// UseAuthCode marks a code as used and returns it as it was before. The
// row is locked, so of two concurrent calls exactly one sees it unused.
func (x *Index) UseAuthCode(ctx context.Context, hash string, when time.Time) (registry.AuthCode, error) {
	usedAt, err := x.time(when, "authorization code use time")
	if err != nil {
		return registry.AuthCode{}, err
	}
	var c registry.AuthCode
	err = x.write(ctx, "using an authorization code", func(ctx context.Context, t tx) error {
		c = registry.AuthCode{}
		var scopes []string
		err := t.row(ctx, `SELECT hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at
			FROM auth_codes WHERE hash = $1`+x.d.ForUpdate(), hash).
			Scan(&c.Hash, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.User, x.d.ScanStrings(&scopes), &c.TokenID,
				at(&c.CreatedAt), at(&c.ExpiresAt), at(&c.UsedAt))
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.NotFound, "no such authorization code")
		}
		if err != nil {
			return err
		}
		c.Scopes = toScopes(scopes)
		if !c.UsedAt.IsZero() {
			return nil
		}
		_, err = t.exec(ctx, `UPDATE auth_codes SET used_at = $1 WHERE hash = $2`, usedAt, hash)
		return err
	})
	if err != nil {
		return registry.AuthCode{}, err
	}
	return c, nil
}

// DeleteAuthCodes removes the codes that expired before the given time.
func (x *Index) DeleteAuthCodes(ctx context.Context, expiredBefore time.Time) (int, error) {
	before, err := x.time(expiredBefore, "authorization code expiry")
	if err != nil {
		return 0, err
	}
	var n int64
	err = x.write(ctx, "deleting expired authorization codes", func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM auth_codes WHERE expires_at < $1`, before)
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
	if _, err := x.time(e.Time, "audit event time"); err != nil {
		return 0, err
	}
	var id int64
	err := x.write(ctx, "appending to the audit log", func(ctx context.Context, t tx) error {
		var err error
		id, err = x.appendAudit(ctx, t, e)
		return err
	})
	return id, err
}

// appendAudit stores an audit event in t (AppendAudit, store.Effects)
// and returns its ID. It takes the audit lock, held until t ends.
func (x *Index) appendAudit(ctx context.Context, t tx, e registry.AuditEvent) (int64, error) {
	when, err := x.time(e.Time, "audit event time")
	if err != nil {
		return 0, err
	}
	if err := x.d.LockTx(ctx, t.Tx, auditLock); err != nil {
		return 0, err
	}
	var id int64
	err = t.row(ctx, `INSERT INTO audit_events (at, action, actor, source_addr, namespace, target, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		when, e.Action, e.Actor, e.SourceAddr, e.Namespace, e.Target, e.Details).Scan(&id)
	return id, err
}

// ListAudit returns the events matching f, newest first.
func (x *Index) ListAudit(ctx context.Context, f registry.AuditFilter) ([]registry.AuditEvent, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		where = append(where, cond+" $"+strconv.Itoa(len(args)))
	}
	if f.Action != "" {
		add("action =", f.Action)
	}
	if f.Actor != "" {
		add("actor =", f.Actor)
	}
	if f.Namespace != "" {
		add("namespace =", f.Namespace)
	}
	for _, b := range []struct {
		t          time.Time
		cond, what string
	}{{f.Since, "at >=", "audit filter start"}, {f.Until, "at <", "audit filter end"}} {
		if !b.t.IsZero() {
			v, err := x.time(b.t, b.what)
			if err != nil {
				return nil, err
			}
			add(b.cond, v)
		}
	}
	if f.BeforeID > 0 {
		add("id <", f.BeforeID)
	}
	query := `SELECT id, at, action, actor, source_addr, namespace, target, details FROM audit_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, registry.AuditLimit(f.Limit))
	query += ` ORDER BY id DESC LIMIT $` + strconv.Itoa(len(args))
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, query, args...)
	out, err := collect(rows, err, func(s scanner) (registry.AuditEvent, error) {
		var e registry.AuditEvent
		err := s.Scan(&e.ID, at(&e.Time), &e.Action, &e.Actor, &e.SourceAddr, &e.Namespace, &e.Target, &e.Details)
		return e, err
	})
	return out, x.fail(err, "reading the audit log")
}
