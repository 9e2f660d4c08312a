package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

var _ store.Access = (*Index)(nil)

// auditLock is the key of the transaction-level advisory lock that
// serializes AppendAudit, so that event IDs increase in commit order and
// a reader paging with BeforeID never misses an event committed late.
const auditLock int64 = 0x74726f76652e6175 // "trove.au"

func notFoundUser(name string) error {
	return registry.Errorf(registry.NotFound, "user %q not found", name)
}

// CreateUser stores u; Conflict if the name is taken.
func (x *Index) CreateUser(ctx context.Context, u registry.User) error {
	created, err := checkTime(u.CreatedAt, "user creation time")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO users (name, password_hash, admin, disabled, created_at) VALUES ($1, $2, $3, $4, $5)`,
		u.Name, u.PasswordHash, u.Admin, u.Disabled, created)
	if pgCode(err) == "23505" {
		return registry.Errorf(registry.Conflict, "user %q exists already", u.Name)
	}
	return x.fail(err, "creating user "+u.Name)
}

const userColumns = `name, password_hash, admin, disabled, created_at`

func scanUser(row pgx.Row) (registry.User, error) {
	var u registry.User
	err := row.Scan(&u.Name, &u.PasswordHash, &u.Admin, &u.Disabled, &u.CreatedAt)
	u.CreatedAt = u.CreatedAt.UTC()
	return u, err
}

// GetUser returns the user, or NotFound.
func (x *Index) GetUser(ctx context.Context, name string) (registry.User, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	u, err := scanUser(x.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.User{}, notFoundUser(name)
	}
	if err != nil {
		return registry.User{}, x.fail(err, "reading user "+name)
	}
	return u, nil
}

// ListUsers returns every user ordered by name.
func (x *Index) ListUsers(ctx context.Context) ([]registry.User, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT `+userColumns+` FROM users ORDER BY name`)
	if err != nil {
		return nil, x.fail(err, "listing users")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.User, error) { return scanUser(row) })
	if err != nil {
		return nil, x.fail(err, "listing users")
	}
	return out, nil
}

// UpdateUser replaces the password hash and the admin and disabled flags.
func (x *Index) UpdateUser(ctx context.Context, u registry.User) error {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `UPDATE users SET password_hash = $1, admin = $2, disabled = $3 WHERE name = $4`,
		u.PasswordHash, u.Admin, u.Disabled, u.Name)
	if err != nil {
		return x.fail(err, "updating user "+u.Name)
	}
	if tag.RowsAffected() == 0 {
		return notFoundUser(u.Name)
	}
	return nil
}

// SetMembership adds a membership or changes its role (keeping its
// CreatedAt); NotFound if the user or the namespace does not exist.
func (x *Index) SetMembership(ctx context.Context, m registry.Membership) error {
	if _, err := registry.ParseRole(string(m.Role)); err != nil {
		return err
	}
	created, err := checkTime(m.CreatedAt, "membership creation time")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO memberships (user_name, namespace, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_name, namespace) DO UPDATE SET role = EXCLUDED.role`,
		m.User, m.Namespace, string(m.Role), created)
	if pgCode(err) == "23503" {
		if strings.Contains(constraintOf(err), "user") {
			return notFoundUser(m.User)
		}
		return notFoundNamespace(m.Namespace)
	}
	return x.fail(err, "setting the role of user "+m.User+" in namespace "+m.Namespace)
}

// DeleteMembership removes a membership; NotFound if there is none.
func (x *Index) DeleteMembership(ctx context.Context, user, namespace string) error {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `DELETE FROM memberships WHERE user_name = $1 AND namespace = $2`, user, namespace)
	if err != nil {
		return x.fail(err, "removing user "+user+" from namespace "+namespace)
	}
	if tag.RowsAffected() == 0 {
		return registry.Errorf(registry.NotFound, "user %q is not a member of namespace %q", user, namespace)
	}
	return nil
}

// ListMemberships returns the memberships matching user and namespace
// ("" matches any), ordered by namespace then user.
func (x *Index) ListMemberships(ctx context.Context, user, namespace string) ([]registry.Membership, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT user_name, namespace, role, created_at FROM memberships
		WHERE ($1 = '' OR user_name = $1) AND ($2 = '' OR namespace = $2) ORDER BY namespace, user_name`, user, namespace)
	if err != nil {
		return nil, x.fail(err, "listing memberships")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.Membership, error) {
		var m registry.Membership
		var role string
		err := row.Scan(&m.User, &m.Namespace, &role, &m.CreatedAt)
		m.Role, m.CreatedAt = registry.Role(role), m.CreatedAt.UTC()
		return m, err
	})
	if err != nil {
		return nil, x.fail(err, "listing memberships")
	}
	return out, nil
}

// ListUserTokens returns the tokens of a user ordered by CreatedAt then ID.
func (x *Index) ListUserTokens(ctx context.Context, user string) ([]registry.Token, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT `+tokenSelect+` FROM tokens WHERE user_name = $1 ORDER BY created_at, id`, user)
	if err != nil {
		return nil, x.fail(err, "listing the tokens of user "+user)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.Token, error) { return scanToken(row) })
	if err != nil {
		return nil, x.fail(err, "listing the tokens of user "+user)
	}
	return out, nil
}

// ExpireToken moves the token's expiry to at unless it expires earlier.
func (x *Index) ExpireToken(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return registry.Errorf(registry.Invalid, "expiring token %s: the expiry time is missing", id)
	}
	v, err := checkTime(at, "token expiry")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `UPDATE tokens SET expires_at = LEAST(COALESCE(expires_at, $1), $1) WHERE id = $2`, v, id)
	if err != nil {
		return x.fail(err, "expiring token "+id)
	}
	if tag.RowsAffected() == 0 {
		return registry.Errorf(registry.NotFound, "token %q not found", id)
	}
	return nil
}

// CreateAuthCode stores an authorization code; Conflict if its hash is
// taken, NotFound if its user does not exist.
func (x *Index) CreateAuthCode(ctx context.Context, c registry.AuthCode) error {
	created, err := checkTime(c.CreatedAt, "authorization code creation time")
	if err != nil {
		return err
	}
	expires, err := checkTime(c.ExpiresAt, "authorization code expiry")
	if err != nil {
		return err
	}
	used, err := optTime(c.UsedAt, "authorization code use time")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO auth_codes (hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.Hash, c.ClientID, c.RedirectURI, c.Challenge, c.User, scopeStrings(c.Scopes), c.TokenID, created, expires, used)
	switch pgCode(err) {
	case "23503":
		return notFoundUser(c.User)
	case "23505":
		return registry.Errorf(registry.Conflict, "an authorization code with the same hash exists already")
	}
	return x.fail(err, "storing an authorization code")
}

// UseAuthCode marks a code as used and returns it as it was before. The
// row is locked, so of two concurrent calls exactly one sees it unused.
func (x *Index) UseAuthCode(ctx context.Context, hash string, at time.Time) (registry.AuthCode, error) {
	usedAt, err := checkTime(at, "authorization code use time")
	if err != nil {
		return registry.AuthCode{}, err
	}
	var c registry.AuthCode
	err = x.write(ctx, "using an authorization code", func(ctx context.Context, tx pgx.Tx) error {
		c = registry.AuthCode{}
		var scopes []string
		var used *time.Time
		err := tx.QueryRow(ctx, `SELECT hash, client_id, redirect_uri, challenge, user_name, scopes, token_id, created_at, expires_at, used_at
			FROM auth_codes WHERE hash = $1 FOR UPDATE`, hash).
			Scan(&c.Hash, &c.ClientID, &c.RedirectURI, &c.Challenge, &c.User, &scopes, &c.TokenID, &c.CreatedAt, &c.ExpiresAt, &used)
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.NotFound, "no such authorization code")
		}
		if err != nil {
			return err
		}
		c.Scopes = toScopes(scopes)
		c.CreatedAt, c.ExpiresAt, c.UsedAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC(), fromOptTime(used)
		if used != nil {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE auth_codes SET used_at = $1 WHERE hash = $2`, usedAt, hash)
		return err
	})
	if err != nil {
		return registry.AuthCode{}, err
	}
	return c, nil
}

// DeleteAuthCodes removes the codes that expired before the given time.
func (x *Index) DeleteAuthCodes(ctx context.Context, expiredBefore time.Time) (int, error) {
	before, err := checkTime(expiredBefore, "authorization code expiry")
	if err != nil {
		return 0, err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `DELETE FROM auth_codes WHERE expires_at < $1`, before)
	if err != nil {
		return 0, x.fail(err, "deleting expired authorization codes")
	}
	return int(tag.RowsAffected()), nil
}

// AppendAudit stores an audit event and returns its ID.
func (x *Index) AppendAudit(ctx context.Context, e registry.AuditEvent) (int64, error) {
	at, err := checkTime(e.Time, "audit event time")
	if err != nil {
		return 0, err
	}
	var id int64
	err = x.write(ctx, "appending to the audit log", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, auditLock); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO audit_events (at, action, actor, source_addr, namespace, target, details)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
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
		args = append(args, arg)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
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
		v, err := checkTime(f.Since, "audit filter start")
		if err != nil {
			return nil, err
		}
		add("at >= ?", v)
	}
	if !f.Until.IsZero() {
		v, err := checkTime(f.Until, "audit filter end")
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
	query := `SELECT id, at, action, actor, source_addr, namespace, target, details FROM audit_events`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, min(limit, maxAuditLimit))
	query += ` ORDER BY id DESC LIMIT $` + strconv.Itoa(len(args))
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, x.fail(err, "reading the audit log")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.AuditEvent, error) {
		var e registry.AuditEvent
		err := row.Scan(&e.ID, &e.Time, &e.Action, &e.Actor, &e.SourceAddr, &e.Namespace, &e.Target, &e.Details)
		e.Time = e.Time.UTC()
		return e, err
	})
	if err != nil {
		return nil, x.fail(err, "reading the audit log")
	}
	return out, nil
}

// scopeStrings encodes scopes as text[] (never NULL).
func scopeStrings(scopes []registry.Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// toScopes decodes text[] scopes.
func toScopes(s []string) []registry.Scope {
	var out []registry.Scope
	for _, v := range s {
		out = append(out, registry.Scope(v))
	}
	return out
}
