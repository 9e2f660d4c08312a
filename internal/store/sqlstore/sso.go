package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

func notFoundIdentityProvider(name string) error {
	return registry.Errorf(registry.NotFound, "identity provider %q not found", name)
}

// PutIdentityProvider creates or replaces an identity provider.
func (x *Index) PutIdentityProvider(ctx context.Context, p registry.IdentityProvider) (bool, error) {
	if err := p.Check(); err != nil {
		return false, err
	}
	created, err := x.time(p.CreatedAt, "identity provider creation time")
	if err != nil {
		return false, err
	}
	updated, err := x.time(p.UpdatedAt, "identity provider update time")
	if err != nil {
		return false, err
	}
	var isNew bool
	err = x.write(ctx, "storing identity provider "+p.Name, func(ctx context.Context, t tx) error {
		// Insert unless it exists, then update: of concurrent puts of a
		// new name one creates it and the others replace it (an insert
		// waits for the other's commit), each knowing which it did.
		res, err := t.exec(ctx, `INSERT INTO identity_providers (name, display_name, issuer, client_id, client_secret_env, scopes, username_claim, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (name) DO NOTHING`,
			p.Name, p.DisplayName, p.Issuer, p.ClientID, p.ClientSecretEnv, x.d.Strings(p.Scopes), p.UsernameClaim, created, updated)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		isNew = n == 1
		if !isNew {
			if _, err = t.exec(ctx, `UPDATE identity_providers SET display_name = $1, issuer = $2, client_id = $3, client_secret_env = $4,
				scopes = $5, username_claim = $6, updated_at = $7 WHERE name = $8`,
				p.DisplayName, p.Issuer, p.ClientID, p.ClientSecretEnv, x.d.Strings(p.Scopes), p.UsernameClaim, updated, p.Name); err != nil {
				return err
			}
		}
		store.EffectsFrom(ctx).Bound(store.IdentityProviderCreated(isNew))
		return nil
	})
	return isNew, err
}

const idpSelect = `SELECT name, display_name, issuer, client_id, client_secret_env, scopes, username_claim, created_at, updated_at FROM identity_providers `

func (x *Index) scanIdentityProvider(s scanner) (registry.IdentityProvider, error) {
	var p registry.IdentityProvider
	err := s.Scan(&p.Name, &p.DisplayName, &p.Issuer, &p.ClientID, &p.ClientSecretEnv, x.d.ScanStrings(&p.Scopes),
		&p.UsernameClaim, at(&p.CreatedAt), at(&p.UpdatedAt))
	p.Scopes = nonNil(p.Scopes)
	return p, err
}

// GetIdentityProvider returns the provider, or NotFound.
func (x *Index) GetIdentityProvider(ctx context.Context, name string) (registry.IdentityProvider, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	p, err := x.scanIdentityProvider(x.row(ctx, idpSelect+`WHERE name = $1`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.IdentityProvider{}, notFoundIdentityProvider(name)
	}
	if err != nil {
		return registry.IdentityProvider{}, x.fail(err, "reading identity provider "+name)
	}
	return p, nil
}

// ListIdentityProviders returns every provider ordered by name.
func (x *Index) ListIdentityProviders(ctx context.Context) ([]registry.IdentityProvider, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, idpSelect+`ORDER BY name`)
	out, err := collect(rows, err, x.scanIdentityProvider)
	return out, x.fail(err, "listing identity providers")
}

// DeleteIdentityProvider removes a provider and its role mappings.
func (x *Index) DeleteIdentityProvider(ctx context.Context, name string) error {
	return x.write(ctx, "deleting identity provider "+name, func(ctx context.Context, t tx) error {
		if _, err := t.exec(ctx, `DELETE FROM role_mappings WHERE provider = $1`, name); err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM identity_providers WHERE name = $1`, name)
		return affected(res, err, notFoundIdentityProvider(name))
	})
}

func notFoundRoleMapping(id int64) error {
	return registry.Errorf(registry.NotFound, "role mapping %d not found", id)
}

// CreateRoleMapping stores a mapping with a new ID.
func (x *Index) CreateRoleMapping(ctx context.Context, m registry.RoleMapping) (registry.RoleMapping, error) {
	if err := m.Check(); err != nil {
		return registry.RoleMapping{}, err
	}
	created, err := x.time(m.CreatedAt, "role mapping creation time")
	if err != nil {
		return registry.RoleMapping{}, err
	}
	err = x.write(ctx, "creating a role mapping of identity provider "+m.Provider, func(ctx context.Context, t tx) error {
		ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM identity_providers WHERE name = $1)`, m.Provider)
		if err != nil {
			return err
		}
		if !ok {
			return notFoundIdentityProvider(m.Provider)
		}
		err = t.row(ctx, `INSERT INTO role_mappings (provider, claim, value, namespace, role, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			m.Provider, m.Claim, m.Value, m.Namespace, string(m.Role), created).Scan(&m.ID)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "identity provider %q has a mapping of %s=%q to namespace %s already", m.Provider, m.Claim, m.Value, m.Namespace)
		}
		if err == nil {
			store.EffectsFrom(ctx).Bound(m)
		}
		return err
	})
	if err != nil {
		return registry.RoleMapping{}, err
	}
	return m, nil
}

const mappingSelect = `SELECT id, provider, claim, value, namespace, role, created_at FROM role_mappings `

func scanRoleMapping(s scanner) (registry.RoleMapping, error) {
	var m registry.RoleMapping
	var role string
	err := s.Scan(&m.ID, &m.Provider, &m.Claim, &m.Value, &m.Namespace, &role, at(&m.CreatedAt))
	m.Role = registry.Role(role)
	return m, err
}

// GetRoleMapping returns the mapping, or NotFound.
func (x *Index) GetRoleMapping(ctx context.Context, id int64) (registry.RoleMapping, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	m, err := scanRoleMapping(x.row(ctx, mappingSelect+`WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.RoleMapping{}, notFoundRoleMapping(id)
	}
	if err != nil {
		return registry.RoleMapping{}, x.fail(err, "reading role mapping "+strconv.FormatInt(id, 10))
	}
	return m, nil
}

// ListRoleMappings returns the mappings of a provider ("" for all) by ID.
func (x *Index) ListRoleMappings(ctx context.Context, provider string) ([]registry.RoleMapping, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, mappingSelect+`WHERE ($1 = '' OR provider = $1) ORDER BY id`, provider)
	out, err := collect(rows, err, scanRoleMapping)
	return out, x.fail(err, "listing role mappings")
}

// DeleteRoleMapping removes a mapping; NotFound if there is none.
func (x *Index) DeleteRoleMapping(ctx context.Context, id int64) error {
	return x.write(ctx, "deleting role mapping "+strconv.FormatInt(id, 10), func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM role_mappings WHERE id = $1`, id)
		return affected(res, err, notFoundRoleMapping(id))
	})
}

// GetIdentity returns the identity of issuer and subject, or NotFound.
func (x *Index) GetIdentity(ctx context.Context, issuer, subject string) (registry.Identity, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var id registry.Identity
	err := x.row(ctx, `SELECT issuer, subject, user_name, provider, created_at, last_login_at FROM identities WHERE issuer = $1 AND subject = $2`,
		issuer, subject).Scan(&id.Issuer, &id.Subject, &id.User, &id.Provider, at(&id.CreatedAt), at(&id.LastLoginAt))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Identity{}, registry.Errorf(registry.NotFound, "no user is linked to this identity")
	}
	if err != nil {
		return registry.Identity{}, x.fail(err, "reading an identity")
	}
	return id, nil
}

// CreateIdentityUser creates a user and links an identity to it.
func (x *Index) CreateIdentityUser(ctx context.Context, id registry.Identity, u registry.User) error {
	created, err := x.time(u.CreatedAt, "user creation time")
	if err != nil {
		return err
	}
	first, err := x.time(id.CreatedAt, "identity creation time")
	if err != nil {
		return err
	}
	last, err := x.time(id.LastLoginAt, "identity sign-in time")
	if err != nil {
		return err
	}
	return x.write(ctx, "creating user "+u.Name+" for an identity", func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO users (name, password_hash, admin, disabled, created_at) VALUES ($1, $2, $3, $4, $5)`,
			u.Name, u.PasswordHash, u.Admin, u.Disabled, created)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "user %q exists already", u.Name)
		}
		if err != nil {
			return err
		}
		_, err = t.exec(ctx, `INSERT INTO identities (issuer, subject, user_name, provider, created_at, last_login_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			id.Issuer, id.Subject, u.Name, id.Provider, first, last)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "the identity is linked to a user already")
		}
		return err
	})
}

// TouchIdentity records a sign-in of an identity.
func (x *Index) TouchIdentity(ctx context.Context, issuer, subject string, when time.Time) error {
	last, err := x.time(when, "identity sign-in time")
	if err != nil {
		return err
	}
	return x.write(ctx, "recording a sign-in", func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE identities SET last_login_at = $1 WHERE issuer = $2 AND subject = $3`, last, issuer, subject)
		return affected(res, err, registry.Errorf(registry.NotFound, "no user is linked to this identity"))
	})
}

// ReconcileRoles makes a user's rights what the role mappings grant.
func (x *Index) ReconcileRoles(ctx context.Context, user string, grants []registry.RoleGrant, admin bool, now time.Time) ([]registry.RoleChange, error) {
	for _, g := range grants {
		if _, err := registry.ParseRole(string(g.Role)); err != nil {
			return nil, err
		}
	}
	created, err := x.time(now, "membership creation time")
	if err != nil {
		return nil, err
	}
	var changes []registry.RoleChange
	apply := func(ctx context.Context, t tx) error {
		changes = nil
		var isAdmin bool
		err := t.row(ctx, `SELECT admin FROM users WHERE name = $1`+x.d.ForUpdate(), user).Scan(&isAdmin)
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundUser(user)
		}
		if err != nil {
			return err
		}
		previous := map[string]registry.Role{}
		rows, err := t.query(ctx, `SELECT namespace, role FROM role_grants WHERE user_name = $1`, user)
		if err != nil {
			return err
		}
		for rows.Next() {
			var ns, role string
			if err := rows.Scan(&ns, &role); err != nil {
				rows.Close()
				return err
			}
			previous[ns] = registry.Role(role)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		current := map[string]registry.Role{}
		rows, err = t.query(ctx, `SELECT namespace, role FROM memberships WHERE user_name = $1`, user)
		if err != nil {
			return err
		}
		for rows.Next() {
			var ns, role string
			if err := rows.Scan(&ns, &role); err != nil {
				rows.Close()
				return err
			}
			current[ns] = registry.Role(role)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		grant := func(ns string, role registry.Role) error {
			_, err := t.exec(ctx, `INSERT INTO role_grants (user_name, namespace, role) VALUES ($1, $2, $3)
				ON CONFLICT (user_name, namespace) DO UPDATE SET role = excluded.role`, user, ns, string(role))
			return err
		}
		ungrant := func(ns string) error {
			_, err := t.exec(ctx, `DELETE FROM role_grants WHERE user_name = $1 AND namespace = $2`, user, ns)
			return err
		}
		wanted := map[string]registry.Role{}
		for _, g := range grants {
			wanted[g.Namespace] = g.Role
		}
		// Memberships the mappings granted before and no longer grant.
		for ns, role := range previous {
			if ns == registry.GlobalAdminNamespace {
				continue
			}
			if _, ok := wanted[ns]; ok {
				continue
			}
			if err := ungrant(ns); err != nil {
				return err
			}
			if current[ns] != role { // changed or removed by an admin since
				continue
			}
			if _, err := t.exec(ctx, `DELETE FROM memberships WHERE user_name = $1 AND namespace = $2`, user, ns); err != nil {
				return err
			}
			changes = append(changes, registry.RoleChange{Namespace: ns, Removed: true})
		}
		for _, g := range grants {
			had, member := current[g.Namespace]
			granted, wasGranted := previous[g.Namespace]
			if member && (!wasGranted || had != granted) {
				// An admin's membership: leave it, and stop managing it.
				if wasGranted {
					if err := ungrant(g.Namespace); err != nil {
						return err
					}
				}
				continue
			}
			ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM namespaces WHERE name = $1)`, g.Namespace)
			if err != nil {
				return err
			}
			if !ok {
				if wasGranted {
					if err := ungrant(g.Namespace); err != nil {
						return err
					}
				}
				continue
			}
			if !member || had != g.Role {
				if _, err := t.exec(ctx, `INSERT INTO memberships (user_name, namespace, role, created_at) VALUES ($1, $2, $3, $4)
					ON CONFLICT (user_name, namespace) DO UPDATE SET role = excluded.role`, user, g.Namespace, string(g.Role), created); err != nil {
					return err
				}
				changes = append(changes, registry.RoleChange{Namespace: g.Namespace, Role: g.Role})
			}
			if err := grant(g.Namespace, g.Role); err != nil {
				return err
			}
		}
		// The admin flag.
		_, adminGranted := previous[registry.GlobalAdminNamespace]
		switch {
		case admin && !isAdmin:
			if _, err := t.exec(ctx, `UPDATE users SET admin = $1 WHERE name = $2`, true, user); err != nil {
				return err
			}
			changes = append(changes, registry.RoleChange{Namespace: registry.GlobalAdminNamespace, Role: registry.RoleAdmin})
			return grant(registry.GlobalAdminNamespace, registry.RoleAdmin)
		case admin && isAdmin:
			return nil // granted before, or set by an admin: either way it stays as recorded
		case !admin && adminGranted:
			if err := ungrant(registry.GlobalAdminNamespace); err != nil {
				return err
			}
			if isAdmin {
				if _, err := t.exec(ctx, `UPDATE users SET admin = $1 WHERE name = $2`, false, user); err != nil {
					return err
				}
				changes = append(changes, registry.RoleChange{Namespace: registry.GlobalAdminNamespace, Removed: true})
			}
		}
		return nil
	}
	// Every application announces an access change (cached rights of
	// tokens are dropped), whether or not it changed a role: the changes
	// are known only inside the transaction.
	err = x.writeChange(ctx, "applying the role mappings of user "+user, &changeAccess, func(ctx context.Context, t tx) error {
		if err := apply(ctx, t); err != nil {
			return err
		}
		slices.SortFunc(changes, func(a, b registry.RoleChange) int { return strings.Compare(a.Namespace, b.Namespace) })
		store.EffectsFrom(ctx).Bound(changes) // their audit entries commit with them
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changes, nil
}
