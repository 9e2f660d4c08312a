// Package signing owns OpenPGP for Trove: it checks the public keys a
// namespace registers and verifies the binary detached signatures of
// release SHA256SUMS documents. It uses ProtonMail/go-crypto's openpgp
// package, the library Terraform and OpenTofu verify with, and refuses
// anything one of those clients would choke on: a key Trove accepts is
// served back byte for byte as ascii_armor, and a signature it accepts
// verifies in the clients.
package signing

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"trove.dev/trove/internal/registry"
)

// Size limits of the inputs.
const (
	MaxPublicKeyBytes = 64 << 10 // an armored public key
	MaxSignatureBytes = 64 << 10 // a binary detached signature
)

const (
	beginPublic  = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	endPublic    = "-----END PGP PUBLIC KEY BLOCK-----"
	beginPrivate = "-----BEGIN PGP PRIVATE KEY BLOCK-----"
	exportHint   = "export the public key with: gpg --armor --export KEYID"
)

// classicAlgorithms are the v4 public-key algorithms every OpenPGP library
// version used by Terraform and OpenTofu reads. Newer ones (RFC 9580
// Ed25519/X25519, post-quantum) make older clients drop the whole key.
var classicAlgorithms = map[packet.PublicKeyAlgorithm]string{
	packet.PubKeyAlgoRSA:            "RSA",
	packet.PubKeyAlgoRSAEncryptOnly: "RSA",
	packet.PubKeyAlgoRSASignOnly:    "RSA",
	packet.PubKeyAlgoElGamal:        "ElGamal",
	packet.PubKeyAlgoDSA:            "DSA",
	packet.PubKeyAlgoECDH:           "ECDH",
	packet.PubKeyAlgoECDSA:          "ECDSA",
	packet.PubKeyAlgoEdDSA:          "EdDSA",
}

// ParsePublicKey checks an ASCII-armored OpenPGP public key, as
// gpg --armor --export writes it, and returns it as a SigningKey with
// KeyID, Fingerprint, ExpiresAt and ASCIIArmor filled (Namespace and
// CreatedAt are the caller's). The key must be exactly one v4 public key
// that can sign now: neither it nor its user ID is revoked or expired, and
// its primary key or a subkey bound for signing is neither expired nor
// revoked. Such a key could sign no new release, so it is refused when it
// is added (see docs/security.md for what happens when a key expires
// later). ExpiresAt is when the key stops being able to sign: the primary
// key's expiry, or the last expiry of its signing (sub)keys when that is
// earlier; zero when it never does.
//
// ASCIIArmor is the input with surrounding white space trimmed and CR LF
// line ends turned into LF; when the armor lacks its checksum line, the same
// packets are re-armored with one, since older clients require it.
func ParsePublicKey(armored string) (registry.SigningKey, error) {
	if len(armored) > MaxPublicKeyBytes {
		return registry.SigningKey{}, registry.Errorf(registry.TooLarge,
			"public key is larger than %d KiB; export it without third-party signatures: gpg --armor --export-options export-minimal --export KEYID", MaxPublicKeyBytes>>10)
	}
	text := strings.TrimSpace(strings.ReplaceAll(armored, "\r\n", "\n"))
	switch {
	case text == "":
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key is empty; %s", exportHint)
	case strings.Contains(text, beginPrivate):
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "this is a private key; never upload it. Export the public key with gpg --armor --export KEYID")
	case strings.HasPrefix(text, "-----BEGIN PGP SIGNATURE-----"), strings.HasPrefix(text, "-----BEGIN PGP MESSAGE-----"):
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "this is a signature or message, not a public key; %s", exportHint)
	case strings.Contains(text, beginPublic) && !strings.HasPrefix(text, beginPublic):
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key must start with %s; send the exported block alone, without text before it", beginPublic)
	case !strings.HasPrefix(text, beginPublic):
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key is not ASCII-armored: it must start with %s; %s", beginPublic, exportHint)
	case !strings.HasSuffix(text, endPublic):
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key must end with %s; send the exported block alone, without text after it", endPublic)
	case strings.Count(text, "-----BEGIN ") != 1:
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "the file holds several armored blocks; send one public key (gpg --armor --export KEYID)")
	}

	body, err := decodeArmor(text)
	if err != nil {
		return registry.SigningKey{}, err
	}
	// ReadKeyRing skips keys it cannot read; a client with another library
	// version might not, so every packet must read and hold one key.
	primaries, err := countPrimaryKeys(body)
	if err != nil {
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key does not parse: %s; %s", pgpReason(err), exportHint)
	}
	entities, err := openpgp.ReadKeyRing(bytes.NewReader(body))
	if err != nil {
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key does not parse: %s; %s", pgpReason(err), exportHint)
	}
	if primaries != 1 || len(entities) != 1 {
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "the block holds %d keys; add one key at a time: gpg --armor --export KEYID", max(primaries, len(entities)))
	}
	e := entities[0]
	now := time.Now()
	if err := checkEntity(e, now); err != nil {
		return registry.SigningKey{}, err
	}
	if !hasChecksumLine(text) {
		if text, err = rearmor(body); err != nil {
			return registry.SigningKey{}, err
		}
	}

	key := registry.SigningKey{
		KeyID:       e.PrimaryKey.KeyIdString(),
		Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint),
		ASCIIArmor:  text,
	}
	key.ExpiresAt = signingExpiry(e, now)

	// What is stored is what the clients parse: read it back their way.
	again, err := openpgp.ReadArmoredKeyRing(strings.NewReader(key.ASCIIArmor))
	if err != nil || len(again) != 1 || !bytes.Equal(again[0].PrimaryKey.Fingerprint, e.PrimaryKey.Fingerprint) {
		return registry.SigningKey{}, registry.Errorf(registry.Invalid, "public key does not read back as one key; %s", exportHint)
	}
	return key, nil
}

// CheckListedKey checks a signing key listed beside a release that Trove
// did not take itself (an upstream's download document, an air-gap
// bundle's manifest), which Trove stores and serves as it is: its armor
// must read as OpenPGP public keys, with no private key among them (the
// download document would hand it to every client), and KeyID must name
// one of those keys or a subkey (its long key ID, its fingerprint, or
// another final part of the fingerprint of 16 hex digits or more), so
// that what clients are told signed the release is true. Unlike ParsePublicKey it judges no
// expiry: an old release was signed while its key could sign, which
// VerifyDetachedAt judges at the signature's time.
func CheckListedKey(k registry.SigningKey) error {
	if _, err := registry.ParseKeyID(k.KeyID); err != nil {
		return err
	}
	if len(k.ASCIIArmor) > MaxPublicKeyBytes {
		return registry.Errorf(registry.TooLarge, "the signing key listed as %s is larger than %d KiB", k.KeyID, MaxPublicKeyBytes>>10)
	}
	if strings.Contains(k.ASCIIArmor, beginPrivate) {
		return registry.Errorf(registry.Invalid, "the signing key listed as %s is a private key, which must never be served: list the public key (gpg --armor --export %s)", k.KeyID, k.KeyID)
	}
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(k.ASCIIArmor))
	if err != nil || len(ring) == 0 {
		reason := "no key"
		if err != nil {
			reason = pgpReason(err)
		}
		return registry.Errorf(registry.Invalid, "the signing key listed as %s does not read as an OpenPGP public key: %s", k.KeyID, reason)
	}
	listed := strings.ToUpper(k.KeyID)
	if len(listed) < 16 {
		return registry.Errorf(registry.Invalid, "the signing key is listed as %s, too short an ID to name a key: list its long ID (16 hex digits) or its fingerprint", k.KeyID)
	}
	for _, e := range ring {
		if e.PrivateKey != nil {
			return registry.Errorf(registry.Invalid, "the signing key listed as %s holds a private key, which must never be served: list the public key (gpg --armor --export %s)", k.KeyID, k.KeyID)
		}
		fingerprints := []string{fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)}
		for _, sub := range e.Subkeys {
			fingerprints = append(fingerprints, fmt.Sprintf("%X", sub.PublicKey.Fingerprint))
		}
		for _, fp := range fingerprints {
			if strings.HasSuffix(fp, listed) {
				return nil
			}
		}
	}
	return registry.Errorf(registry.Invalid, "the signing key is listed as %s but is the key %s", k.KeyID, ring[0].PrimaryKey.KeyIdString())
}

// countPrimaryKeys reads every packet of body and counts the primary keys.
func countPrimaryKeys(body []byte) (int, error) {
	n := 0
	packets := packet.NewReader(bytes.NewReader(body))
	for {
		p, err := packets.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		switch k := p.(type) {
		case *packet.PublicKey:
			if !k.IsSubkey {
				n++
			}
		case *packet.PrivateKey:
			if !k.IsSubkey {
				n++
			}
		}
	}
}

// decodeArmor returns the binary packets of the armored public key block
// text, checking its CRC-24 checksum when present: the library no longer
// checks it, but the older versions some clients ship refuse a wrong one.
func decodeArmor(text string) ([]byte, error) {
	block, err := armor.Decode(strings.NewReader(text))
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "public key armor is corrupt: %s; %s", pgpReason(err), exportHint)
	}
	if block.Type != openpgp.PublicKeyType {
		return nil, registry.Errorf(registry.Invalid, "expected a %s, got a %s; %s", openpgp.PublicKeyType, block.Type, exportHint)
	}
	body, err := io.ReadAll(io.LimitReader(block.Body, MaxPublicKeyBytes+1))
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "public key armor is corrupt: %s; %s", pgpReason(err), exportHint)
	}
	if len(body) == 0 {
		return nil, registry.Errorf(registry.Invalid, "public key block is empty; %s", exportHint)
	}
	if sum, ok := checksumLine(text); ok {
		if want := crc24(body); sum != want {
			return nil, registry.Errorf(registry.Invalid, "public key armor checksum does not match its content: the key was altered or truncated; %s", exportHint)
		}
	}
	return body, nil
}

// checkEntity refuses a key the clients cannot use: private material, a
// version or algorithm older clients cannot read, a revoked key, or a key
// with no usable signing key.
func checkEntity(e *openpgp.Entity, now time.Time) error {
	id := e.PrimaryKey.KeyIdString()
	if e.PrivateKey != nil {
		return registry.Errorf(registry.Invalid, "this is a private key; never upload it. Export the public key with gpg --armor --export %s", id)
	}
	if err := checkKeyPacket(id, "primary key", e.PrimaryKey); err != nil {
		return err
	}
	for _, sk := range e.Subkeys {
		if sk.PrivateKey != nil {
			return registry.Errorf(registry.Invalid, "key %s carries private subkey material; export the public key with gpg --armor --export %s", id, id)
		}
		if err := checkKeyPacket(id, "subkey "+sk.PublicKey.KeyIdString(), sk.PublicKey); err != nil {
			return err
		}
	}
	selfSig, identity := e.PrimarySelfSignature()
	if selfSig == nil {
		return registry.Errorf(registry.Invalid, "key %s has no self-signed user ID; the clients cannot use it", id)
	}
	if e.Revoked(now) || (identity != nil && identity.Revoked(now)) {
		return registry.Errorf(registry.Invalid, "key %s is revoked; the clients refuse signatures made with it. Add a key that is not revoked", id)
	}
	if !canSign(e, now) {
		return registry.Errorf(registry.Invalid, "key %s cannot sign: neither its primary key nor a valid subkey has the signing capability; add the key that signs the releases (gpg --armor --export of a key listed with [S] or [SC])", id)
	}
	if e.PrimaryKey.KeyExpired(selfSig, now) || selfSig.SigExpired(now) {
		return registry.Errorf(registry.Invalid, "key %s expired %s, so it can sign no new release: extend it with gpg --quick-set-expire %X 2y, then export and add it again",
			id, expiryText(e.PrimaryKey, selfSig), e.PrimaryKey.Fingerprint)
	}
	if _, ok := e.SigningKey(now); !ok {
		return registry.Errorf(registry.Invalid, "key %s has no signing key that is valid now: its signing subkeys have expired or are revoked (or it was created in the future). "+
			"Extend the signing subkey with gpg --quick-set-expire %X 2y '*' (or add a new one with gpg --quick-add-key %X default sign), then export and add the key again",
			id, e.PrimaryKey.Fingerprint, e.PrimaryKey.Fingerprint)
	}
	return nil
}

// keyExpiry returns when pk expires according to its binding signature
// sig; zero when it does not.
func keyExpiry(pk *packet.PublicKey, sig *packet.Signature) time.Time {
	if sig == nil || sig.KeyLifetimeSecs == nil || *sig.KeyLifetimeSecs == 0 {
		return time.Time{}
	}
	return pk.CreationTime.Add(time.Duration(*sig.KeyLifetimeSecs) * time.Second).UTC()
}

// expiryText says when pk expired, for messages.
func expiryText(pk *packet.PublicKey, sig *packet.Signature) string {
	if at := keyExpiry(pk, sig); !at.IsZero() {
		return "on " + at.Format(time.RFC3339)
	}
	return "(its self-signature has expired)"
}

// signingExpiry returns when e stops being able to sign: the primary
// key's expiry, or, when earlier, the last expiry of the keys that may
// sign now (the primary key if it is bound for signing, and the signing
// subkeys that are not revoked). Zero means never.
func signingExpiry(e *openpgp.Entity, now time.Time) time.Time {
	selfSig, _ := e.PrimarySelfSignature()
	primary := keyExpiry(e.PrimaryKey, selfSig)
	var last time.Time
	never := false
	consider := func(at time.Time) {
		if at.IsZero() {
			never = true
		} else if at.After(last) {
			last = at
		}
	}
	if selfSig != nil && selfSig.FlagsValid && selfSig.FlagSign && e.PrimaryKey.PubKeyAlgo.CanSign() {
		consider(primary)
	}
	for _, sk := range e.Subkeys {
		if sk.Sig != nil && sk.Sig.FlagsValid && sk.Sig.FlagSign && sk.PublicKey.PubKeyAlgo.CanSign() && !sk.Revoked(now) {
			consider(keyExpiry(sk.PublicKey, sk.Sig))
		}
	}
	switch {
	case never || last.IsZero():
		return primary
	case primary.IsZero() || last.Before(primary):
		return last
	}
	return primary
}

func checkKeyPacket(id, what string, pk *packet.PublicKey) error {
	if pk.Version != 4 {
		return registry.Errorf(registry.Invalid, "key %s: %s is an OpenPGP v%d key, which older Terraform and OpenTofu releases cannot read; use a v4 key (gpg's default) with RSA or Ed25519", id, what, pk.Version)
	}
	if _, ok := classicAlgorithms[pk.PubKeyAlgo]; !ok {
		return registry.Errorf(registry.Invalid, "key %s: %s uses public-key algorithm %d, which older Terraform and OpenTofu releases cannot read; use RSA or Ed25519 (gpg's default)", id, what, pk.PubKeyAlgo)
	}
	return nil
}

// canSign reports whether the primary key or a non-revoked subkey is bound
// with the signing flag, ignoring expiry (the clients tolerate expired keys).
func canSign(e *openpgp.Entity, now time.Time) bool {
	ring := openpgp.EntityList{e}
	if e.PrimaryKey.PubKeyAlgo.CanSign() && len(ring.KeysByIdUsage(e.PrimaryKey.KeyId, packet.KeyFlagSign)) > 0 {
		return true
	}
	for _, sk := range e.Subkeys {
		if sk.PublicKey.PubKeyAlgo.CanSign() && !sk.Revoked(now) && sk.Sig != nil && sk.Sig.FlagsValid && sk.Sig.FlagSign {
			return true
		}
	}
	return false
}

// hasChecksumLine reports whether the armored text ends its body with a
// "=XXXX" CRC-24 line.
func hasChecksumLine(text string) bool {
	_, ok := checksumLine(text)
	return ok
}

func checksumLine(text string) (uint32, bool) {
	lines := strings.Split(text, "\n")
	if len(lines) < 2 {
		return 0, false
	}
	line := strings.TrimSpace(lines[len(lines)-2])
	if len(line) != 5 || line[0] != '=' {
		return 0, false
	}
	sum, err := base64.StdEncoding.DecodeString(line[1:])
	if err != nil || len(sum) != 3 {
		return 0, false
	}
	return uint32(sum[0])<<16 | uint32(sum[1])<<8 | uint32(sum[2]), true
}

// crc24 is the OpenPGP armor checksum (RFC 4880, section 6.1).
func crc24(data []byte) uint32 {
	crc := uint32(0xb704ce)
	for _, b := range data {
		crc ^= uint32(b) << 16
		for range 8 {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1864cfb
			}
		}
	}
	return crc & 0xffffff
}

func rearmor(body []byte) (string, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err == nil {
		_, err = w.Write(body)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return "", fmt.Errorf("re-armor public key: %w", err)
	}
	return strings.TrimSpace(buf.String()), nil
}

// VerifyDetached checks that sig is a binary detached OpenPGP signature of
// signed made by one of keys (by its primary key or a signing subkey), the
// way Terraform and OpenTofu check it, and returns that key. It is the
// check of a publish, made now: a signature by a key or signing subkey that
// is expired or revoked now does not verify (the clients tolerate expired
// keys, but only so that releases signed before the expiry keep
// installing), nor does an expired signature or one over a weak hash.
func VerifyDetached(keys []registry.SigningKey, signed, sig []byte) (registry.SigningKey, error) {
	return VerifyDetachedAt(keys, signed, sig, time.Now())
}

// VerifyDetachedAt is VerifyDetached with the keys' expiry and revocation
// judged at now.
func VerifyDetachedAt(keys []registry.SigningKey, signed, sig []byte, now time.Time) (registry.SigningKey, error) {
	sigs, err := parseSignature(sig)
	if err != nil {
		return registry.SigningKey{}, err
	}
	issuer := fmt.Sprintf("%016X", *sigs[0].IssuerKeyId)
	namespace := "this namespace"
	if len(keys) > 0 && keys[0].Namespace != "" {
		namespace = "namespace " + keys[0].Namespace
	}

	// Each key is tried on its own, as the clients do with the keys the
	// registry lists: an unknown issuer moves on, any other failure is final.
	for _, key := range keys {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(key.ASCIIArmor))
		if err != nil {
			return registry.SigningKey{}, fmt.Errorf("stored signing key %s of %s does not parse: %w", key.KeyID, key.Namespace, err)
		}
		signer, err := openpgp.CheckDetachedSignature(ring, bytes.NewReader(signed), bytes.NewReader(sig), &packet.Config{Time: func() time.Time { return now }})
		switch {
		case errors.Is(err, pgperrors.ErrUnknownIssuer):
			continue
		case err == nil:
			return key, nil
		case errors.Is(err, pgperrors.ErrKeyExpired) && signer != nil:
			return registry.SigningKey{}, registry.Errorf(registry.Invalid, "SHA256SUMS is signed by key %s, which has expired (or whose signing subkey has), so it can sign no new release: "+
				"extend it with gpg --quick-set-expire %s 2y (add '*' for its subkeys), replace the namespace's copy (trove key remove %s %s, then trove key add), and publish again",
				key.KeyID, key.Fingerprint, key.Namespace, key.KeyID)
		case errors.Is(err, pgperrors.ErrKeyRevoked):
			return registry.SigningKey{}, registry.Errorf(registry.Invalid, "SHA256SUMS is signed by key %s, which is revoked (or whose signing subkey or user ID is); sign with a valid key", key.KeyID)
		case errors.Is(err, pgperrors.ErrSignatureExpired):
			return registry.SigningKey{}, registry.Errorf(registry.Invalid, "the signature of SHA256SUMS by key %s has expired (or a self-signature of the key has); Terraform refuses it: sign again without an expiry", key.KeyID)
		default:
			return registry.SigningKey{}, registry.Errorf(registry.Invalid, "signature does not match SHA256SUMS (key %s: %s): the file changed after it was signed, or the signature belongs to another file", key.KeyID, pgpReason(err))
		}
	}
	return registry.SigningKey{}, registry.Wrap(registry.Invalid, &UnknownIssuerError{Issuer: issuer},
		fmt.Sprintf("SHA256SUMS is signed by key %s, which is not registered for %s; add it with trove key add", issuer, namespace))
}

// UnknownIssuerError is the cause of VerifyDetachedAt's error when the
// signature was made by none of the keys: callers whose keys are not an
// operator's (the mirror's come from an upstream) answer it in their own
// words (errors.As).
type UnknownIssuerError struct {
	Issuer string // the signature's issuer key ID, 16 hex digits
}

func (e *UnknownIssuerError) Error() string { return "signed by unknown key " + e.Issuer }

// weakHashes are message digests the clients still accept but that no
// longer protect a signed document.
var weakHashes = map[crypto.Hash]string{crypto.MD5: "MD5", crypto.SHA1: "SHA-1", crypto.RIPEMD160: "RIPEMD-160"}

// CheckSignatureShape checks that sig is a binary detached OpenPGP
// signature the publish would accept, without verifying it against a key:
// the checks a client can make before uploading (an ASCII-armored
// signature, for one, is refused with the gpg flag to use).
func CheckSignatureShape(sig []byte) error {
	_, err := parseSignature(sig)
	return err
}

// SignatureTime returns when a detached signature (of the shape
// CheckSignatureShape accepts) was made, for judging the signing key as it
// was then: a mirror verifies releases signed before their key expired,
// as the clients do.
func SignatureTime(sig []byte) (time.Time, error) {
	sigs, err := parseSignature(sig)
	if err != nil {
		return time.Time{}, err
	}
	return sigs[0].CreationTime, nil
}

// parseSignature checks the shape of a detached signature before it is
// verified, so that the user gets a precise message, and returns its
// signature packets.
func parseSignature(sig []byte) ([]*packet.Signature, error) {
	if len(sig) == 0 {
		return nil, registry.Errorf(registry.Invalid, "the signature of SHA256SUMS is empty; sign it with: gpg --detach-sign SHA256SUMS")
	}
	if len(sig) > MaxSignatureBytes {
		return nil, registry.Errorf(registry.TooLarge, "the signature of SHA256SUMS is larger than %d KiB; a detached signature is a few hundred bytes", MaxSignatureBytes>>10)
	}
	if bytes.HasPrefix(bytes.TrimSpace(sig), []byte("-----BEGIN PGP")) {
		return nil, registry.Errorf(registry.Invalid, "the signature is ASCII-armored; Terraform and OpenTofu need a binary detached signature: sign with gpg --detach-sign, without --armor")
	}
	var sigs []*packet.Signature
	packets := packet.NewReader(bytes.NewReader(sig))
	for {
		p, err := packets.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "the signature is not a binary OpenPGP signature (%s); sign with gpg --detach-sign", pgpReason(err))
		}
		s, ok := p.(*packet.Signature)
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "the signature file holds OpenPGP packets other than signatures (a key or a message); sign with gpg --detach-sign, not --sign or --clearsign")
		}
		if s.IssuerKeyId == nil {
			return nil, registry.Errorf(registry.Invalid, "the signature carries no issuer key ID, which the clients need to find the key; sign with gpg --detach-sign")
		}
		if s.SigType != packet.SigTypeBinary && s.SigType != packet.SigTypeText {
			return nil, registry.Errorf(registry.Invalid, "the signature is of type 0x%02x, not a document signature; sign with gpg --detach-sign", uint8(s.SigType))
		}
		if name, weak := weakHashes[s.Hash]; weak {
			return nil, registry.Errorf(registry.Invalid, "the signature uses the broken %s digest; sign with gpg --digest-algo SHA256 --detach-sign", name)
		}
		if s.SigLifetimeSecs != nil && *s.SigLifetimeSecs != 0 {
			return nil, registry.Errorf(registry.Invalid, "the signature expires (%s); Terraform refuses expired signatures, so installs would break then: sign without an expiry", s.CreationTime.Add(time.Duration(*s.SigLifetimeSecs)*time.Second).UTC().Format(time.RFC3339))
		}
		sigs = append(sigs, s)
	}
	if len(sigs) == 0 {
		return nil, registry.Errorf(registry.Invalid, "the signature file holds no OpenPGP signature; sign with gpg --detach-sign")
	}
	return sigs, nil
}

// pgpReason returns the library's message without its "openpgp: " prefix.
func pgpReason(err error) string {
	return strings.TrimPrefix(err.Error(), "openpgp: ")
}
