package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
)

const generateBody = `{"managed": true}`

// TestGenerateManagedKeyAdminOnly: only admins of the namespace make Trove
// generate its key; the answer, listing and audit show the public half.
func TestGenerateManagedKeyAdminOnly(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	for _, p := range []string{none, malformed, expired, revoked, acmeRead, acmePublish, otherAdmin, globalRead, userReader, userPublisher, userOther, userNarrow, userDisabled} {
		status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[p], "application/json", strings.NewReader(generateBody))
		if status != http.StatusUnauthorized && status != http.StatusForbidden && status != http.StatusNotFound {
			t.Errorf("%s: generate = %d %s; want 401, 403 or 404", p, status, raw)
		}
	}
	if _, _, err := s.Index.ManagedSigningKey(ctx, "acme"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("a refused caller generated a key: %v", err)
	}

	status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[userAdmin], "application/json", strings.NewReader(`{"managed": true, "ascii_armor": "x"}`))
	if status != http.StatusBadRequest || !strings.Contains(string(raw), "not both") {
		t.Errorf("managed with an armor = %d %s; want 400", status, raw)
	}

	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[acmeAdmin], "application/json", strings.NewReader(generateBody))
	if status != http.StatusCreated {
		t.Fatalf("generate by the namespace admin = %d %s", status, raw)
	}
	noPrivate(t, "generate answer", raw)
	var key apispec.SigningKey
	if err := json.Unmarshal(raw, &key); err != nil {
		t.Fatal(err)
	}
	if !key.Managed || key.Namespace != "acme" || len(key.KeyID) != 16 || !strings.HasPrefix(key.ASCIIArmor, "-----BEGIN PGP PUBLIC KEY BLOCK-----") {
		t.Errorf("generated key document = %+v", key)
	}
	if _, err := signing.ParsePublicKey(key.ASCIIArmor); err != nil {
		t.Errorf("the answered key does not parse: %v", err)
	}

	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[globalAdmin], "application/json", strings.NewReader(generateBody))
	if status != http.StatusConflict || !strings.Contains(string(raw), "trove key remove") {
		t.Errorf("a second managed key = %d %s; want 409 naming trove key remove", status, raw)
	}

	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/keys", tokens[acmeRead], "", nil)
	noPrivate(t, "key list", raw)
	var list apispec.SigningKeyList
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil || len(list.Keys) != 1 || !list.Keys[0].Managed || list.Keys[0].KeyID != key.KeyID {
		t.Errorf("key list = %d %s; want the managed key", status, raw)
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/keys/"+key.KeyID, tokens[acmeRead], "", nil)
	if status != http.StatusOK || !strings.Contains(string(raw), `"managed":true`) {
		t.Errorf("get key = %d %s", status, raw)
	}

	events, err := s.Index.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditKeyGenerate})
	if err != nil || len(events) != 1 || events[0].Target != key.KeyID || events[0].Namespace != "acme" || !strings.Contains(events[0].Details, key.Fingerprint) {
		t.Errorf("audit of the generation = %+v, %v", events, err)
	}
	for _, ev := range events {
		noPrivate(t, "audit details", []byte(ev.Details))
	}

	// Removing it destroys the private half: a new one can be generated.
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/namespaces/acme/keys/"+key.KeyID, tokens[acmeAdmin], "", nil); status != http.StatusNoContent {
		t.Fatalf("remove = %d %s", status, raw)
	}
	if _, _, err := s.Index.ManagedSigningKey(ctx, "acme"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the managed key outlived its removal: %v", err)
	}
	if status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[userGlobal], "application/json", strings.NewReader(generateBody)); status != http.StatusCreated {
		t.Errorf("generate after removal = %d %s", status, raw)
	}
}

// noPrivate fails if raw holds anything of a private key.
func noPrivate(t *testing.T, what string, raw []byte) {
	t.Helper()
	for _, bad := range []string{"PRIVATE", "sealed", "TSK1"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("%s contains %q: %s", what, bad, raw)
		}
	}
}

// TestPublishWithoutSignatureIsSignedByTrove: a release without .sig in a
// namespace with a managed key is signed by Trove, and the signature and
// key served to the clients verify.
func TestPublishWithoutSignatureIsSignedByTrove(t *testing.T) {
	s, tokens := setup(t)
	rel := releasetest.Build(t, signingtest.NewKey(t, "acme"), releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64"}})
	upload := func() (int, []byte) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for _, f := range rel.Files {
			if strings.HasSuffix(f.Name, ".sig") {
				continue
			}
			w, err := mw.CreateFormFile(apispec.PublishFileField, f.Name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(f.Data)
		}
		mw.Close()
		return apiDo(t, s, "POST", "/api/v1/namespaces/acme/providers/example/versions/1.0.0", tokens[acmePublish], mw.FormDataContentType(), &body)
	}

	status, raw := upload()
	if status != http.StatusBadRequest || !strings.Contains(string(raw), "trove key generate acme") {
		t.Fatalf("publish without .sig and without a managed key = %d %s; want 400 naming trove key generate", status, raw)
	}

	status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/keys", tokens[acmeAdmin], "application/json", strings.NewReader(generateBody))
	var key apispec.SigningKey
	if status != http.StatusCreated || json.Unmarshal(raw, &key) != nil {
		t.Fatalf("generate = %d %s", status, raw)
	}
	status, raw = upload()
	var res apispec.PublishResult
	if status != http.StatusCreated || json.Unmarshal(raw, &res) != nil || res.Version.KeyID != key.KeyID {
		t.Fatalf("publish without .sig = %d %s; want 201 signed by %s", status, raw, key.KeyID)
	}
	events, err := s.Index.ListAudit(context.Background(), registry.AuditFilter{Action: registry.AuditProviderPublish})
	if err != nil || len(events) != 1 || !strings.Contains(events[0].Details, "managed key "+key.KeyID) {
		t.Errorf("audit of the publish = %+v, %v", events, err)
	}

	// What the clients get: the download document's key and signature.
	status, raw = apiDo(t, s, "GET", "/v1/providers/acme/example/1.0.0/download/linux/amd64", tokens[acmeRead], "", nil)
	var doc struct {
		SHASumsURL          string `json:"shasums_url"`
		SHASumsSignatureURL string `json:"shasums_signature_url"`
		SigningKeys         struct {
			GPGPublicKeys []struct {
				KeyID      string `json:"key_id"`
				ASCIIArmor string `json:"ascii_armor"`
			} `json:"gpg_public_keys"`
		} `json:"signing_keys"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &doc) != nil || len(doc.SigningKeys.GPGPublicKeys) != 1 {
		t.Fatalf("download document = %d %s", status, raw)
	}
	served := doc.SigningKeys.GPGPublicKeys[0]
	if served.KeyID != key.KeyID || served.ASCIIArmor != key.ASCIIArmor {
		t.Errorf("served key %s, want the managed key %s", served.KeyID, key.KeyID)
	}
	fetch := func(u string) []byte {
		resp, err := s.HTTPClient().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d", u, resp.StatusCode)
		}
		return b.Bytes()
	}
	sums, sig := fetch(doc.SHASumsURL), fetch(doc.SHASumsSignatureURL)
	if !bytes.Equal(sums, rel.ByName(rel.Prefix()+"_SHA256SUMS")) {
		t.Errorf("served SHA256SUMS differs from the uploaded one")
	}
	k, err := signing.ParsePublicKey(served.ASCIIArmor)
	if err != nil {
		t.Fatal(err)
	}
	if signer, err := signing.VerifyDetached([]registry.SigningKey{k}, sums, sig); err != nil || signer.KeyID != key.KeyID {
		t.Errorf("the served signature does not verify with the served key: %v", err)
	}
}
