package signing

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"trove.dev/trove/internal/registry"
)

// MaxPrivateKeyBytes bounds an armored private key file.
const MaxPrivateKeyBytes = 256 << 10

const exportSecretHint = "export it with: gpg --armor --export-secret-keys KEYID > key.asc"

// KeyFileSigner signs release SHA256SUMS documents with an OpenPGP private
// key read from a file, in Go, so that releasing needs no gpg.
type KeyFileSigner struct {
	entity *openpgp.Entity
	public registry.SigningKey
}

// ReadKeyFile reads an ASCII-armored OpenPGP private key, as
// gpg --armor --export-secret-keys KEYID writes it: exactly one key whose
// public half ParsePublicKey accepts (so that a namespace can register
// it). When the key is protected, passphrase is called once for the
// passphrase that unlocks it; it is not called for an unprotected key.
func ReadKeyFile(armored []byte, passphrase func() ([]byte, error)) (*KeyFileSigner, error) {
	if len(armored) > MaxPrivateKeyBytes {
		return nil, registry.Errorf(registry.TooLarge, "the key file is larger than %d KiB; %s", MaxPrivateKeyBytes>>10, exportSecretHint)
	}
	text := strings.TrimSpace(string(armored))
	switch {
	case strings.HasPrefix(text, beginPublic):
		return nil, registry.Errorf(registry.Invalid, "the key file holds a public key; signing needs the private key: %s", exportSecretHint)
	case !strings.HasPrefix(text, beginPrivate):
		return nil, registry.Errorf(registry.Invalid, "the key file is not an ASCII-armored private key (it must start with %s); %s", beginPrivate, exportSecretHint)
	}
	block, err := armor.Decode(strings.NewReader(text))
	if err != nil || block.Type != openpgp.PrivateKeyType {
		return nil, registry.Errorf(registry.Invalid, "the key file's armor is corrupt; %s", exportSecretHint)
	}
	entities, err := openpgp.ReadKeyRing(block.Body)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "the key file does not parse: %s; %s", pgpReason(err), exportSecretHint)
	}
	if len(entities) != 1 {
		return nil, registry.Errorf(registry.Invalid, "the key file holds %d keys; export the one that signs releases: gpg --armor --export-secret-keys KEYID", len(entities))
	}
	e := entities[0]

	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err == nil {
		err = e.Serialize(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("exporting the public half of key %s: %w", e.PrimaryKey.KeyIdString(), err)
	}
	public, err := ParsePublicKey(pub.String())
	if err != nil {
		return nil, registry.Errorf(registry.KindOf(err), "the key in the key file cannot sign releases: %s", registry.Message(err))
	}

	key, ok := e.SigningKey(time.Now())
	if !ok || key.PrivateKey == nil || key.PrivateKey.Dummy() {
		return nil, registry.Errorf(registry.Invalid, "key %s has no usable private signing key in the key file (expired, or exported without its secret signing key); %s", public.KeyID, exportSecretHint)
	}
	if encrypted(e) {
		if passphrase == nil {
			return nil, registry.Errorf(registry.Invalid, "key %s is protected by a passphrase", public.KeyID)
		}
		pass, err := passphrase()
		if err != nil {
			return nil, err
		}
		if err := e.DecryptPrivateKeys(pass); err != nil {
			return nil, registry.Errorf(registry.Invalid, "the passphrase does not unlock key %s (%s)", public.KeyID, pgpReason(err))
		}
	}
	return &KeyFileSigner{entity: e, public: public}, nil
}

// encrypted reports whether any private key of e is protected.
func encrypted(e *openpgp.Entity) bool {
	if e.PrivateKey != nil && !e.PrivateKey.Dummy() && e.PrivateKey.Encrypted {
		return true
	}
	for _, sk := range e.Subkeys {
		if sk.PrivateKey != nil && !sk.PrivateKey.Dummy() && sk.PrivateKey.Encrypted {
			return true
		}
	}
	return false
}

// PublicKey returns the public half of the key, as ParsePublicKey returns
// it: what `trove key add` registers for a namespace.
func (s *KeyFileSigner) PublicKey() registry.SigningKey { return s.public }

// SignDetached returns a binary detached signature of data (SHA-256, no
// expiry), as gpg --detach-sign writes it, and checks it with
// VerifyDetached as a registry will.
func (s *KeyFileSigner) SignDetached(data []byte) ([]byte, error) {
	var sig bytes.Buffer
	if err := openpgp.DetachSign(&sig, s.entity, bytes.NewReader(data), nil); err != nil {
		return nil, fmt.Errorf("signing with key %s: %s", s.public.KeyID, pgpReason(err))
	}
	if _, err := VerifyDetached([]registry.SigningKey{s.public}, data, sig.Bytes()); err != nil {
		return nil, fmt.Errorf("the signature made with key %s does not verify: %w", s.public.KeyID, err)
	}
	return sig.Bytes(), nil
}
