package signing

// Registry-managed signing keys: Trove generates a namespace's OpenPGP key,
// keeps its private half sealed in the index, and signs the SHA256SUMS of
// releases published without a signature.
//
// Choices, so that every Terraform and OpenTofu release installs what the
// key signs:
//
//   - The key is an RSA 4096 v4 primary key that signs and certifies, with
//     no subkeys: RSA v4 is read by every ProtonMail/go-crypto version the
//     clients ship, whatever their age. The public half goes through
//     ParsePublicKey, the very checks an uploaded key passes.
//   - Signatures are binary detached v4 signatures over SHA-256 without an
//     expiry, and each one is verified with VerifyDetached before it is
//     returned: Trove never hands out a signature that does not verify.
//   - The private half is serialized as OpenPGP packets and sealed with
//     XChaCha20-Poly1305 under a 256-bit key derived (HKDF-SHA-256) from
//     the key-encryption secret. The associated data binds the sealed
//     bytes to their namespace and key ID, so that a row copied to another
//     namespace or key does not open. The secret lives in a file outside
//     the index (SecretFile); a database dump alone reveals no private key.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"golang.org/x/crypto/chacha20poly1305"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ManagedKeyBits is the RSA modulus size of generated keys.
const ManagedKeyBits = 4096

// Bounds of the key-encryption secret, in bytes of the file's content
// without surrounding white space.
const (
	MinSecretBytes = 32
	MaxSecretBytes = 4096
)

// sealMagic starts every sealed private key: the format version.
var sealMagic = []byte("TSK1")

// secretIDBytes is the length of a secret's public identifier.
const secretIDBytes = 8

// SecretFile locates the key-encryption secret of managed keys.
type SecretFile struct {
	// Path is the file holding the secret; "" means none is configured,
	// and managed keys can then neither be generated nor used.
	Path string
	// Create makes Generate create a missing Path (32 random bytes,
	// base64, mode 0600): the embedded default in the data directory.
	// Signing never creates it: a new secret could not open keys sealed
	// with an old one.
	Create bool
}

// Flag names the configuration that sets the secret, for messages.
const secretFlag = "--signing-secret-file (TROVE_SIGNING_SECRET_FILE)"

// load reads the secret; with create, a missing file is created first.
func (f SecretFile) load(create bool) ([]byte, error) {
	if f.Path == "" {
		return nil, registry.Errorf(registry.Unavailable,
			"this Trove has no signing secret, so it cannot keep managed signing keys: start every replica with %s naming the same file of at least %d random bytes (e.g. made with: openssl rand -base64 32 > signing-secret)", secretFlag, MinSecretBytes)
	}
	data, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) && create && f.Create {
		if err := createSecret(f.Path); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(f.Path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, registry.Errorf(registry.Unavailable,
			"the signing secret file %s does not exist: give this Trove the file every replica shares (%s); without it managed signing keys cannot be used", f.Path, secretFlag)
	}
	if err != nil {
		return nil, registry.Errorf(registry.Unavailable, "cannot read the signing secret file %s: %s", f.Path, pathlessReason(err))
	}
	secret := bytes.TrimSpace(data)
	if len(secret) < MinSecretBytes || len(secret) > MaxSecretBytes {
		return nil, registry.Errorf(registry.Unavailable,
			"the signing secret file %s holds %d bytes; it must hold %d to %d (e.g. made with: openssl rand -base64 32)", f.Path, len(secret), MinSecretBytes, MaxSecretBytes)
	}
	return secret, nil
}

// Check reads the secret once, so that a misconfigured server fails at
// start rather than at its first publish. A missing file that Generate
// would create is fine.
func (f SecretFile) Check() error {
	if f.Path == "" {
		return nil
	}
	_, err := f.load(false)
	if err != nil && f.Create {
		if _, statErr := os.Stat(f.Path); errors.Is(statErr, fs.ErrNotExist) {
			return nil
		}
	}
	return err
}

// createSecret writes a new random secret to path, mode 0600, without
// replacing a file another process created meanwhile.
func createSecret(path string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("generating the signing secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the directory of the signing secret: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".signing-secret-*")
	if err != nil {
		return fmt.Errorf("creating the signing secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the signing secret: %w", err)
	}
	// A hard link publishes the complete file, and fails if the name
	// exists: of two racing creators the first one's secret stays.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("storing the signing secret: %w", err)
	}
	return nil
}

// secretKeys derives the sealing key and the public identifier of secret.
func secretKeys(secret []byte) (kek []byte, id string, err error) {
	kek, err = hkdf.Key(sha256.New, secret, nil, "trove managed signing key encryption v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, "", err
	}
	idBytes, err := hkdf.Key(sha256.New, secret, nil, "trove signing secret identifier v1", secretIDBytes)
	if err != nil {
		return nil, "", err
	}
	return kek, hex.EncodeToString(idBytes), nil
}

// associatedData binds a sealed key to its namespace and key ID.
func associatedData(header []byte, namespace, keyID string) []byte {
	ad := append([]byte(nil), header...)
	ad = append(ad, "trove managed signing key\x00"...)
	ad = append(ad, namespace...)
	ad = append(ad, 0)
	return append(ad, keyID...)
}

// seal encrypts plain for namespace and keyID under secret.
func seal(secret, plain []byte, namespace, keyID string) ([]byte, error) {
	kek, id, err := secretKeys(secret)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.NewX(kek)
	if err != nil {
		return nil, err
	}
	idBytes, _ := hex.DecodeString(id)
	header := append(append([]byte(nil), sealMagic...), idBytes...)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append(append([]byte(nil), header...), nonce...)
	return aead.Seal(out, nonce, plain, associatedData(header, namespace, keyID)), nil
}

// open decrypts a sealed key of namespace and keyID with secret.
func open(secret, sealed []byte, namespace, keyID string) ([]byte, error) {
	kek, id, err := secretKeys(secret)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.NewX(kek)
	if err != nil {
		return nil, err
	}
	headerLen := len(sealMagic) + secretIDBytes
	if len(sealed) < headerLen+aead.NonceSize()+aead.Overhead() || !bytes.HasPrefix(sealed, sealMagic) {
		return nil, registry.Errorf(registry.Unavailable,
			"the stored private key of the managed signing key %s of namespace %s is not in a format this Trove reads; generate a new managed key", keyID, namespace)
	}
	header := sealed[:headerLen]
	if got := hex.EncodeToString(header[len(sealMagic):]); got != id {
		return nil, registry.Errorf(registry.Unavailable,
			"the managed signing key %s of namespace %s was sealed with signing secret %s, but this Trove has secret %s: give every replica the same %s",
			keyID, namespace, got, id, secretFlag)
	}
	nonce := sealed[headerLen : headerLen+aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, sealed[headerLen+aead.NonceSize():], associatedData(header, namespace, keyID))
	if err != nil {
		return nil, registry.Errorf(registry.Unavailable,
			"the stored private key of the managed signing key %s of namespace %s does not open with this Trove's signing secret: it was altered, or copied from another namespace or key; remove the key and generate a new one", keyID, namespace)
	}
	return plain, nil
}

// pathlessReason returns the reason of a file error without its path.
func pathlessReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ManagedOptions configures a Managed.
type ManagedOptions struct {
	// Keys stores the keys (the index).
	Keys store.SigningKeys
	// Secret locates the key-encryption secret.
	Secret SecretFile
	// KeyBits is the RSA modulus size of generated keys; 0 means
	// ManagedKeyBits. Only tests choose smaller keys, to run faster.
	KeyBits int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Managed generates registry-managed keys and signs with them. It is safe
// for concurrent use. Private key material never appears in what it
// returns, in its errors or in logs.
type Managed struct {
	opt ManagedOptions
}

// NewManaged returns a Managed.
func NewManaged(opt ManagedOptions) *Managed {
	if opt.KeyBits == 0 {
		opt.KeyBits = ManagedKeyBits
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Managed{opt: opt}
}

// Generate creates a new managed key for namespace and stores it: its
// public half as a signing key of the namespace (Managed set), its private
// half sealed. It fails Unavailable without a usable secret, NotFound
// without the namespace and Conflict if the namespace has a managed key
// already (checked before the slow key generation, and again by the
// store).
func (m *Managed) Generate(ctx context.Context, namespace string) (registry.SigningKey, error) {
	secret, err := m.opt.Secret.load(true)
	if err != nil {
		return registry.SigningKey{}, err
	}
	if _, _, err := m.opt.Keys.ManagedSigningKey(ctx, namespace); err == nil {
		return registry.SigningKey{}, registry.Errorf(registry.Conflict,
			"namespace %s already has a managed signing key (one per namespace): remove it first with trove key remove to replace it", namespace)
	} else if !registry.IsKind(err, registry.NotFound) {
		return registry.SigningKey{}, err
	}
	if _, err := m.opt.Keys.ListSigningKeys(ctx, namespace); err != nil {
		return registry.SigningKey{}, err // NotFound for a missing namespace
	}

	created := m.opt.Now().UTC().Truncate(time.Second)
	key, private, err := newManagedKey(namespace, created, m.opt.KeyBits)
	if err != nil {
		return registry.SigningKey{}, err
	}
	defer clear(private)
	sealed, err := seal(secret, private, namespace, key.KeyID)
	if err != nil {
		return registry.SigningKey{}, fmt.Errorf("sealing the managed key of namespace %s: %w", namespace, err)
	}
	key.Namespace, key.CreatedAt, key.Managed = namespace, created, true
	if err := m.opt.Keys.AddManagedSigningKey(ctx, key, sealed); err != nil {
		return registry.SigningKey{}, err
	}
	return key, nil
}

// newManagedKey generates the key pair: the public key as ParsePublicKey
// returns it, and the private key's OpenPGP packets.
func newManagedKey(namespace string, created time.Time, bits int) (registry.SigningKey, []byte, error) {
	raw, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return registry.SigningKey{}, nil, fmt.Errorf("generating an RSA key: %w", err)
	}
	priv := packet.NewSignerPrivateKey(created, raw)
	e := &openpgp.Entity{
		PrimaryKey: &priv.PublicKey,
		PrivateKey: priv,
		Identities: map[string]*openpgp.Identity{},
	}
	cfg := &packet.Config{Time: func() time.Time { return created }, DefaultHash: crypto.SHA256}
	if err := e.AddUserId("Trove namespace "+namespace, "registry-managed signing key", "", cfg); err != nil {
		return registry.SigningKey{}, nil, fmt.Errorf("self-signing the key: %w", err)
	}

	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err == nil {
		err = e.Serialize(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return registry.SigningKey{}, nil, fmt.Errorf("armoring the public key: %w", err)
	}
	key, err := ParsePublicKey(pub.String())
	if err != nil {
		return registry.SigningKey{}, nil, fmt.Errorf("the generated public key fails the checks of an uploaded one: %w", err)
	}
	var private bytes.Buffer
	if err := e.SerializePrivateWithoutSigning(&private, nil); err != nil {
		return registry.SigningKey{}, nil, fmt.Errorf("serializing the private key: %w", err)
	}
	return key, private.Bytes(), nil
}

// Sign makes a binary detached signature of data (a SHA256SUMS document)
// with the managed key of namespace and returns the key with it. The
// signature is verified against the stored public key before it is
// returned. NotFound if the namespace has no managed key; Unavailable if
// this Trove's secret is missing or does not open the key.
func (m *Managed) Sign(ctx context.Context, namespace string, data []byte) (registry.SigningKey, []byte, error) {
	key, sealed, err := m.opt.Keys.ManagedSigningKey(ctx, namespace)
	if err != nil {
		return registry.SigningKey{}, nil, err
	}
	secret, err := m.opt.Secret.load(false)
	if err != nil {
		return registry.SigningKey{}, nil, err
	}
	private, err := open(secret, sealed, namespace, key.KeyID)
	if err != nil {
		return registry.SigningKey{}, nil, err
	}
	defer clear(private)
	e, err := openpgp.ReadEntity(packet.NewReader(bytes.NewReader(private)))
	if err != nil || e.PrivateKey == nil || e.PrivateKey.Encrypted {
		return registry.SigningKey{}, nil, registry.Errorf(registry.Unavailable,
			"the stored private key of the managed signing key %s of namespace %s does not parse; remove the key and generate a new one", key.KeyID, namespace)
	}
	if got := e.PrimaryKey.KeyIdString(); got != key.KeyID {
		return registry.SigningKey{}, nil, registry.Errorf(registry.Unavailable,
			"the stored private key of namespace %s belongs to key %s, not to its managed key %s; remove the key and generate a new one", namespace, got, key.KeyID)
	}
	var sig bytes.Buffer
	// The signature is dated no earlier than the key: a clock set back
	// since the key was made would otherwise make a signature the
	// clients refuse.
	now := m.opt.Now()
	if now.Before(key.CreatedAt) {
		now = key.CreatedAt
	}
	cfg := &packet.Config{DefaultHash: crypto.SHA256, Time: func() time.Time { return now }}
	if err := openpgp.DetachSign(&sig, e, bytes.NewReader(data), cfg); err != nil {
		return registry.SigningKey{}, nil, registry.Errorf(registry.Unavailable, "signing with the managed key %s of namespace %s failed: %s", key.KeyID, namespace, pgpReason(err))
	}
	if _, err := VerifyDetached([]registry.SigningKey{key}, data, sig.Bytes()); err != nil {
		return registry.SigningKey{}, nil, registry.Errorf(registry.Unavailable,
			"the signature made with the managed key %s of namespace %s does not verify against its stored public key (%s); Trove refuses to serve it: remove the key and generate a new one",
			key.KeyID, namespace, strings.TrimSpace(registry.Message(err)))
	}
	return key, sig.Bytes(), nil
}
