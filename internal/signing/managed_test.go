package signing_test

import (
	"bytes"
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// testBits keeps generated keys small where their size does not matter.
const testBits = 2048

var managedSums = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-cloud_1.0.0_linux_amd64.zip\n")

// managedEnv is an index with namespaces acme and other, and a secret file.
type managedEnv struct {
	idx    *sqlite.Index
	secret signing.SecretFile
	dir    string
}

func newManagedEnv(t *testing.T) *managedEnv {
	t.Helper()
	dir := t.TempDir()
	idx := sqlitetest.NewIndex(t)
	for _, ns := range []string{"acme", "other"} {
		if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return &managedEnv{idx: idx, dir: dir, secret: writeSecret(t, dir, "secret", strings.Repeat("s", 40))}
}

func writeSecret(t *testing.T, dir, name, content string) signing.SecretFile {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return signing.SecretFile{Path: path}
}

func (e *managedEnv) managed(secret signing.SecretFile) *signing.Managed {
	return signing.NewManaged(signing.ManagedOptions{Keys: e.idx, Secret: secret, KeyBits: testBits})
}

func TestManagedKeySignsWhatTheClientsVerify(t *testing.T) {
	e := newManagedEnv(t)
	// The real size once: the generated key must be RSA 4096.
	m := signing.NewManaged(signing.ManagedOptions{Keys: e.idx, Secret: e.secret})
	key, err := m.Generate(t.Context(), "acme")
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if !key.Managed || key.Namespace != "acme" || len(key.KeyID) != 16 || len(key.Fingerprint) != 40 || !strings.HasSuffix(key.Fingerprint, key.KeyID) {
		t.Errorf("generated key = %+v", key)
	}
	if strings.Contains(key.ASCIIArmor, "PRIVATE") {
		t.Fatalf("the public armor holds a private key")
	}
	reparsed, err := signing.ParsePublicKey(key.ASCIIArmor)
	if err != nil || reparsed.ASCIIArmor != key.ASCIIArmor || reparsed.KeyID != key.KeyID {
		t.Fatalf("the generated public key does not pass as an uploaded one: %v", err)
	}
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(key.ASCIIArmor))
	if err != nil || len(ring) != 1 {
		t.Fatalf("ReadArmoredKeyRing: %v", err)
	}
	pk := ring[0].PrimaryKey
	if bits, _ := pk.BitLength(); pk.PubKeyAlgo != packet.PubKeyAlgoRSA || bits != signing.ManagedKeyBits || pk.Version != 4 {
		t.Errorf("key is algorithm %d, %d bits, v%d; want RSA %d, v4", pk.PubKeyAlgo, bits, pk.Version, signing.ManagedKeyBits)
	}

	listed, err := e.idx.ListSigningKeys(t.Context(), "acme")
	if err != nil || len(listed) != 1 || !listed[0].Managed || listed[0].KeyID != key.KeyID {
		t.Fatalf("ListSigningKeys = %+v, %v; want the managed key", listed, err)
	}
	signer, sig, err := m.Sign(t.Context(), "acme", managedSums)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	if signer.KeyID != key.KeyID {
		t.Errorf("Sign used key %s, want %s", signer.KeyID, key.KeyID)
	}
	got, err := signing.VerifyDetached(listed, managedSums, sig)
	if err != nil || got.KeyID != key.KeyID {
		t.Fatalf("VerifyDetached = %s, %v", got.KeyID, err)
	}
	p, err := packet.Read(bytes.NewReader(sig))
	if err != nil {
		t.Fatalf("the signature is not a binary OpenPGP packet: %v", err)
	}
	s, ok := p.(*packet.Signature)
	if !ok || s.SigType != packet.SigTypeBinary || s.Hash != crypto.SHA256 || s.SigLifetimeSecs != nil && *s.SigLifetimeSecs != 0 {
		t.Errorf("signature packet = %T %+v; want a binary SHA-256 signature without expiry", p, s)
	}
	if _, err := signing.VerifyDetached(listed, append(bytes.Clone(managedSums), 'x'), sig); err == nil {
		t.Errorf("the signature verifies other bytes")
	}

	// The private key is sealed: neither its packets nor the public
	// modulus they contain appear in the stored bytes.
	_, sealed, err := e.idx.ManagedSigningKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var pubPacket bytes.Buffer
	if err := pk.Serialize(&pubPacket); err != nil {
		t.Fatal(err)
	}
	if body := pubPacket.Bytes()[len(pubPacket.Bytes())-200:]; bytes.Contains(sealed, body) {
		t.Errorf("the stored private key holds the key's modulus in the clear")
	}
}

func TestManagedKeyIsBoundToItsSecretNamespaceAndKey(t *testing.T) {
	e := newManagedEnv(t)
	ctx := t.Context()
	key, err := e.managed(e.secret).Generate(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	_, sealed, err := e.idx.ManagedSigningKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("WrongSecret", func(t *testing.T) {
		other := writeSecret(t, e.dir, "other-secret", strings.Repeat("t", 40))
		_, sig, err := e.managed(other).Sign(ctx, "acme", managedSums)
		wantUnavailable(t, err, sig, "was sealed with signing secret", "give every replica the same")
	})
	t.Run("NoSecret", func(t *testing.T) {
		_, sig, err := e.managed(signing.SecretFile{}).Sign(ctx, "acme", managedSums)
		wantUnavailable(t, err, sig, "--signing-secret-file")
	})
	t.Run("SecretFileGone", func(t *testing.T) {
		gone := signing.SecretFile{Path: filepath.Join(e.dir, "missing"), Create: true}
		_, sig, err := e.managed(gone).Sign(ctx, "acme", managedSums)
		wantUnavailable(t, err, sig, "does not exist")
		if _, err := os.Stat(gone.Path); err == nil {
			t.Errorf("Sign created a new secret file; only Generate may")
		}
	})
	t.Run("MovedToAnotherNamespace", func(t *testing.T) {
		moved := key
		moved.Namespace = "other"
		if err := e.idx.AddManagedSigningKey(ctx, moved, sealed); err != nil {
			t.Fatal(err)
		}
		_, sig, err := e.managed(e.secret).Sign(ctx, "other", managedSums)
		wantUnavailable(t, err, sig, "does not open", "copied from another namespace")
	})
	t.Run("Altered", func(t *testing.T) {
		if err := e.idx.DeleteSigningKey(ctx, "acme", key.KeyID); err != nil {
			t.Fatal(err)
		}
		altered := bytes.Clone(sealed)
		altered[len(altered)-1] ^= 1
		if err := e.idx.AddManagedSigningKey(ctx, key, altered); err != nil {
			t.Fatal(err)
		}
		_, sig, err := e.managed(e.secret).Sign(ctx, "acme", managedSums)
		wantUnavailable(t, err, sig, "does not open")
	})
	t.Run("Intact", func(t *testing.T) {
		if err := e.idx.DeleteSigningKey(ctx, "acme", key.KeyID); err != nil {
			t.Fatal(err)
		}
		if err := e.idx.AddManagedSigningKey(ctx, key, sealed); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.managed(e.secret).Sign(ctx, "acme", managedSums); err != nil {
			t.Errorf("Sign with the right secret, namespace and key: %v", err)
		}
	})
}

// wantUnavailable checks a refused signature: no signature, an
// Unavailable error saying each of parts, and no key material.
func wantUnavailable(t *testing.T, err error, sig []byte, parts ...string) {
	t.Helper()
	if err == nil || sig != nil {
		t.Fatalf("Sign = %d signature bytes, %v; want a refusal", len(sig), err)
	}
	if !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("error kind %v, want unavailable: %v", registry.KindOf(err), err)
	}
	msg := registry.Message(err)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("error %q does not say %q", msg, p)
		}
	}
	if strings.Contains(msg, "PGP") {
		t.Errorf("error %q shows key material", msg)
	}
}

func TestManagedGenerateRefusals(t *testing.T) {
	e := newManagedEnv(t)
	ctx := t.Context()
	_, err := e.managed(signing.SecretFile{}).Generate(ctx, "acme")
	if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(registry.Message(err), "--signing-secret-file") {
		t.Errorf("Generate without a secret: %v; want an error naming --signing-secret-file", err)
	}
	short := writeSecret(t, e.dir, "short", "too short\n")
	if _, err := e.managed(short).Generate(ctx, "acme"); !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "must hold 32") {
		t.Errorf("Generate with a short secret: %v", err)
	}
	if err := short.Check(); err == nil {
		t.Errorf("Check accepts a short secret")
	}
	if _, err := e.managed(e.secret).Generate(ctx, "nope"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("Generate in a missing namespace: %v; want not found", err)
	}
	if keys, _ := e.idx.ListSigningKeys(ctx, "acme"); len(keys) != 0 {
		t.Errorf("refused generations stored keys: %+v", keys)
	}
	if _, err := e.managed(e.secret).Generate(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.managed(e.secret).Generate(ctx, "acme"); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("a second managed key: %v; want conflict", err)
	}
	if _, _, err := e.managed(e.secret).Sign(ctx, "other", managedSums); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("Sign without a managed key: %v; want not found", err)
	}
}

func TestManagedSecretCreatedOnFirstGenerate(t *testing.T) {
	e := newManagedEnv(t)
	secret := signing.SecretFile{Path: filepath.Join(e.dir, "data", "signing-secret"), Create: true}
	if err := secret.Check(); err != nil {
		t.Fatalf("Check of a default secret not created yet: %v", err)
	}
	if _, err := os.Stat(secret.Path); err == nil {
		t.Fatalf("the secret exists before any managed key")
	}
	if _, err := e.managed(secret).Generate(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(secret.Path)
	if err != nil {
		t.Fatalf("the secret was not created: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode %v, want 0600", fi.Mode().Perm())
	}
	if err := secret.Check(); err != nil {
		t.Errorf("Check of the created secret: %v", err)
	}
	first, _ := os.ReadFile(secret.Path)
	if _, err := e.managed(secret).Generate(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(secret.Path); !bytes.Equal(first, again) {
		t.Errorf("a second key replaced the secret")
	}
	if _, _, err := e.managed(secret).Sign(t.Context(), "acme", managedSums); err != nil {
		t.Errorf("Sign with the created secret: %v", err)
	}
}
