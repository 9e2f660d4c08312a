package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// CreateNamespace stores ns; Conflict if the name is taken.
func (x *Index) CreateNamespace(ctx context.Context, ns registry.Namespace) error {
	created, err := x.time(ns.CreatedAt, "namespace creation time")
	if err != nil {
		return err
	}
	vis, err := storedVisibility(ns.Visibility, registry.VisibilityPrivate)
	if err != nil {
		return err
	}
	return x.writeChange(ctx, "creating namespace "+ns.Name, &store.Change{Kind: store.ChangeNamespace, Namespace: ns.Name}, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO namespaces (name, description, visibility, created_at) VALUES ($1, $2, $3, $4)`,
			ns.Name, ns.Description, string(vis), created)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "namespace %q exists already", ns.Name)
		}
		return err
	})
}

// GetNamespace returns the namespace, or NotFound.
func (x *Index) GetNamespace(ctx context.Context, name string) (registry.Namespace, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	ns := registry.Namespace{Name: name}
	err := x.row(ctx, `SELECT description, visibility, created_at FROM namespaces WHERE name = $1`, name).
		Scan(&ns.Description, &ns.Visibility, at(&ns.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Namespace{}, notFoundNamespace(name)
	}
	if err != nil {
		return registry.Namespace{}, x.fail(err, "reading namespace "+name)
	}
	return ns, nil
}

// ListNamespaces returns all namespaces ordered by name.
func (x *Index) ListNamespaces(ctx context.Context) ([]registry.Namespace, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT name, description, visibility, created_at FROM namespaces ORDER BY name`)
	out, err := collect(rows, err, func(s scanner) (registry.Namespace, error) {
		var ns registry.Namespace
		err := s.Scan(&ns.Name, &ns.Description, &ns.Visibility, at(&ns.CreatedAt))
		return ns, err
	})
	return out, x.fail(err, "listing namespaces")
}

// UpdateNamespace replaces the description of an existing namespace, and
// its visibility unless ns.Visibility is empty.
func (x *Index) UpdateNamespace(ctx context.Context, ns registry.Namespace) error {
	vis, err := storedVisibility(ns.Visibility, "")
	if err != nil {
		return err
	}
	return x.writeChange(ctx, "updating namespace "+ns.Name, &store.Change{Kind: store.ChangeNamespace, Namespace: ns.Name}, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE namespaces SET description = $1, visibility = COALESCE(NULLIF($2, ''), visibility) WHERE name = $3`,
			ns.Description, string(vis), ns.Name)
		return affected(res, err, notFoundNamespace(ns.Name))
	})
}

// DeleteNamespace deletes an empty namespace with its signing keys, its
// memberships and the tokens bound to it; Conflict while it holds
// provider or module versions. The namespace row is locked first, so that
// a concurrent publish into it either commits before (and the delete is
// refused) or waits and then finds no namespace.
func (x *Index) DeleteNamespace(ctx context.Context, name string) error {
	return x.writeChange(ctx, "deleting namespace "+name, &store.Change{Kind: store.ChangeNamespace, Namespace: name}, func(ctx context.Context, t tx) error {
		var providers, modules bool
		err := t.row(ctx, `SELECT
				EXISTS (SELECT 1 FROM providers WHERE namespace = n.name),
				EXISTS (SELECT 1 FROM modules WHERE namespace = n.name)
			FROM namespaces n WHERE n.name = $1`+x.d.ForUpdate(), name).Scan(&providers, &modules)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return notFoundNamespace(name)
		case err != nil:
			return err
		case providers:
			return registry.Errorf(registry.Conflict,
				"namespace %q holds published provider versions, which are immutable: it cannot be deleted", name)
		case modules:
			return registry.Errorf(registry.Conflict,
				"namespace %q holds module versions: delete them first (trove module delete), then the namespace", name)
		}
		// Every token bound to the namespace goes, whatever else it is
		// bound to (see migration 0005); were one bound meanwhile, the
		// reference of its binding would fail the commit.
		if _, err := t.exec(ctx, `DELETE FROM tokens WHERE `+boundTo, name); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM memberships WHERE namespace = $1`,
			`DELETE FROM trust_policies WHERE namespace = $1`,
			`DELETE FROM signing_keys WHERE namespace = $1`,
			`DELETE FROM signing_key_snapshots WHERE namespace = $1`,
			`DELETE FROM namespaces WHERE name = $1`,
		} {
			_, err := t.exec(ctx, q, name)
			if x.is(err, FailForeignKey) { // a version was added meanwhile
				return registry.Errorf(registry.Conflict, "namespace %q holds published versions: it cannot be deleted", name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// AddSigningKey stores key; NotFound without its namespace, Conflict if
// the namespace has a key with that ID.
func (x *Index) AddSigningKey(ctx context.Context, key registry.SigningKey) error {
	return x.addKey(ctx, "adding signing key "+key.KeyID+" to namespace "+key.Namespace, key, nil)
}

// AddManagedSigningKey stores key and its sealed private key in one
// transaction; NotFound without the namespace, Conflict if the namespace
// has a key with that ID or a managed key already.
func (x *Index) AddManagedSigningKey(ctx context.Context, key registry.SigningKey, sealed []byte) error {
	if len(sealed) == 0 {
		return registry.Errorf(registry.Invalid, "the managed signing key %s of namespace %q has no sealed private key", key.KeyID, key.Namespace)
	}
	store.EffectsFrom(ctx).Bound(key)
	return x.addKey(ctx, "adding managed signing key "+key.KeyID+" to namespace "+key.Namespace, key, sealed)
}

// addKey stores a public key, and sealed as its private key if it is not
// nil (a managed key).
func (x *Index) addKey(ctx context.Context, what string, key registry.SigningKey, sealed []byte) error {
	created, err := x.time(key.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	expires, err := x.optTime(key.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	managedConflict := registry.Errorf(registry.Conflict,
		"namespace %q already has a managed signing key (one per namespace): remove it first to replace it", key.Namespace)
	return x.write(ctx, what, func(ctx context.Context, t tx) error {
		if err := namespaceExists(ctx, t, key.Namespace); err != nil {
			return err
		}
		if sealed != nil {
			managed, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM managed_signing_keys WHERE namespace = $1)`, key.Namespace)
			if err != nil {
				return err
			}
			if managed {
				return managedConflict
			}
		}
		_, err := t.exec(ctx, `INSERT INTO signing_keys (namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, key.Namespace, key.KeyID, key.Fingerprint, key.ASCIIArmor, created, expires)
		switch {
		case x.is(err, FailForeignKey):
			return notFoundNamespace(key.Namespace)
		case x.is(err, FailUnique):
			return registry.Errorf(registry.Conflict, "namespace %q already has a signing key with ID %s", key.Namespace, key.KeyID)
		case err != nil || sealed == nil:
			return err
		}
		_, err = t.exec(ctx, `INSERT INTO managed_signing_keys (namespace, key_id, sealed_private_key) VALUES ($1, $2, $3)`,
			key.Namespace, key.KeyID, sealed)
		if x.is(err, FailUnique) {
			return managedConflict
		}
		return err
	})
}

// ManagedSigningKey returns the namespace's managed key and its sealed
// private key; NotFound if there is none.
func (x *Index) ManagedSigningKey(ctx context.Context, namespace string) (registry.SigningKey, []byte, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	k := registry.SigningKey{Namespace: namespace, Managed: true}
	var sealed []byte
	err := x.row(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.sealed_private_key
		FROM managed_signing_keys m JOIN signing_keys k ON k.namespace = m.namespace AND k.key_id = m.key_id
		WHERE m.namespace = $1`, namespace).Scan(&k.KeyID, &k.Fingerprint, &k.ASCIIArmor, at(&k.CreatedAt), at(&k.ExpiresAt), &sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.SigningKey{}, nil, registry.Errorf(registry.NotFound, "namespace %q has no managed signing key", namespace)
	}
	if err != nil {
		return registry.SigningKey{}, nil, x.fail(err, "reading the managed signing key of namespace "+namespace)
	}
	return k, sealed, nil
}

// ListSigningKeys returns the keys of a namespace ordered by KeyID, in one
// statement: a namespace without keys yields one row of NULL key columns.
func (x *Index) ListSigningKeys(ctx context.Context, namespace string) ([]registry.SigningKey, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at, m.key_id IS NOT NULL
		FROM namespaces n LEFT JOIN signing_keys k ON k.namespace = n.name
		LEFT JOIN managed_signing_keys m ON m.namespace = k.namespace AND m.key_id = k.key_id
		WHERE n.name = $1 ORDER BY k.key_id`, namespace)
	found := false
	keys, err := collect(rows, err, func(s scanner) (registry.SigningKey, error) {
		found = true
		k := registry.SigningKey{Namespace: namespace}
		var id, fingerprint, armor sql.NullString
		err := s.Scan(&id, &fingerprint, &armor, at(&k.CreatedAt), at(&k.ExpiresAt), &k.Managed)
		k.KeyID, k.Fingerprint, k.ASCIIArmor = id.String, fingerprint.String, armor.String
		return k, err
	})
	if err != nil {
		return nil, x.fail(err, "listing the signing keys of namespace "+namespace)
	}
	if !found {
		return nil, notFoundNamespace(namespace)
	}
	var out []registry.SigningKey
	for _, k := range keys {
		if k.KeyID != "" {
			out = append(out, k)
		}
	}
	return out, nil
}

// DeleteSigningKey removes a key; NotFound if there is no such key.
func (x *Index) DeleteSigningKey(ctx context.Context, namespace, keyID string) error {
	return x.write(ctx, "removing signing key "+keyID+" from namespace "+namespace, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM signing_keys WHERE namespace = $1 AND key_id = $2`, namespace, keyID)
		return affected(res, err, registry.Errorf(registry.NotFound, "namespace %q has no signing key %s", namespace, keyID))
	})
}

// Secret returns the secret stored under name, storing generate()'s result
// first if there is none. Of racing callers, all get the first stored
// value: the insert does nothing on a conflict and the value is read back
// by a statement of its own (which sees a row committed meanwhile).
func (x *Index) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := func() error {
		ctx, cancel := x.op(ctx)
		defer cancel()
		return x.row(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value)
	}()
	if err == nil {
		return value, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, x.fail(err, "reading secret "+name)
	}
	fresh, err := generate()
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "generating secret "+name)
	}
	if len(fresh) == 0 {
		return nil, registry.Errorf(registry.Internal, "generating secret %s: the generated secret is empty", name)
	}
	err = x.write(ctx, "storing secret "+name, func(ctx context.Context, t tx) error {
		if _, err := t.exec(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
			return err
		}
		return t.row(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&value)
	})
	if err != nil {
		return nil, err
	}
	return value, nil
}

// storedVisibility checks a visibility to store; empty means def.
func storedVisibility(v, def registry.Visibility) (registry.Visibility, error) {
	if v == "" {
		return def, nil
	}
	return registry.ParseVisibility(string(v))
}
