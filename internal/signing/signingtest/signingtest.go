// Package signingtest makes throwaway OpenPGP keys and detached signatures
// for tests, with ProtonMail/go-crypto (the library Terraform and OpenTofu
// verify with), so that no test needs gpg.
package signingtest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Algorithm is the public-key algorithm of a generated key.
type Algorithm int

// The algorithms NewKeyWith can generate. Both verify in every Terraform and
// OpenTofu release that checks provider signatures.
const (
	RSA     Algorithm = iota // RSA 3072 with an RSA encryption subkey, as gpg's classic default
	Ed25519                  // legacy EdDSA (v4 key, algorithm 22) with a cv25519 subkey, as gpg's current default
)

// Options shapes a generated key. The zero value is a valid RSA key created
// now that never expires.
type Options struct {
	Algorithm Algorithm
	// SigningSubkey adds a signing subkey; signatures are then made by the
	// subkey, not by the primary key.
	SigningSubkey bool
	// Created is the key's creation time; zero means now. Signatures are
	// dated one second after it, so a key created in the past with a short
	// Lifetime yields valid signatures from a key that has since expired.
	Created time.Time
	// Lifetime makes the key expire that long after Created; zero: never.
	Lifetime time.Duration
	// SubkeyLifetime makes the signing subkey (with SigningSubkey) expire
	// that long after Created; zero: as Lifetime says.
	SubkeyLifetime time.Duration
	// Revoked adds a revocation of the primary key, dated two seconds
	// after Created (an hour ago when Created is zero).
	Revoked bool
}

// Key is a generated key pair with its public and private halves armored.
type Key struct {
	ArmoredPublic  string // "-----BEGIN PGP PUBLIC KEY BLOCK-----" ... as gpg --armor --export writes it
	ArmoredPrivate string // the unprotected secret key, as gpg --armor --export-secret-keys writes it
	KeyID          string // 16 upper-case hex digits of the primary key
	Fingerprint    string // 40 upper-case hex digits of the primary key
	// SignerKeyID is the 16 upper-case hex key ID signatures carry as
	// issuer: the signing subkey's with SigningSubkey, else KeyID.
	SignerKeyID string
	// Entity is the generated key with its private parts, for tests that
	// need more than the methods below.
	Entity *openpgp.Entity

	signAt time.Time // zero: sign now
}

// NewKey returns a fresh RSA 3072 key for the user name (e.g. a namespace).
// It fails the test if generation fails.
func NewKey(t testing.TB, name string) *Key {
	t.Helper()
	return NewKeyWith(t, name, Options{})
}

// NewKeyWith returns a fresh key shaped by opt.
func NewKeyWith(t testing.TB, name string, opt Options) *Key {
	t.Helper()
	created := opt.Created
	if created.IsZero() && opt.Revoked {
		created = time.Now().Add(-time.Hour)
	}
	cfg := &packet.Config{RSABits: 3072}
	if !created.IsZero() {
		cfg.Time = func() time.Time { return created }
	}
	if opt.Algorithm == Ed25519 {
		cfg.Algorithm = packet.PubKeyAlgoEdDSA
		cfg.Curve = packet.Curve25519
	}
	if opt.Lifetime > 0 {
		cfg.KeyLifetimeSecs = uint32(opt.Lifetime / time.Second)
	}
	e, err := openpgp.NewEntity(name, "throwaway test key", strings.ToLower(name)+"@example.invalid", cfg)
	if err != nil {
		t.Fatalf("signingtest: generate key: %v", err)
	}
	if opt.SigningSubkey {
		subCfg := *cfg
		if opt.SubkeyLifetime > 0 {
			subCfg.KeyLifetimeSecs = uint32(opt.SubkeyLifetime / time.Second)
		}
		if err := e.AddSigningSubkey(&subCfg); err != nil {
			t.Fatalf("signingtest: add signing subkey: %v", err)
		}
	}
	if opt.Revoked {
		revCfg := *cfg
		revCfg.Time = func() time.Time { return created.Add(2 * time.Second) }
		if err := e.RevokeKey(packet.KeySuperseded, "test revocation", &revCfg); err != nil {
			t.Fatalf("signingtest: revoke key: %v", err)
		}
	}

	k := &Key{
		ArmoredPublic:  armored(t, openpgp.PublicKeyType, e.Serialize),
		ArmoredPrivate: armored(t, openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivateWithoutSigning(w, nil) }),
		KeyID:          e.PrimaryKey.KeyIdString(),
		Fingerprint:    fmt.Sprintf("%X", e.PrimaryKey.Fingerprint),
		SignerKeyID:    e.PrimaryKey.KeyIdString(),
		Entity:         e,
	}
	if opt.SigningSubkey {
		k.SignerKeyID = e.Subkeys[len(e.Subkeys)-1].PublicKey.KeyIdString()
	}
	if !created.IsZero() {
		k.signAt = created.Add(time.Second)
	}
	return k
}

// Sign returns a binary detached signature of data, as
// gpg --detach-sign writes it. It may be called from any test or
// goroutine; it panics if signing fails, which a generated key never does.
func (k *Key) Sign(data []byte) []byte {
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, k.Entity, bytes.NewReader(data), k.signConfig()); err != nil {
		panic(fmt.Sprintf("signingtest: sign with key %s: %v", k.KeyID, err))
	}
	return buf.Bytes()
}

// SignArmored returns an ASCII-armored detached signature of data, as
// gpg --armor --detach-sign writes it (which the clients do not accept).
func (k *Key) SignArmored(data []byte) []byte {
	var buf bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&buf, k.Entity, bytes.NewReader(data), k.signConfig()); err != nil {
		panic(fmt.Sprintf("signingtest: sign with key %s: %v", k.KeyID, err))
	}
	return buf.Bytes()
}

func (k *Key) signConfig() *packet.Config {
	cfg := &packet.Config{}
	if !k.signAt.IsZero() {
		at := k.signAt
		cfg.Time = func() time.Time { return at }
	}
	if k.SignerKeyID != k.KeyID {
		cfg.SigningKeyId = k.Entity.Subkeys[len(k.Entity.Subkeys)-1].PublicKey.KeyId
	}
	return cfg
}

func armored(t testing.TB, blockType string, serialize func(io.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		t.Fatalf("signingtest: armor: %v", err)
	}
	if err := serialize(w); err != nil {
		t.Fatalf("signingtest: serialize key: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("signingtest: armor: %v", err)
	}
	buf.WriteByte('\n')
	return buf.String()
}
