package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestAddKeyRefusesKeysThatCannotSignNow checks that keys which could sign
// no new release (expired, revoked, or with an expired signing subkey as
// the only key that signs) are refused with 400 and a message that says
// what to do, and that nothing is stored; a key that expires later is
// added with its expiry.
func TestAddKeyRefusesKeysThatCannotSignNow(t *testing.T) {
	s, tokens := setup(t)
	created := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	subExpired := signingtest.NewKeyWith(t, "subgone", signingtest.Options{SigningSubkey: true, Created: created, SubkeyLifetime: 24 * time.Hour})
	// Only the subkey may sign: the primary key certifies.
	for _, id := range subExpired.Entity.Identities {
		id.SelfSignature.FlagSign = false
		if err := id.SelfSignature.SignUserId(id.UserId.Id, subExpired.Entity.PrimaryKey, subExpired.Entity.PrivateKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	var subExpiredArmor bytes.Buffer
	if err := armorPublic(&subExpiredArmor, subExpired); err != nil {
		t.Fatal(err)
	}

	post := func(t *testing.T, armored string) (int, string) {
		t.Helper()
		body, _ := json.Marshal(apispec.AddSigningKeyRequest{ASCIIArmor: armored})
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v1/namespaces/acme/keys", bytes.NewReader(body))
		req.Header.Set("Authorization", tokens[acmeAdmin])
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}

	refused := []struct {
		name, armored, want string
	}{
		{"expired", signingtest.NewKeyWith(t, "old", signingtest.Options{Created: created, Lifetime: 24 * time.Hour}).ArmoredPublic, "expired on " + created.Add(24*time.Hour).UTC().Format(time.RFC3339)},
		{"revoked", signingtest.NewKeyWith(t, "gone", signingtest.Options{Revoked: true}).ArmoredPublic, "is revoked"},
		{"signing subkey expired", subExpiredArmor.String(), "no signing key that is valid now"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, tc.armored)
			var doc struct {
				Errors []string `json:"errors"`
			}
			if err := json.Unmarshal([]byte(body), &doc); err != nil || status != http.StatusBadRequest || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], tc.want) {
				t.Fatalf("POST key = %d %s, want 400 with an error containing %q", status, body, tc.want)
			}
		})
	}
	keys, err := s.Index.ListSigningKeys(t.Context(), "acme")
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys stored after refused additions: %v, %v", keys, err)
	}

	later := signingtest.NewKeyWith(t, "later", signingtest.Options{Created: created, Lifetime: 72 * time.Hour})
	if status, body := post(t, later.ArmoredPublic); status != http.StatusCreated || !strings.Contains(body, created.Add(72*time.Hour).UTC().Format(time.RFC3339)) {
		t.Fatalf("POST a key that expires in a day = %d %s, want 201 with its expiry", status, body)
	}
}

// armorPublic writes k's public key, as modified, ASCII-armored.
func armorPublic(w io.Writer, k *signingtest.Key) error {
	aw, err := armor.Encode(w, openpgp.PublicKeyType, nil)
	if err != nil {
		return err
	}
	if err := k.Entity.Serialize(aw); err != nil {
		return err
	}
	return aw.Close()
}
