package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"trove.dev/trove/internal/registry"
)

// AddManagedSigningKey stores key and its sealed private key in one
// transaction; NotFound without the namespace, Conflict if the namespace
// has a key with that ID or a managed key already.
func (x *Index) AddManagedSigningKey(ctx context.Context, key registry.SigningKey, sealed []byte) error {
	if len(sealed) == 0 {
		return registry.Errorf(registry.Invalid, "the managed signing key %s of namespace %q has no sealed private key", key.KeyID, key.Namespace)
	}
	created, err := micros(key.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	expires, err := optMicros(key.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	return x.write(ctx, "adding managed signing key "+key.KeyID+" to namespace "+key.Namespace, func(tx *sql.Tx) error {
		managed, err := exists(ctx, tx, `SELECT EXISTS (SELECT 1 FROM managed_signing_keys WHERE namespace = ?)`, key.Namespace)
		if err != nil {
			return err
		}
		if managed {
			return managedConflict(key.Namespace)
		}
		if err := insertKey(ctx, tx, key, created, expires); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO managed_signing_keys (namespace, key_id, sealed_private_key) VALUES (?, ?, ?)`,
			key.Namespace, key.KeyID, sealed)
		if isUnique(err) {
			return managedConflict(key.Namespace)
		}
		return err
	})
}

// ManagedSigningKey returns the namespace's managed key and its sealed
// private key; NotFound if there is none.
func (x *Index) ManagedSigningKey(ctx context.Context, namespace string) (registry.SigningKey, []byte, error) {
	k := registry.SigningKey{Namespace: namespace, Managed: true}
	var created int64
	var expires sql.NullInt64
	var sealed []byte
	err := x.r.QueryRowContext(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.sealed_private_key
		FROM managed_signing_keys m JOIN signing_keys k ON k.namespace = m.namespace AND k.key_id = m.key_id
		WHERE m.namespace = ?`, namespace).Scan(&k.KeyID, &k.Fingerprint, &k.ASCIIArmor, &created, &expires, &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.SigningKey{}, nil, registry.Errorf(registry.NotFound, "namespace %q has no managed signing key", namespace)
	}
	if err != nil {
		return registry.SigningKey{}, nil, x.fail(err, "reading the managed signing key of namespace "+namespace)
	}
	k.CreatedAt, k.ExpiresAt = fromMicros(created), fromOptMicros(expires)
	return k, sealed, nil
}

func managedConflict(namespace string) error {
	return registry.Errorf(registry.Conflict, "namespace %q already has a managed signing key (one per namespace): remove it first to replace it", namespace)
}
