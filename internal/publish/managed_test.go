package publish_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
)

// withManaged gives e's publisher managed signing with a secret in a
// temporary file, and namespace acme a managed key next to its uploaded
// one; it returns the managed key.
func (e *env) withManaged(t *testing.T, generate bool) registry.SigningKey {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "signing-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 44)), 0o600); err != nil {
		t.Fatal(err)
	}
	return e.withManagedSecret(t, secret, generate)
}

func (e *env) withManagedSecret(t *testing.T, secret string, generate bool) registry.SigningKey {
	t.Helper()
	m := signing.NewManaged(signing.ManagedOptions{Keys: e.idx, Secret: signing.SecretFile{Path: secret}, KeyBits: 2048})
	e.pub = publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tmp, Managed: m})
	if !generate {
		return registry.SigningKey{}
	}
	key, err := m.Generate(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// unsigned returns files without the .sig.
func unsigned(files []releasetest.File) []releasetest.File {
	var out []releasetest.File
	for _, f := range files {
		if !strings.HasSuffix(f.Name, ".sig") {
			out = append(out, f)
		}
	}
	return out
}

func TestPublishUnsignedIsSignedByTheManagedKey(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	key := e.withManaged(t, true)
	rel := build(t, e.key, "1.0.0", "")
	res, err := e.publish(t, "1.0.0", unsigned(rel.Files))
	if err != nil {
		t.Fatalf("publish without .sig: %v", err)
	}
	if !res.Created || res.Version.SigningKey.KeyID != key.KeyID {
		t.Fatalf("publish = created %v, key %s; want created by managed key %s", res.Created, res.Version.SigningKey.KeyID, key.KeyID)
	}
	got, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if got.SigningKey.KeyID != key.KeyID || got.SigningKey.ASCIIArmor != key.ASCIIArmor {
		t.Errorf("stored version is signed by %s, want the managed key %s", got.SigningKey.KeyID, key.KeyID)
	}
	sums := readBlob(t, e, got.SHASumsDigest)
	if !bytes.Equal(sums, rel.ByName(rel.Prefix()+"_SHA256SUMS")) {
		t.Errorf("stored SHA256SUMS differs from the uploaded one")
	}
	sig := readBlob(t, e, got.SHASumsSignatureDigest)
	keys, _ := e.idx.ListSigningKeys(ctx, "acme")
	if signer, err := signing.VerifyDetached(keys, sums, sig); err != nil || signer.KeyID != key.KeyID {
		t.Errorf("the stored signature does not verify with the managed key: %s, %v", signer.KeyID, err)
	}

	// A retry of the same release is idempotent, though its signature
	// would differ.
	if res, err := e.publish(t, "1.0.0", unsigned(rel.Files)); err != nil || res.Created {
		t.Errorf("retry = created %v, %v; want an idempotent success", res.Created, err)
	}
}

func TestPublishWithSignatureIgnoresTheManagedKey(t *testing.T) {
	e := newEnv(t, nil)
	e.withManaged(t, true)
	rel := build(t, e.key, "1.0.0", "")
	res, err := e.publish(t, "1.0.0", rel.Files)
	if err != nil || res.Version.SigningKey.KeyID != e.key.KeyID {
		t.Fatalf("publish with its own .sig = key %s, %v; want the uploader's key %s", res.Version.SigningKey.KeyID, err, e.key.KeyID)
	}

	// A broken signature is refused, never replaced by Trove's.
	other := build(t, e.key, "2.0.0", "")
	files := append([]releasetest.File(nil), other.Files...)
	files[1] = releasetest.File{Name: files[1].Name, Data: rel.ByName(rel.Prefix() + "_SHA256SUMS.sig")}
	if _, err := e.publish(t, "2.0.0", files); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("publish with a wrong .sig: %v; want a signature mismatch", err)
	}
}

func TestPublishUnsignedRefused(t *testing.T) {
	rel := func(e *env) []releasetest.File { return unsigned(build(t, e.key, "1.0.0", "").Files) }
	t.Run("NoManagedSigning", func(t *testing.T) {
		e := newEnv(t, nil)
		_, err := e.publish(t, "1.0.0", rel(e))
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "the second file must be the signature") {
			t.Errorf("publish without .sig = %v", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})
	t.Run("NamespaceWithoutManagedKey", func(t *testing.T) {
		e := newEnv(t, nil)
		e.withManaged(t, false)
		_, err := e.publish(t, "1.0.0", rel(e))
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "trove key generate acme") {
			t.Errorf("publish without .sig = %v; want a refusal naming trove key generate", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})
	t.Run("ReplicaWithAnotherSecret", func(t *testing.T) {
		e := newEnv(t, nil)
		e.withManaged(t, true)
		wrong := filepath.Join(t.TempDir(), "other-secret")
		if err := os.WriteFile(wrong, []byte(strings.Repeat("w", 44)), 0o600); err != nil {
			t.Fatal(err)
		}
		e.withManagedSecret(t, wrong, false)
		_, err := e.publish(t, "1.0.0", rel(e))
		if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "signing secret") {
			t.Errorf("publish on a replica with another secret = %v", err)
		}
		// The publisher is not told the server's file paths.
		if msg := registry.Message(err); strings.Contains(msg, wrong) || strings.Contains(msg, filepath.Dir(wrong)) {
			t.Errorf("the answer to the publisher names a server path: %s", msg)
		}
		e.assertNothingStored(t, "1.0.0")
	})
	t.Run("OnlySHA256SUMS", func(t *testing.T) {
		e := newEnv(t, nil)
		e.withManaged(t, true)
		files := rel(e)[:1]
		if _, err := e.publish(t, "1.0.0", files); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("publish of SHA256SUMS alone = %v; want invalid", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})
}

func readBlob(t *testing.T, e *env, digest string) []byte {
	t.Helper()
	b, err := e.blobs.Open(context.Background(), digest)
	if err != nil {
		t.Fatalf("blob %s: %v", digest, err)
	}
	defer b.Close()
	data, err := io.ReadAll(b.Content)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
