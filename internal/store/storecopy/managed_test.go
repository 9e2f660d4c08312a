package storecopy

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// TestCopyKeepsManagedKeys: a namespace's managed key arrives as a managed
// key with its sealed private key, byte for byte, and still signs with the
// same secret file.
func TestCopyKeepsManagedKeys(t *testing.T) {
	ctx := t.Context()
	src, _ := embedded(t)
	d := fill(t, src)
	secret := signing.SecretFile{Path: filepath.Join(t.TempDir(), "signing-secret"), Create: true}
	key, err := signing.NewManaged(signing.ManagedOptions{Keys: src.Index, Secret: secret, KeyBits: 2048}).Generate(ctx, "empty")
	must(t, err)
	_, sealed, err := src.Index.ManagedSigningKey(ctx, "empty")
	must(t, err)
	_ = d

	dst, _ := embedded(t)
	if _, err := Copy(ctx, src, dst, opts); err != nil {
		t.Fatal(err)
	}
	checkSame(t, src, dst)
	got, gotSealed, err := dst.Index.ManagedSigningKey(ctx, "empty")
	if err != nil || got.KeyID != key.KeyID || !bytes.Equal(gotSealed, sealed) {
		t.Fatalf("managed key of the copy = %s, %d sealed bytes, %v; want %s with the source's sealed key", got.KeyID, len(gotSealed), err, key.KeyID)
	}
	if _, _, err := signing.NewManaged(signing.ManagedOptions{Keys: dst.Index, Secret: secret}).Sign(ctx, "empty", []byte("sums\n")); err != nil {
		t.Errorf("the copied managed key does not sign with the same secret: %v", err)
	}

	// A target holding the same public key as an uploaded one differs.
	other, _ := embedded(t)
	must(t, other.Index.CreateNamespace(ctx, registry.Namespace{Name: "empty", CreatedAt: d.now.Add(time.Second)}))
	plain := key
	plain.Managed = false
	must(t, other.Index.AddSigningKey(ctx, plain))
	if _, err := Copy(ctx, src, other, opts); err == nil || !strings.Contains(err.Error(), "managed on one side only") {
		t.Errorf("copy onto an uploaded copy of the managed key: %v", err)
	}
}
