package signing

import (
	"bytes"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"golang.org/x/crypto/chacha20poly1305"

	"trove.dev/trove/internal/registry"
)

// sealedMagic starts every secret Seal returns: the format version.
var sealedMagic = []byte("TSS1")

// Seal encrypts plain, a secret other than a signing key (the
// credentials of a git source, say), as managed private keys are sealed:
// XChaCha20-Poly1305 under a key derived (HKDF-SHA-256) from the
// key-encryption secret, with bind, which names what the secret belongs
// to, as associated data, so that sealed bytes copied to another record
// do not open. A missing secret file is created if the SecretFile says so.
func (f SecretFile) Seal(plain []byte, bind string) ([]byte, error) {
	secret, err := f.load(true)
	if err != nil {
		return nil, err
	}
	aead, id, err := sealedAEAD(secret)
	if err != nil {
		return nil, err
	}
	header := append(append([]byte(nil), sealedMagic...), id...)
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append(append([]byte(nil), header...), nonce...)
	return aead.Seal(out, nonce, plain, sealedAD(header, bind)), nil
}

// Open decrypts what Seal returned for the same bind. Its errors never
// carry the secret or the plain text.
func (f SecretFile) Open(sealed []byte, bind string) ([]byte, error) {
	secret, err := f.load(false)
	if err != nil {
		return nil, err
	}
	aead, id, err := sealedAEAD(secret)
	if err != nil {
		return nil, err
	}
	headerLen := len(sealedMagic) + secretIDBytes
	if len(sealed) < headerLen+aead.NonceSize()+aead.Overhead() || !bytes.HasPrefix(sealed, sealedMagic) {
		return nil, registry.Errorf(registry.Unavailable, "the stored secrets of %s are not in a format this Trove reads; set them again", bind)
	}
	header := sealed[:headerLen]
	if !bytes.Equal(header[len(sealedMagic):], id) {
		return nil, registry.Errorf(registry.Unavailable,
			"the secrets of %s were sealed with signing secret %s, but this Trove has secret %s: give every replica the same %s",
			bind, hex.EncodeToString(header[len(sealedMagic):]), hex.EncodeToString(id), secretFlag)
	}
	nonce := sealed[headerLen : headerLen+aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, sealed[headerLen+aead.NonceSize():], sealedAD(header, bind))
	if err != nil {
		return nil, registry.Errorf(registry.Unavailable, "the stored secrets of %s do not open with this Trove's signing secret: they were altered or copied from another record; set them again", bind)
	}
	return plain, nil
}

// sealedAEAD derives the cipher and the secret's identifier.
func sealedAEAD(secret []byte) (aeadCipher, []byte, error) {
	kek, err := hkdf.Key(sha256.New, secret, nil, "trove sealed secret encryption v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, nil, err
	}
	_, idHex, err := secretKeys(secret)
	if err != nil {
		return nil, nil, err
	}
	id, _ := hex.DecodeString(idHex)
	aead, err := chacha20poly1305.NewX(kek)
	return aead, id, err
}

// sealedAD binds sealed bytes to their header and owner.
func sealedAD(header []byte, bind string) []byte {
	ad := append([]byte(nil), header...)
	ad = append(ad, "trove sealed secret\x00"...)
	return append(ad, bind...)
}

// aeadCipher is the part of cipher.AEAD Seal and Open use.
type aeadCipher interface {
	NonceSize() int
	Overhead() int
	Seal(dst, nonce, plaintext, additionalData []byte) []byte
	Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error)
}
