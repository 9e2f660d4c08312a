package signing_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

// armoredPrivate returns k's private key armored, protected by passphrase
// when it is not empty.
func armoredPrivate(t *testing.T, k *signingtest.Key, passphrase string) []byte {
	t.Helper()
	if passphrase != "" {
		if err := k.Entity.EncryptPrivateKeys([]byte(passphrase), nil); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Entity.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// verifies checks that sig is a signature of data by k as Trove checks it.
func verifies(t *testing.T, k *signingtest.Key, data, sig []byte) {
	t.Helper()
	pub, err := signing.ParsePublicKey(k.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := signing.VerifyDetached([]registry.SigningKey{pub}, data, sig); err != nil || got.KeyID != k.KeyID {
		t.Fatalf("VerifyDetached = %s, %v; want key %s", got.KeyID, err, k.KeyID)
	}
	if bytes.HasPrefix(sig, []byte("-----")) {
		t.Fatal("the signature is armored, want binary")
	}
}

func TestKeyFileSigner(t *testing.T) {
	for name, opt := range map[string]signingtest.Options{
		"rsa":            {},
		"ed25519":        {Algorithm: signingtest.Ed25519},
		"signing subkey": {Algorithm: signingtest.Ed25519, SigningSubkey: true},
	} {
		t.Run(name, func(t *testing.T) {
			k := signingtest.NewKeyWith(t, "acme", opt)
			s, err := signing.ReadKeyFile([]byte(k.ArmoredPrivate), func() ([]byte, error) {
				t.Error("asked for the passphrase of an unprotected key")
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.PublicKey(); got.KeyID != k.KeyID || got.Fingerprint != k.Fingerprint {
				t.Errorf("PublicKey = %s %s, want %s %s", got.KeyID, got.Fingerprint, k.KeyID, k.Fingerprint)
			}
			sig, err := s.SignDetached([]byte(sums))
			if err != nil {
				t.Fatal(err)
			}
			verifies(t, k, []byte(sums), sig)
		})
	}
}

func TestKeyFileSignerPassphrase(t *testing.T) {
	k := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
	protected := armoredPrivate(t, k, "correct horse")
	asked := 0
	ask := func(pass string) func() ([]byte, error) {
		return func() ([]byte, error) { asked++; return []byte(pass), nil }
	}
	_, err := signing.ReadKeyFile(protected, ask("wrong"))
	wantErr(t, err, registry.Invalid, "the passphrase does not unlock key "+k.KeyID)
	_, err = signing.ReadKeyFile(protected, nil)
	wantErr(t, err, registry.Invalid, "is protected by a passphrase")
	_, err = signing.ReadKeyFile(protected, func() ([]byte, error) { return nil, errors.New("no terminal") })
	if err == nil || err.Error() != "no terminal" {
		t.Fatalf("a failing passphrase source gave %v, want its error", err)
	}

	s, err := signing.ReadKeyFile(protected, ask("correct horse"))
	if err != nil {
		t.Fatal(err)
	}
	if asked != 2 {
		t.Errorf("the passphrase was asked %d times over two reads, want 2", asked)
	}
	sig, err := s.SignDetached([]byte(sums))
	if err != nil {
		t.Fatal(err)
	}
	verifies(t, k, []byte(sums), sig)
}

func TestReadKeyFileRefuses(t *testing.T) {
	k := signingtest.NewKey(t, "acme")
	other := signingtest.NewKey(t, "other")
	twoKeys := func() []byte {
		var buf bytes.Buffer
		w, _ := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
		for _, e := range []*openpgp.Entity{k.Entity, other.Entity} {
			if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		return buf.Bytes()
	}()
	revoked := signingtest.NewKeyWith(t, "acme", signingtest.Options{Revoked: true})
	tests := map[string]struct {
		data []byte
		kind registry.Kind
		want string
	}{
		"public key":  {[]byte(k.ArmoredPublic), registry.Invalid, "holds a public key; signing needs the private key"},
		"not armored": {[]byte("hello"), registry.Invalid, "is not an ASCII-armored private key"},
		"corrupt":     {[]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n!!!\n-----END PGP PRIVATE KEY BLOCK-----\n"), registry.Invalid, "does not parse"},
		"two keys":    {twoKeys, registry.Invalid, "holds 2 keys"},
		"revoked":     {[]byte(revoked.ArmoredPrivate), registry.Invalid, "is revoked"},
		"too large":   {bytes.Repeat([]byte("x"), signing.MaxPrivateKeyBytes+1), registry.TooLarge, "larger than"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := signing.ReadKeyFile(tt.data, nil)
			wantErr(t, err, tt.kind, tt.want)
		})
	}
}

// gnupgHome makes a throwaway GNUPGHOME holding k's secret key (none when
// k is nil), sets it for the test and stops its gpg-agent afterwards. It
// skips the test when gpg is not installed.
func gnupgHome(t *testing.T, k *signingtest.Key) {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Skip("gpg is not on the PATH; the gpg signer is tested where it is")
	}
	home, err := os.MkdirTemp("", "gnupg-") // short: gpg-agent's socket lives here
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GNUPGHOME", home)
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--kill", "gpg-agent").Run()
		os.RemoveAll(home)
	})
	if k == nil {
		return
	}
	cmd := exec.Command("gpg", "--batch", "--import")
	cmd.Stdin = strings.NewReader(k.ArmoredPrivate)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
}

func TestGPGSigner(t *testing.T) {
	k := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
	gnupgHome(t, k)
	for _, user := range []string{k.Fingerprint, k.KeyID, "acme@example.invalid"} {
		s, err := signing.NewGPGSigner(t.Context(), user)
		if err != nil {
			t.Fatalf("NewGPGSigner(%s): %v", user, err)
		}
		if got := s.PublicKey(); got.Fingerprint != k.Fingerprint {
			t.Errorf("NewGPGSigner(%s).PublicKey = %s, want %s", user, got.Fingerprint, k.Fingerprint)
		}
		sig, err := s.SignDetached([]byte(sums))
		if err != nil {
			t.Fatal(err)
		}
		verifies(t, k, []byte(sums), sig)
	}

	_, err := signing.NewGPGSigner(t.Context(), "nobody@example.invalid")
	wantErr(t, err, registry.Invalid, `gpg has no secret key "nobody@example.invalid" in the keyring in GNUPGHOME=`)
}

func TestGPGSignerWithoutGPG(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := signing.NewGPGSigner(t.Context(), "ABCDEF")
	wantErr(t, err, registry.Invalid, "gpg is not on the PATH")
}

// TestGPGSignerOnlyPublicKey: a keyring holding just the public key has
// nothing to sign with.
func TestGPGSignerOnlyPublicKey(t *testing.T) {
	k := signingtest.NewKey(t, "acme")
	gnupgHome(t, nil)
	cmd := exec.Command("gpg", "--batch", "--import")
	cmd.Stdin = strings.NewReader(k.ArmoredPublic)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	_, err := signing.NewGPGSigner(t.Context(), k.Fingerprint)
	wantErr(t, err, registry.Invalid, "gpg has no secret key")
}
