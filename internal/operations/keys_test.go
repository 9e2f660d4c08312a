package operations_test

import (
	"context"
	"strings"
	"testing"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestSigningKeysRefused: only a namespace's admins add, generate and
// remove its keys; what is not one OpenPGP public key is refused;
// nothing is stored.
func TestSigningKeysRefused(t *testing.T) {
	e := newEnv(t)
	alice, pat, eve := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "eve")
	key := signingtest.NewKey(t, "ops")
	if _, err := e.ops.AddSigningKey(t.Context(), alice, "acme", key.ArmoredPublic); err != nil {
		t.Fatal(err)
	}
	other := signingtest.NewKey(t, "other")
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		ns    string
		armor string
		want  registry.Kind
	}{
		{"by a publisher", pat, "acme", other.ArmoredPublic, registry.Forbidden},
		{"by an outsider", eve, "acme", other.ArmoredPublic, registry.NotFound},
		{"to an absent namespace", alice, "nope", other.ArmoredPublic, registry.NotFound},
		{"twice", alice, "acme", key.ArmoredPublic, registry.Conflict},
		{"a private key", alice, "acme", other.ArmoredPrivate, registry.Invalid},
		{"empty", alice, "acme", "", registry.Invalid},
		{"not armored", alice, "acme", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", registry.Invalid},
		{"garbage in armor", alice, "acme", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + strings.Repeat("A", 4000) + "\n-----END PGP PUBLIC KEY BLOCK-----\n", registry.Invalid},
		{"two keys", alice, "acme", other.ArmoredPublic + signingtest.NewKey(t, "third").ArmoredPublic, registry.Invalid},
	} {
		t.Run("add/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.AddSigningKey(ctx, tc.actor, tc.ns, tc.armor)
				return err
			})
		})
	}
	t.Run("generate/by a publisher", func(t *testing.T) {
		e.refused(t, registry.Forbidden, func(ctx context.Context) error {
			_, err := e.ops.GenerateSigningKey(ctx, pat, "acme")
			return err
		})
	})
	t.Run("generate/without managed keys", func(t *testing.T) {
		e.refused(t, registry.Unavailable, func(ctx context.Context) error {
			_, err := e.ops.GenerateSigningKey(ctx, alice, "acme")
			return err
		})
	})
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		ns    string
		id    string
		want  registry.Kind
	}{
		{"by a publisher", pat, "acme", key.KeyID, registry.Forbidden},
		{"by an outsider", eve, "acme", key.KeyID, registry.NotFound},
		{"of another namespace", alice, "open", key.KeyID, registry.Forbidden},
		{"unknown", alice, "acme", "0000000000000000", registry.NotFound},
		{"hostile id", alice, "acme", "' OR 1=1 --", registry.NotFound},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteSigningKey(ctx, tc.actor, tc.ns, tc.id) })
		})
	}
}

// TestSigningKeys: an admin adds and removes a key (its ID in any
// case); both are audited.
func TestSigningKeys(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	key := signingtest.NewKey(t, "ops")
	k, err := e.ops.AddSigningKey(ctx, alice, "acme", key.ArmoredPublic)
	if err != nil || k.KeyID != key.KeyID || k.Namespace != "acme" {
		t.Fatalf("add: %v %+v", err, k)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditKeyAdd || a.Target != key.KeyID || a.Details != "fingerprint "+k.Fingerprint {
		t.Errorf("audited as %+v", a)
	}
	if err := e.ops.DeleteSigningKey(ctx, alice, "acme", strings.ToLower(key.KeyID)); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditKeyRemove || a.Target != key.KeyID {
		t.Errorf("audited as %+v", a)
	}
	if keys, err := e.idx.ListSigningKeys(ctx, "acme"); err != nil || len(keys) != 0 {
		t.Errorf("keys after the removal: %v %+v", err, keys)
	}
}
