package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"trove.dev/trove/internal/registry"
)

// CreateNamespace stores ns; Conflict if the name is taken.
func (x *Index) CreateNamespace(ctx context.Context, ns registry.Namespace) error {
	created, err := micros(ns.CreatedAt, "namespace creation time")
	if err != nil {
		return err
	}
	vis, err := storedVisibility(ns.Visibility, registry.VisibilityPrivate)
	if err != nil {
		return err
	}
	return x.write(ctx, "creating namespace "+ns.Name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO namespaces (name, description, visibility, created_at) VALUES (?, ?, ?, ?)`,
			ns.Name, ns.Description, vis, created)
		if isUnique(err) {
			return registry.Errorf(registry.Conflict, "namespace %q exists already", ns.Name)
		}
		return err
	})
}

// GetNamespace returns the namespace, or NotFound.
func (x *Index) GetNamespace(ctx context.Context, name string) (registry.Namespace, error) {
	ns := registry.Namespace{Name: name}
	var created int64
	err := x.r.QueryRowContext(ctx, `SELECT description, visibility, created_at FROM namespaces WHERE name = ?`, name).
		Scan(&ns.Description, &ns.Visibility, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Namespace{}, registry.Errorf(registry.NotFound, "namespace %q not found", name)
	}
	if err != nil {
		return registry.Namespace{}, x.fail(err, "reading namespace "+name)
	}
	ns.CreatedAt = fromMicros(created)
	return ns, nil
}

// ListNamespaces returns all namespaces ordered by name.
func (x *Index) ListNamespaces(ctx context.Context) ([]registry.Namespace, error) {
	rows, err := x.r.QueryContext(ctx, `SELECT name, description, visibility, created_at FROM namespaces ORDER BY name`)
	if err != nil {
		return nil, x.fail(err, "listing namespaces")
	}
	defer rows.Close()
	var out []registry.Namespace
	for rows.Next() {
		var ns registry.Namespace
		var created int64
		if err := rows.Scan(&ns.Name, &ns.Description, &ns.Visibility, &created); err != nil {
			return nil, x.fail(err, "listing namespaces")
		}
		ns.CreatedAt = fromMicros(created)
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
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
	return x.write(ctx, "updating namespace "+ns.Name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE namespaces SET description = ?, visibility = COALESCE(NULLIF(?, ''), visibility) WHERE name = ?`,
			ns.Description, string(vis), ns.Name)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "namespace %q not found", ns.Name))
	})
}

// DeleteNamespace deletes an empty namespace with its signing keys, its
// memberships and the tokens bound to it; Conflict while it holds provider or module
// versions.
func (x *Index) DeleteNamespace(ctx context.Context, name string) error {
	return x.write(ctx, "deleting namespace "+name, func(tx *sql.Tx) error {
		if err := namespaceExists(ctx, tx, name); err != nil {
			return err
		}
		busy, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM providers WHERE namespace = ?)`, name)
		if err != nil {
			return err
		}
		if busy {
			return registry.Errorf(registry.Conflict,
				"namespace %q holds published provider versions, which are immutable: it cannot be deleted", name)
		}
		busy, err = exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM modules WHERE namespace = ?)`, name)
		if err != nil {
			return err
		}
		if busy {
			return registry.Errorf(registry.Conflict,
				"namespace %q holds module versions: delete them first (trove module delete), then the namespace", name)
		}
		// Every token bound to the namespace goes, whatever else it is
		// bound to (see migration 0005).
		if _, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE `+boundTo, name, name); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM memberships WHERE namespace = ?`,
			`DELETE FROM signing_keys WHERE namespace = ?`,
			`DELETE FROM signing_key_snapshots WHERE namespace = ?`,
			`DELETE FROM namespaces WHERE name = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddSigningKey stores key; NotFound without its namespace, Conflict if
// the namespace has a key with that ID.
func (x *Index) AddSigningKey(ctx context.Context, key registry.SigningKey) error {
	created, err := micros(key.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	expires, err := optMicros(key.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	return x.write(ctx, "adding signing key "+key.KeyID+" to namespace "+key.Namespace, func(tx *sql.Tx) error {
		return insertKey(ctx, tx, key, created, expires)
	})
}

// insertKey stores the public key in tx; NotFound without its namespace,
// Conflict if the namespace has a key with that ID.
func insertKey(ctx context.Context, tx *sql.Tx, key registry.SigningKey, created int64, expires sql.NullInt64) error {
	if err := namespaceExists(ctx, tx, key.Namespace); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO signing_keys (namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, key.Namespace, key.KeyID, key.Fingerprint, key.ASCIIArmor, created, expires)
	if isUnique(err) {
		return registry.Errorf(registry.Conflict, "namespace %q already has a signing key with ID %s", key.Namespace, key.KeyID)
	}
	return err
}

// ListSigningKeys returns the keys of a namespace ordered by KeyID.
func (x *Index) ListSigningKeys(ctx context.Context, namespace string) ([]registry.SigningKey, error) {
	var out []registry.SigningKey
	err := x.read(ctx, "listing the signing keys of namespace "+namespace, func(tx *sql.Tx) error {
		if err := namespaceExists(ctx, tx, namespace); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.key_id IS NOT NULL
			FROM signing_keys k LEFT JOIN managed_signing_keys m ON m.namespace = k.namespace AND m.key_id = k.key_id
			WHERE k.namespace = ? ORDER BY k.key_id`, namespace)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k := registry.SigningKey{Namespace: namespace}
			var created int64
			var expires sql.NullInt64
			if err := rows.Scan(&k.KeyID, &k.Fingerprint, &k.ASCIIArmor, &created, &expires, &k.Managed); err != nil {
				return err
			}
			k.CreatedAt, k.ExpiresAt = fromMicros(created), fromOptMicros(expires)
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSigningKey removes a key; NotFound if there is no such key.
func (x *Index) DeleteSigningKey(ctx context.Context, namespace, keyID string) error {
	return x.write(ctx, "removing signing key "+keyID+" from namespace "+namespace, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM signing_keys WHERE namespace = ? AND key_id = ?`, namespace, keyID)
		if err != nil {
			return err
		}
		return rowsAffected(res, registry.Errorf(registry.NotFound, "namespace %q has no signing key %s", namespace, keyID))
	})
}

// storedVisibility checks a visibility to store; empty means def.
func storedVisibility(v, def registry.Visibility) (registry.Visibility, error) {
	if v == "" {
		return def, nil
	}
	return registry.ParseVisibility(string(v))
}
