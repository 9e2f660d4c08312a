package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
)

// CreateNamespace stores ns; Conflict if the name is taken.
func (x *Index) CreateNamespace(ctx context.Context, ns registry.Namespace) error {
	created, err := checkTime(ns.CreatedAt, "namespace creation time")
	if err != nil {
		return err
	}
	vis, err := storedVisibility(ns.Visibility, registry.VisibilityPrivate)
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO namespaces (name, description, visibility, created_at) VALUES ($1, $2, $3, $4)`,
		ns.Name, ns.Description, string(vis), created)
	if pgCode(err) == "23505" {
		return registry.Errorf(registry.Conflict, "namespace %q exists already", ns.Name)
	}
	return x.fail(err, "creating namespace "+ns.Name)
}

// GetNamespace returns the namespace, or NotFound.
func (x *Index) GetNamespace(ctx context.Context, name string) (registry.Namespace, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	ns := registry.Namespace{Name: name}
	err := x.pool.QueryRow(ctx, `SELECT description, visibility, created_at FROM namespaces WHERE name = $1`, name).
		Scan(&ns.Description, &ns.Visibility, &ns.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.Namespace{}, notFoundNamespace(name)
	}
	if err != nil {
		return registry.Namespace{}, x.fail(err, "reading namespace "+name)
	}
	ns.CreatedAt = ns.CreatedAt.UTC()
	return ns, nil
}

// ListNamespaces returns all namespaces ordered by name.
func (x *Index) ListNamespaces(ctx context.Context) ([]registry.Namespace, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT name, description, visibility, created_at FROM namespaces ORDER BY name`)
	if err != nil {
		return nil, x.fail(err, "listing namespaces")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (registry.Namespace, error) {
		var ns registry.Namespace
		err := row.Scan(&ns.Name, &ns.Description, &ns.Visibility, &ns.CreatedAt)
		ns.CreatedAt = ns.CreatedAt.UTC()
		return ns, err
	})
	if err != nil {
		return nil, x.fail(err, "listing namespaces")
	}
	return out, nil
}

// UpdateNamespace replaces the description of an existing namespace, and
// its visibility unless ns.Visibility is empty.
func (x *Index) UpdateNamespace(ctx context.Context, ns registry.Namespace) error {
	vis, err := storedVisibility(ns.Visibility, "")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `UPDATE namespaces SET description = $1, visibility = COALESCE(NULLIF($2, ''), visibility) WHERE name = $3`,
		ns.Description, string(vis), ns.Name)
	if err != nil {
		return x.fail(err, "updating namespace "+ns.Name)
	}
	if tag.RowsAffected() == 0 {
		return notFoundNamespace(ns.Name)
	}
	return nil
}

// DeleteNamespace deletes an empty namespace with its signing keys, its
// memberships and the tokens bound to it; Conflict while it holds
// provider or module versions. The namespace row is locked first, so that a concurrent
// publish into it either commits before (and the delete is refused) or
// waits and then finds no namespace.
func (x *Index) DeleteNamespace(ctx context.Context, name string) error {
	return x.write(ctx, "deleting namespace "+name, func(ctx context.Context, tx pgx.Tx) error {
		var providers, modules bool
		err := tx.QueryRow(ctx, `SELECT
				EXISTS (SELECT 1 FROM providers WHERE namespace = n.name),
				EXISTS (SELECT 1 FROM modules WHERE namespace = n.name)
			FROM namespaces n WHERE n.name = $1 FOR UPDATE`, name).Scan(&providers, &modules)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundNamespace(name)
		}
		if err != nil {
			return err
		}
		if providers || modules {
			return registry.Errorf(registry.Conflict,
				"namespace %q holds published provider or module versions, which are immutable: it cannot be deleted", name)
		}
		// Every token bound to the namespace goes, whatever else it is bound
		// to (see migration 0005); were one bound meanwhile, the reference
		// of its binding would fail the commit.
		if _, err := tx.Exec(ctx, `DELETE FROM tokens WHERE `+boundTo, name); err != nil {
			return err
		}
		// memberships, signing_keys and signing_key_snapshots cascade.
		_, err = tx.Exec(ctx, `DELETE FROM namespaces WHERE name = $1`, name)
		if pgCode(err) == "23503" { // a version was added meanwhile
			return registry.Errorf(registry.Conflict, "namespace %q holds published versions: it cannot be deleted", name)
		}
		return err
	})
}

// AddSigningKey stores key; NotFound without its namespace, Conflict if
// the namespace has a key with that ID.
func (x *Index) AddSigningKey(ctx context.Context, key registry.SigningKey) error {
	created, err := checkTime(key.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	expires, err := optTime(key.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	_, err = x.pool.Exec(ctx, `INSERT INTO signing_keys (namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, key.Namespace, key.KeyID, key.Fingerprint, key.ASCIIArmor, created, expires)
	switch pgCode(err) {
	case "23503":
		return notFoundNamespace(key.Namespace)
	case "23505":
		return registry.Errorf(registry.Conflict, "namespace %q already has a signing key with ID %s", key.Namespace, key.KeyID)
	}
	return x.fail(err, "adding signing key "+key.KeyID+" to namespace "+key.Namespace)
}

// ListSigningKeys returns the keys of a namespace ordered by KeyID, in one
// statement: a namespace without keys yields one row of NULL key columns.
func (x *Index) ListSigningKeys(ctx context.Context, namespace string) ([]registry.SigningKey, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	rows, err := x.pool.Query(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.key_id IS NOT NULL
		FROM namespaces n LEFT JOIN signing_keys k ON k.namespace = n.name
		LEFT JOIN managed_signing_keys m ON m.namespace = k.namespace AND m.key_id = k.key_id
		WHERE n.name = $1 ORDER BY k.key_id`, namespace)
	if err != nil {
		return nil, x.fail(err, "listing the signing keys of namespace "+namespace)
	}
	defer rows.Close()
	found := false
	var out []registry.SigningKey
	for rows.Next() {
		found = true
		var id, fingerprint, armor *string
		var created, expires *time.Time
		var managed bool
		if err := rows.Scan(&id, &fingerprint, &armor, &created, &expires, &managed); err != nil {
			return nil, x.fail(err, "listing the signing keys of namespace "+namespace)
		}
		if id == nil {
			continue
		}
		out = append(out, registry.SigningKey{
			Namespace: namespace, KeyID: *id, Fingerprint: *fingerprint, ASCIIArmor: *armor,
			CreatedAt: fromOptTime(created), ExpiresAt: fromOptTime(expires), Managed: managed,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, x.fail(err, "listing the signing keys of namespace "+namespace)
	}
	if !found {
		return nil, notFoundNamespace(namespace)
	}
	return out, nil
}

// DeleteSigningKey removes a key; NotFound if there is no such key.
func (x *Index) DeleteSigningKey(ctx context.Context, namespace, keyID string) error {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	tag, err := x.pool.Exec(ctx, `DELETE FROM signing_keys WHERE namespace = $1 AND key_id = $2`, namespace, keyID)
	if err != nil {
		return x.fail(err, "removing signing key "+keyID+" from namespace "+namespace)
	}
	if tag.RowsAffected() == 0 {
		return registry.Errorf(registry.NotFound, "namespace %q has no signing key %s", namespace, keyID)
	}
	return nil
}

// storedVisibility checks a visibility to store; empty means def.
func storedVisibility(v, def registry.Visibility) (registry.Visibility, error) {
	if v == "" {
		return def, nil
	}
	return registry.ParseVisibility(string(v))
}
