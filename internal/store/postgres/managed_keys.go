package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
)

// AddManagedSigningKey stores key and its sealed private key in one
// transaction; NotFound without the namespace, Conflict if the namespace
// has a key with that ID or a managed key already.
func (x *Index) AddManagedSigningKey(ctx context.Context, key registry.SigningKey, sealed []byte) error {
	if len(sealed) == 0 {
		return registry.Errorf(registry.Invalid, "the managed signing key %s of namespace %q has no sealed private key", key.KeyID, key.Namespace)
	}
	created, err := checkTime(key.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	expires, err := optTime(key.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	return x.write(ctx, "adding managed signing key "+key.KeyID+" to namespace "+key.Namespace, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO signing_keys (namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, key.Namespace, key.KeyID, key.Fingerprint, key.ASCIIArmor, created, expires)
		switch pgCode(err) {
		case "23503":
			return notFoundNamespace(key.Namespace)
		case "23505":
			return registry.Errorf(registry.Conflict, "namespace %q already has a signing key with ID %s", key.Namespace, key.KeyID)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO managed_signing_keys (namespace, key_id, sealed_private_key) VALUES ($1, $2, $3)`,
			key.Namespace, key.KeyID, sealed)
		if pgCode(err) == "23505" {
			return registry.Errorf(registry.Conflict, "namespace %q already has a managed signing key (one per namespace): remove it first to replace it", key.Namespace)
		}
		return err
	})
}

// ManagedSigningKey returns the namespace's managed key and its sealed
// private key; NotFound if there is none.
func (x *Index) ManagedSigningKey(ctx context.Context, namespace string) (registry.SigningKey, []byte, error) {
	ctx, cancel := x.opContext(ctx)
	defer cancel()
	k := registry.SigningKey{Namespace: namespace, Managed: true}
	var expires *time.Time
	var sealed []byte
	err := x.pool.QueryRow(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.sealed_private_key
		FROM managed_signing_keys m JOIN signing_keys k ON k.namespace = m.namespace AND k.key_id = m.key_id
		WHERE m.namespace = $1`, namespace).Scan(&k.KeyID, &k.Fingerprint, &k.ASCIIArmor, &k.CreatedAt, &expires, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return registry.SigningKey{}, nil, registry.Errorf(registry.NotFound, "namespace %q has no managed signing key", namespace)
	}
	if err != nil {
		return registry.SigningKey{}, nil, x.fail(err, "reading the managed signing key of namespace "+namespace)
	}
	k.ExpiresAt = fromOptTime(expires)
	return k, sealed, nil
}
