package storetest

import (
	"bytes"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testSealed returns a sealed private key of n: binary, with NUL and
// high bytes, as encryption yields.
func testSealed(n int) []byte {
	return append([]byte{0, 0xff, byte(n), 0x80, 0}, bytes.Repeat([]byte{0xde, 0xad, byte(n)}, 700)...)
}

// managedKey returns testKey(ns, n) marked Managed.
func managedKey(ns string, n int) registry.SigningKey {
	k := testKey(ns, n)
	k.Managed = true
	return k
}

// testManagedSigningKeys checks the sentences of store.SigningKeys about
// managed keys and their sealed private keys.
func testManagedSigningKeys(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("AddGetAndList", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		uploaded, managed := testKey("acme", 1), managedKey("acme", 2)
		mustOK(t, x.AddSigningKey(ctx, uploaded), "AddSigningKey")
		mustOK(t, x.AddManagedSigningKey(ctx, managed, testSealed(2)), "AddManagedSigningKey")
		mustOK(t, x.AddManagedSigningKey(ctx, managedKey("other", 2), testSealed(3)), "AddManagedSigningKey of another namespace")

		got, sealed, err := x.ManagedSigningKey(ctx, "acme")
		mustOK(t, err, "ManagedSigningKey")
		checkEqual(t, "ManagedSigningKey", got, managed, normKey)
		if !bytes.Equal(sealed, testSealed(2)) {
			t.Errorf("ManagedSigningKey returned sealed bytes %x..., want %x...", sealed[:min(8, len(sealed))], testSealed(2)[:8])
		}
		list, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "ListSigningKeys", list, []registry.SigningKey{uploaded, managed}, normKey)
	})
	t.Run("UploadedKeyIsNeverManaged", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.AddSigningKey(ctx, managedKey("acme", 1)), "AddSigningKey of a key marked Managed")
		_, _, err := x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey after AddSigningKey")
		list, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "ListSigningKeys", list, []registry.SigningKey{testKey("acme", 1)}, normKey)
	})
	t.Run("Missing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		_, _, err := x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey of a namespace without one")
		_, _, err = x.ManagedSigningKey(ctx, "nope")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey of a missing namespace")
		wantKind(t, x.AddManagedSigningKey(ctx, managedKey("nope", 1), testSealed(1)), registry.NotFound, "AddManagedSigningKey to a missing namespace")
		wantKind(t, x.AddManagedSigningKey(ctx, managedKey("acme", 1), nil), registry.Invalid, "AddManagedSigningKey without a sealed key")
		list, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		if len(list) != 0 {
			t.Errorf("a refused managed key was stored: %+v", list)
		}
	})
	t.Run("OnePerNamespaceAtomically", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		first := managedKey("acme", 1)
		mustOK(t, x.AddManagedSigningKey(ctx, first, testSealed(1)), "AddManagedSigningKey")
		wantKind(t, x.AddManagedSigningKey(ctx, managedKey("acme", 2), testSealed(2)), registry.Conflict, "a second managed key")
		// Neither half of the refused key was stored.
		list, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "keys after the refused second managed key", list, []registry.SigningKey{first}, normKey)
		_, sealed, err := x.ManagedSigningKey(ctx, "acme")
		mustOK(t, err, "ManagedSigningKey")
		if !bytes.Equal(sealed, testSealed(1)) {
			t.Errorf("the refused managed key replaced the sealed private key")
		}
	})
	t.Run("TakenKeyIDConflictsAtomically", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		uploaded := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, uploaded), "AddSigningKey")
		wantKind(t, x.AddManagedSigningKey(ctx, managedKey("acme", 1), testSealed(1)), registry.Conflict, "a managed key with a taken KeyID")
		_, _, err := x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey after the refused add")
		list, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "keys after the refused add", list, []registry.SigningKey{uploaded}, normKey)
	})
	t.Run("DeleteRemovesPrivateKey", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		first := managedKey("acme", 1)
		mustOK(t, x.AddManagedSigningKey(ctx, first, testSealed(1)), "AddManagedSigningKey")
		mustOK(t, x.DeleteSigningKey(ctx, "acme", first.KeyID), "DeleteSigningKey of the managed key")
		_, _, err := x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey after its key was removed")
		// The same key ID comes back as an uploaded key without a
		// private half: nothing of the old row survived.
		mustOK(t, x.AddSigningKey(ctx, testKey("acme", 1)), "AddSigningKey with the removed key's ID")
		_, _, err = x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey after an uploaded key took the ID")
		mustOK(t, x.DeleteSigningKey(ctx, "acme", first.KeyID), "DeleteSigningKey")
		second := managedKey("acme", 2)
		mustOK(t, x.AddManagedSigningKey(ctx, second, testSealed(2)), "AddManagedSigningKey after the first was removed")
		got, sealed, err := x.ManagedSigningKey(ctx, "acme")
		mustOK(t, err, "ManagedSigningKey")
		checkEqual(t, "the replacement managed key", got, second, normKey)
		if !bytes.Equal(sealed, testSealed(2)) {
			t.Errorf("ManagedSigningKey returned the old sealed private key")
		}
	})
	t.Run("DeleteNamespaceRemovesPrivateKey", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.AddManagedSigningKey(ctx, managedKey("acme", 1), testSealed(1)), "AddManagedSigningKey")
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		createNamespaces(t, x, "acme")
		_, _, err := x.ManagedSigningKey(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ManagedSigningKey of a recreated namespace")
	})
	t.Run("SnapshotIsNotManaged", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := managedKey("acme", 1)
		key.ExpiresAt = time.Time{}
		mustOK(t, x.AddManagedSigningKey(ctx, key, testSealed(1)), "AddManagedSigningKey")
		v := testVersion("acme", "cloud", "1.0.0", key, t0)
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		want := v
		want.SigningKey.Managed = false
		checkEqual(t, "version signed by a managed key", got, want, normVersion)
	})
}
