package operations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestProvenancePolicyImportKeys: a policy's import keys must each be one
// ASCII-armored OpenPGP public key, listed once, matching the key ID it
// comes with, at most MaxPolicyImportKeys; anything else is refused
// (Invalid) with nothing stored. Accepted keys are stored parsed (key ID,
// fingerprint) and named in the audit entry; a new set replaces them.
func TestProvenancePolicyImportKeys(t *testing.T) {
	e := newEnv(t)
	alice := e.user(t, "alice")
	k1, k2 := signingtest.NewKey(t, "exporter"), signingtest.NewKey(t, "exporter-next")
	policy := func(keys ...registry.SigningKey) registry.ProvenancePolicy {
		return registry.ProvenancePolicy{Repository: "acme/infra", Refs: "refs/tags/v*", ImportKeys: keys}
	}
	armor := func(k *signingtest.Key) registry.SigningKey { return registry.SigningKey{ASCIIArmor: k.ArmoredPublic} }
	tooMany := make([]registry.SigningKey, registry.MaxPolicyImportKeys+1)
	for i := range tooMany {
		tooMany[i] = armor(k1)
	}
	for name, c := range map[string]struct {
		keys []registry.SigningKey
		want string
	}{
		"not a key":            {[]registry.SigningKey{{ASCIIArmor: "not a key"}}, "import key 1"},
		"empty":                {[]registry.SigningKey{{}}, "public key is empty"},
		"a private key":        {[]registry.SigningKey{{ASCIIArmor: k1.ArmoredPrivate}}, "private key"},
		"another key's ID":     {[]registry.SigningKey{{KeyID: k2.KeyID, ASCIIArmor: k1.ArmoredPublic}}, "is the key " + k1.KeyID},
		"a hostile key ID":     {[]registry.SigningKey{{KeyID: "'; DROP TABLE x", ASCIIArmor: k1.ArmoredPublic}}, "is the key"},
		"the same key twice":   {[]registry.SigningKey{armor(k1), armor(k1)}, "twice"},
		"too many":             {tooMany, fmt.Sprintf("at most %d", registry.MaxPolicyImportKeys)},
		"too large":            {[]registry.SigningKey{{ASCIIArmor: strings.Repeat("A", 1<<20)}}, "larger than"},
		"two keys in one file": {[]registry.SigningKey{{ASCIIArmor: k1.ArmoredPublic + "\n" + k2.ArmoredPublic}}, "import key 1"},
		"a good and a bad key": {[]registry.SigningKey{armor(k1), {ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----"}}, "import key 2"},
	} {
		t.Run(name, func(t *testing.T) {
			e.refused(t, registry.Invalid, func(ctx context.Context) error {
				_, err := e.ops.SetProvenancePolicy(ctx, alice, "acme", policy(c.keys...))
				if err != nil && !strings.Contains(registry.Message(err), c.want) {
					t.Errorf("error %q does not say %q", registry.Message(err), c.want)
				}
				return err
			})
			if _, err := e.ops.ProvenancePolicy(t.Context(), alice, "acme"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("a refused policy was stored: %v", err)
			}
		})
	}

	p, err := e.ops.SetProvenancePolicy(t.Context(), alice, "acme", policy(armor(k1), registry.SigningKey{KeyID: strings.ToLower(k2.KeyID), ASCIIArmor: k2.ArmoredPublic}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ImportKeys) != 2 || p.ImportKeys[0].KeyID != k1.KeyID || p.ImportKeys[1].KeyID != k2.KeyID || p.ImportKeys[0].Fingerprint == "" {
		t.Fatalf("stored import keys %+v", p.ImportKeys)
	}
	if a := e.lastAudit(t); !strings.Contains(a.Details, k1.KeyID) || !strings.Contains(a.Details, k2.KeyID) {
		t.Errorf("the audit entry does not name the import keys: %+v", a)
	}
	got, err := e.ops.ProvenancePolicy(t.Context(), alice, "acme")
	if err != nil || len(got.ImportKeys) != 2 || got.ImportKeys[1].Fingerprint != p.ImportKeys[1].Fingerprint {
		t.Fatalf("read back %+v, %v", got.ImportKeys, err)
	}
	if p, err = e.ops.SetProvenancePolicy(t.Context(), alice, "acme", policy()); err != nil || len(p.ImportKeys) != 0 {
		t.Errorf("a policy set again without import keys keeps %+v, %v", p.ImportKeys, err)
	}
}
