package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// maxVerifyProvenanceFile bounds a --provenance file: an envelope, or an
// API answer holding one with its keys.
const maxVerifyProvenanceFile = 2 * provenance.MaxEnvelopeBytes

// provenanceFile returns the DSSE envelope of a --provenance file and,
// when the file is an answer of the provenance API of a module or a
// mirrored provider ({"envelope", "keys"}: apispec.ModuleProvenance,
// apispec.MirroredProvenance), the keys it names; a bare envelope names
// none (nil, false).
func provenanceFile(data []byte) (envelope []byte, keys []registry.SigningKey, answer bool, err error) {
	envelope, keys, answer, err = parseProvenanceFile(data)
	if err == nil && len(envelope) > provenance.MaxEnvelopeBytes {
		return nil, nil, answer, fmt.Errorf("the envelope is larger than %d KiB", provenance.MaxEnvelopeBytes>>10)
	}
	return envelope, keys, answer, err
}

// parseProvenanceFile splits data as provenanceFile describes.
func parseProvenanceFile(data []byte) (envelope []byte, keys []registry.SigningKey, answer bool, err error) {
	var a struct {
		Envelope json.RawMessage     `json:"envelope"`
		Keys     []apispec.BundleKey `json:"keys"`
	}
	if json.Unmarshal(data, &a) != nil || len(bytes.TrimSpace(a.Envelope)) == 0 || bytes.Equal(bytes.TrimSpace(a.Envelope), []byte("null")) {
		return data, nil, false, nil
	}
	for i, k := range a.Keys {
		pub, err := signing.ParsePublicKey(k.ASCIIArmor)
		if err != nil {
			return nil, nil, true, fmt.Errorf("key %d (%s) of the provenance file is not an OpenPGP public key: %s", i+1, registry.Elide(k.KeyID), verifyMessage(err))
		}
		keys = append(keys, pub)
	}
	return a.Envelope, keys, true, nil
}
