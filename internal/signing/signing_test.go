package signing_test

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

const sums = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-example_1.0.0_linux_amd64.zip\n"

// wantErr checks err's kind and that its message contains want.
func wantErr(t *testing.T, err error, kind registry.Kind, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v error containing %q", kind, want)
	}
	if registry.KindOf(err) != kind || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v error %q, want %v error containing %q", registry.KindOf(err), err, kind, want)
	}
	t.Log(err)
}

// armorPackets armors serialized packets under blockType.
func armorPackets(t *testing.T, blockType string, serialize func(io.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// keyThatCannotSign returns a key whose primary key is bound for
// certification only and whose only subkey encrypts.
func keyThatCannotSign(t *testing.T) string {
	t.Helper()
	k := signingtest.NewKeyWith(t, "nosign", signingtest.Options{Algorithm: signingtest.Ed25519})
	e := k.Entity
	for _, id := range e.Identities {
		id.SelfSignature.FlagSign = false
		if err := id.SelfSignature.SignUserId(id.UserId.Id, e.PrimaryKey, e.PrivateKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	return armorPackets(t, openpgp.PublicKeyType, e.Serialize)
}

// primaryCannotSign returns k's public key with its primary key bound
// for certification only, so that only its signing subkey can sign.
func primaryCannotSign(t *testing.T, k *signingtest.Key) string {
	t.Helper()
	e := k.Entity
	for _, id := range e.Identities {
		id.SelfSignature.FlagSign = false
		if err := id.SelfSignature.SignUserId(id.UserId.Id, e.PrimaryKey, e.PrivateKey, &packet.Config{Time: func() time.Time { return id.SelfSignature.CreationTime }}); err != nil {
			t.Fatal(err)
		}
	}
	return armorPackets(t, openpgp.PublicKeyType, e.Serialize)
}

// newStyleKey returns a key with a version or algorithm only recent
// OpenPGP libraries read.
func newStyleKey(t *testing.T, cfg *packet.Config) string {
	t.Helper()
	e, err := openpgp.NewEntity("new", "", "new@example.invalid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return armorPackets(t, openpgp.PublicKeyType, e.Serialize)
}

// withoutChecksum drops the "=XXXX" line of an armored block.
func withoutChecksum(armored string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(armored), "\n") {
		if len(line) == 5 && line[0] == '=' {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// withWrongChecksum replaces the "=XXXX" line with a wrong checksum.
func withWrongChecksum(armored string) string {
	lines := strings.Split(strings.TrimSpace(armored), "\n")
	for i, line := range lines {
		if len(line) == 5 && line[0] == '=' {
			bad := "=" + base64.StdEncoding.EncodeToString([]byte{1, 2, 3})
			if bad == line {
				bad = "=" + base64.StdEncoding.EncodeToString([]byte{3, 2, 1})
			}
			lines[i] = bad
		}
	}
	return strings.Join(lines, "\n")
}

// corruptBody flips one base64 character in the middle of the armor body.
func corruptBody(armored string) string {
	lines := strings.Split(armored, "\n")
	i := len(lines) / 2
	b := []byte(lines[i])
	if b[10] == 'A' {
		b[10] = 'B'
	} else {
		b[10] = 'A'
	}
	lines[i] = string(b)
	return strings.Join(lines, "\n")
}

func TestParsePublicKey(t *testing.T) {
	rsa := signingtest.NewKey(t, "acme")
	ed := signingtest.NewKeyWith(t, "ed", signingtest.Options{Algorithm: signingtest.Ed25519})
	sub := signingtest.NewKeyWith(t, "sub", signingtest.Options{Algorithm: signingtest.Ed25519, SigningSubkey: true})
	created := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	expired := signingtest.NewKeyWith(t, "old", signingtest.Options{Algorithm: signingtest.Ed25519, Created: created, Lifetime: 24 * time.Hour})
	expiring := signingtest.NewKeyWith(t, "later", signingtest.Options{Algorithm: signingtest.Ed25519, Created: created, Lifetime: 72 * time.Hour})
	revoked := signingtest.NewKeyWith(t, "gone", signingtest.Options{Algorithm: signingtest.Ed25519, Revoked: true})
	// Keys whose only signing key is a subkey: one that can still sign
	// for a day, one whose subkey has expired (its primary key has not).
	subExpiring := signingtest.NewKeyWith(t, "subexp", signingtest.Options{Algorithm: signingtest.Ed25519, SigningSubkey: true, Created: created, SubkeyLifetime: 72 * time.Hour})
	subExpired := signingtest.NewKeyWith(t, "subgone", signingtest.Options{Algorithm: signingtest.Ed25519, SigningSubkey: true, Created: created, SubkeyLifetime: 24 * time.Hour})
	subExpiringArmor := primaryCannotSign(t, subExpiring)
	subExpiredArmor := primaryCannotSign(t, subExpired)

	publicWithPrivatePackets := armorPackets(t, openpgp.PublicKeyType, func(w io.Writer) error {
		return ed.Entity.SerializePrivateWithoutSigning(w, nil)
	})
	twoKeys := armorPackets(t, openpgp.PublicKeyType, func(w io.Writer) error {
		if err := ed.Entity.Serialize(w); err != nil {
			return err
		}
		return sub.Entity.Serialize(w)
	})
	keyThenBrokenPacket := armorPackets(t, openpgp.PublicKeyType, func(w io.Writer) error {
		if err := ed.Entity.Serialize(w); err != nil {
			return err
		}
		_, err := w.Write([]byte{0xc6, 100, 1, 2, 3}) // a new-format public key packet cut short
		return err
	})
	var binaryKey bytes.Buffer
	if err := ed.Entity.Serialize(&binaryKey); err != nil {
		t.Fatal(err)
	}

	valid := []struct {
		name, input   string
		key           *signingtest.Key
		wantArmor     string // "" means the input trimmed
		wantExpiresAt time.Time
	}{
		{name: "rsa", input: rsa.ArmoredPublic, key: rsa},
		{name: "ed25519", input: ed.ArmoredPublic, key: ed},
		{name: "signing subkey", input: sub.ArmoredPublic, key: sub},
		{name: "expires later", input: expiring.ArmoredPublic, key: expiring, wantExpiresAt: created.Add(72 * time.Hour).UTC()},
		{name: "signing subkey expires later", input: subExpiringArmor, key: subExpiring, wantExpiresAt: created.Add(72 * time.Hour).UTC()},
		{name: "surrounding white space and CRLF", input: "\r\n  " + strings.ReplaceAll(ed.ArmoredPublic, "\n", "\r\n") + "\r\n\r\n", key: ed, wantArmor: strings.TrimSpace(ed.ArmoredPublic)},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signing.ParsePublicKey(tc.input)
			if err != nil {
				t.Fatalf("ParsePublicKey: %v", err)
			}
			wantArmor := tc.wantArmor
			if wantArmor == "" {
				wantArmor = strings.TrimSpace(tc.input)
			}
			want := registry.SigningKey{KeyID: tc.key.KeyID, Fingerprint: tc.key.Fingerprint, ASCIIArmor: wantArmor, ExpiresAt: tc.wantExpiresAt}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if len(got.KeyID) != 16 || strings.ToUpper(got.KeyID) != got.KeyID || len(got.Fingerprint) != 40 || !strings.HasSuffix(got.Fingerprint, got.KeyID) {
				t.Errorf("key ID %q / fingerprint %q not in Terraform's form", got.KeyID, got.Fingerprint)
			}
		})
	}

	t.Run("missing checksum is added", func(t *testing.T) {
		got, err := signing.ParsePublicKey(withoutChecksum(ed.ArmoredPublic))
		if err != nil {
			t.Fatalf("ParsePublicKey: %v", err)
		}
		if got.ASCIIArmor != strings.TrimSpace(ed.ArmoredPublic) {
			t.Errorf("re-armored key =\n%s\nwant\n%s", got.ASCIIArmor, ed.ArmoredPublic)
		}
	})

	invalid := []struct {
		name, input string
		kind        registry.Kind
		want        string
	}{
		{"empty", "", registry.Invalid, "public key is empty"},
		{"white space", " \n\t\n", registry.Invalid, "public key is empty"},
		{"garbage", "hello, world", registry.Invalid, "not ASCII-armored"},
		{"binary key", binaryKey.String(), registry.Invalid, "not ASCII-armored"},
		{"private key block", ed.ArmoredPrivate, registry.Invalid, "this is a private key"},
		{"private packets under a public header", publicWithPrivatePackets, registry.Invalid, "this is a private key"},
		{"armored signature", string(ed.SignArmored([]byte(sums))), registry.Invalid, "not a public key"},
		{"revoked", revoked.ArmoredPublic, registry.Invalid, "is revoked"},
		{"expired", expired.ArmoredPublic, registry.Invalid, "expired on " + created.Add(24*time.Hour).UTC().Format(time.RFC3339) + ", so it can sign no new release: extend it with gpg --quick-set-expire"},
		{"signing subkey expired", subExpiredArmor, registry.Invalid, "has no signing key that is valid now"},
		{"cannot sign", keyThatCannotSign(t), registry.Invalid, "cannot sign"},
		{"two keys in one block", twoKeys, registry.Invalid, "holds 2 keys"},
		{"key followed by a broken packet", keyThenBrokenPacket, registry.Invalid, "does not parse"},
		{"two blocks", ed.ArmoredPublic + sub.ArmoredPublic, registry.Invalid, "several armored blocks"},
		{"text before the block", "my key:\n" + ed.ArmoredPublic, registry.Invalid, "without text before it"},
		{"text after the block", ed.ArmoredPublic + "thanks\n", registry.Invalid, "must end with"},
		{"wrong checksum", withWrongChecksum(ed.ArmoredPublic), registry.Invalid, "checksum does not match"},
		{"corrupt body", corruptBody(rsa.ArmoredPublic), registry.Invalid, "checksum does not match"},
		{"corrupt body without checksum", corruptBody(withoutChecksum(rsa.ArmoredPublic)), registry.Invalid, "does not parse"},
		{"truncated", strings.Join(strings.Split(rsa.ArmoredPublic, "\n")[:8], "\n") + "\n-----END PGP PUBLIC KEY BLOCK-----", registry.Invalid, "does not parse"},
		{"empty block", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----", registry.Invalid, "empty"},
		{"v6 key", newStyleKey(t, &packet.Config{V6Keys: true, Algorithm: packet.PubKeyAlgoEd25519}), registry.Invalid, "v6 key"},
		{"rfc 9580 ed25519 in a v4 key", newStyleKey(t, &packet.Config{Algorithm: packet.PubKeyAlgoEd25519}), registry.Invalid, "algorithm 27"},
		{"too large", ed.ArmoredPublic + strings.Repeat(" ", signing.MaxPublicKeyBytes), registry.TooLarge, "larger than 64 KiB"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signing.ParsePublicKey(tc.input)
			wantErr(t, err, tc.kind, tc.want)
			if got != (registry.SigningKey{}) {
				t.Errorf("got key %+v along with the error", got)
			}
		})
	}
}

// signWith makes a detached signature with a crafted signature packet,
// for shapes signingtest does not produce.
func signWith(t *testing.T, k *signingtest.Key, data []byte, edit func(*packet.Signature)) []byte {
	t.Helper()
	pk := k.Entity.PrivateKey
	sig := &packet.Signature{
		Version: 4, SigType: packet.SigTypeBinary, PubKeyAlgo: pk.PubKeyAlgo, Hash: crypto.SHA256,
		CreationTime: time.Now(), IssuerKeyId: &pk.KeyId,
	}
	edit(sig)
	cfg := &packet.Config{NonDeterministicSignaturesViaNotation: new(bool)}
	h, err := sig.PrepareSign(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Write(data)
	if err := sig.Sign(h, pk, cfg); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := sig.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestVerifyDetached(t *testing.T) {
	data := []byte(sums)
	rsa := signingtest.NewKey(t, "acme")
	ed := signingtest.NewKeyWith(t, "ed", signingtest.Options{Algorithm: signingtest.Ed25519})
	sub := signingtest.NewKeyWith(t, "sub", signingtest.Options{SigningSubkey: true})
	expired := signingtest.NewKeyWith(t, "old", signingtest.Options{Algorithm: signingtest.Ed25519, Created: time.Now().Add(-48 * time.Hour), Lifetime: 24 * time.Hour})
	subExpired := signingtest.NewKeyWith(t, "subgone", signingtest.Options{SigningSubkey: true, Created: time.Now().Add(-48 * time.Hour), SubkeyLifetime: 24 * time.Hour})
	expiring := signingtest.NewKeyWith(t, "soon", signingtest.Options{Algorithm: signingtest.Ed25519, Lifetime: time.Hour})
	revoked := signingtest.NewKeyWith(t, "gone", signingtest.Options{Algorithm: signingtest.Ed25519, Revoked: true})
	other := signingtest.NewKeyWith(t, "other", signingtest.Options{Algorithm: signingtest.Ed25519})

	stored := func(k *signingtest.Key) registry.SigningKey {
		t.Helper()
		key, err := signing.ParsePublicKey(k.ArmoredPublic)
		if err != nil {
			t.Fatalf("ParsePublicKey(%s): %v", k.KeyID, err)
		}
		key.Namespace = "acme"
		return key
	}
	// Revoked and expired keys cannot be added, but were stored before
	// they expired, or by hand.
	byHand := func(k *signingtest.Key) registry.SigningKey {
		return registry.SigningKey{Namespace: "acme", KeyID: k.KeyID, Fingerprint: k.Fingerprint, ASCIIArmor: k.ArmoredPublic}
	}
	all := []registry.SigningKey{stored(rsa), stored(ed), stored(sub), stored(expiring), byHand(expired), byHand(subExpired), byHand(revoked)}

	signerOf := map[string]*signingtest.Key{"rsa": rsa, "ed25519": ed, "signing subkey": sub, "key that expires later": expiring}
	for name, k := range signerOf {
		t.Run(name, func(t *testing.T) {
			got, err := signing.VerifyDetached(all, data, k.Sign(data))
			if err != nil {
				t.Fatalf("VerifyDetached: %v", err)
			}
			if got.KeyID != k.KeyID || got.Namespace != "acme" || got.ASCIIArmor == "" {
				t.Errorf("got key %+v, want %s", got, k.KeyID)
			}
		})
	}

	if sub.SignerKeyID == sub.KeyID {
		t.Fatal("signing subkey fixture signs with its primary key")
	}
	otherNS := []registry.SigningKey{stored(other)}
	otherNS[0].Namespace = "globex"

	invalid := []struct {
		name   string
		keys   []registry.SigningKey
		signed []byte
		sig    []byte
		kind   registry.Kind
		want   string
	}{
		{"armored signature", all, data, rsa.SignArmored(data), registry.Invalid, "without --armor"},
		{"tampered data", all, []byte(strings.Replace(sums, "0123", "4567", 1)), rsa.Sign(data), registry.Invalid, "signature does not match SHA256SUMS"},
		{"subkey signature, tampered data", all, append([]byte(sums), '\n'), sub.Sign(data), registry.Invalid, "signature does not match SHA256SUMS"},
		{"key of another namespace", all, data, other.Sign(data), registry.Invalid, "signed by key " + other.KeyID + ", which is not registered for namespace acme; add it with trove key add"},
		{"only other namespaces' keys", otherNS, data, rsa.Sign(data), registry.Invalid, "signed by key " + rsa.KeyID + ", which is not registered for namespace globex"},
		{"subkey of an unregistered key", []registry.SigningKey{stored(rsa)}, data, sub.Sign(data), registry.Invalid, "signed by key " + sub.SignerKeyID + ", which is not registered"},
		{"no keys", nil, data, rsa.Sign(data), registry.Invalid, "not registered for this namespace"},
		{"revoked key", all, data, revoked.Sign(data), registry.Invalid, "which is revoked"},
		{"expired key", all, data, expired.Sign(data), registry.Invalid, "signed by key " + expired.KeyID + ", which has expired"},
		{"expired signing subkey", all, data, subExpired.Sign(data), registry.Invalid, "signed by key " + subExpired.KeyID + ", which has expired (or whose signing subkey has)"},
		{"empty signature", all, data, nil, registry.Invalid, "is empty"},
		{"garbage", all, data, []byte("not a signature at all"), registry.Invalid, "not a binary OpenPGP signature"},
		{"a public key instead", all, data, []byte(mustDearmor(t, ed.ArmoredPublic)), registry.Invalid, "other than signatures"},
		{"sha-1", all, data, signWith(t, ed, data, func(s *packet.Signature) { s.Hash = crypto.SHA1 }), registry.Invalid, "broken SHA-1"},
		{"expiring signature", all, data, signWith(t, ed, data, func(s *packet.Signature) { d := uint32(3600); s.SigLifetimeSecs = &d }), registry.Invalid, "sign without an expiry"},
		{"not a document signature", all, data, signWith(t, ed, data, func(s *packet.Signature) { s.SigType = packet.SigTypeDirectSignature }), registry.Invalid, "not a document signature"},
		{"too large", all, data, bytes.Repeat([]byte{0}, signing.MaxSignatureBytes+1), registry.TooLarge, "larger than"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signing.VerifyDetached(tc.keys, tc.signed, tc.sig)
			wantErr(t, err, tc.kind, tc.want)
			if got != (registry.SigningKey{}) {
				t.Errorf("got key %+v along with the error", got)
			}
		})
	}

	t.Run("key expired after it signed", func(t *testing.T) {
		// Signed while valid, judged once the key has expired: a
		// publish then is refused.
		sig := expiring.Sign(data)
		if _, err := signing.VerifyDetachedAt(all, data, sig, time.Now()); err != nil {
			t.Fatalf("before the expiry: %v", err)
		}
		_, err := signing.VerifyDetachedAt(all, data, sig, time.Now().Add(2*time.Hour))
		wantErr(t, err, registry.Invalid, "which has expired")
	})

	t.Run("crafted signature verifies", func(t *testing.T) {
		// The crafted-signature helper itself makes valid signatures, so the
		// refusals above are due to the edited field.
		if _, err := signing.VerifyDetached(all, data, signWith(t, ed, data, func(*packet.Signature) {})); err != nil {
			t.Fatalf("VerifyDetached: %v", err)
		}
	})
}

func mustDearmor(t *testing.T, armored string) string {
	t.Helper()
	block, err := armor.Decode(strings.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(block.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTerraformVerifiesStoredKey checks the stored armor and a signature
// exactly the way Terraform and OpenTofu do.
func TestTerraformVerifiesStoredKey(t *testing.T) {
	data := []byte(sums)
	keys := map[string]*signingtest.Key{
		"rsa":            signingtest.NewKey(t, "acme"),
		"ed25519":        signingtest.NewKeyWith(t, "ed", signingtest.Options{Algorithm: signingtest.Ed25519}),
		"signing subkey": signingtest.NewKeyWith(t, "sub", signingtest.Options{Algorithm: signingtest.Ed25519, SigningSubkey: true}),
	}
	for name, k := range keys {
		t.Run(name, func(t *testing.T) {
			for _, input := range []string{k.ArmoredPublic, withoutChecksum(k.ArmoredPublic)} {
				key, err := signing.ParsePublicKey(input)
				if err != nil {
					t.Fatalf("ParsePublicKey: %v", err)
				}
				sig := k.Sign(data)
				if _, err := signing.VerifyDetached([]registry.SigningKey{key}, data, sig); err != nil {
					t.Fatalf("VerifyDetached: %v", err)
				}

				keyring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(key.ASCIIArmor))
				if err != nil {
					t.Fatalf("ReadArmoredKeyRing(stored armor): %v", err)
				}
				entity, err := openpgp.CheckDetachedSignature(keyring, bytes.NewReader(data), bytes.NewReader(sig), nil)
				if err != nil {
					t.Fatalf("CheckDetachedSignature: %v", err)
				}
				if got := entity.PrimaryKey.KeyIdString(); got != key.KeyID {
					t.Errorf("client reports key ID %s, Trove stored %s", got, key.KeyID)
				}
			}
		})
	}
}

// TestCheckListedKey: a key listed beside a release Trove did not take
// (an upstream's, a bundle's) is served as it is: a public key, whose ID
// or a subkey's is the one it is listed with; expiry is not judged.
func TestCheckListedKey(t *testing.T) {
	k := signingtest.NewKey(t, "listed")
	primary := k.Entity.PrimaryKey.KeyIdString()
	key := func(id, armor string) registry.SigningKey { return registry.SigningKey{KeyID: id, ASCIIArmor: armor} }
	for _, ok := range []registry.SigningKey{
		key(primary, k.ArmoredPublic),
		key(strings.ToLower(primary), k.ArmoredPublic),
		key(k.Fingerprint, k.ArmoredPublic),
	} {
		if err := signing.CheckListedKey(ok); err != nil {
			t.Errorf("CheckListedKey(%s) = %v, want it accepted", ok.KeyID, err)
		}
	}
	for _, sub := range k.Entity.Subkeys {
		if err := signing.CheckListedKey(key(sub.PublicKey.KeyIdString(), k.ArmoredPublic)); err != nil {
			t.Errorf("listed as its subkey %s: %v, want it accepted", sub.PublicKey.KeyIdString(), err)
		}
	}
	other := signingtest.NewKey(t, "other")
	wantErr(t, signing.CheckListedKey(key(other.Entity.PrimaryKey.KeyIdString(), k.ArmoredPublic)), registry.Invalid, "listed as "+other.Entity.PrimaryKey.KeyIdString()+" but is the key "+primary)
	wantErr(t, signing.CheckListedKey(key(primary, string(armoredPrivate(t, k, "")))), registry.Invalid, "private key")
	wantErr(t, signing.CheckListedKey(key(primary, "garbage")), registry.Invalid, "does not read as an OpenPGP public key")
	wantErr(t, signing.CheckListedKey(key("not-an-id", k.ArmoredPublic)), registry.Invalid, "invalid key ID")
	wantErr(t, signing.CheckListedKey(key(primary[8:], k.ArmoredPublic)), registry.Invalid, "too short an ID")
	wantErr(t, signing.CheckListedKey(key(primary, strings.Repeat("x", signing.MaxPublicKeyBytes+1))), registry.TooLarge, "larger than")
}
