package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestProvenancePolicyImportKeysAPI: PUT .../provenance-policy takes the
// import keys as {key_id, ascii_armor} (key_id optional) and answers them
// with their key IDs; a bad key is a 400 with a JSON error naming it, and
// the policy is not stored.
func TestProvenancePolicyImportKeysAPI(t *testing.T) {
	s := trovetest.Start(t)
	c := adminClient(t, s)
	if _, err := c.CreateNamespace(context.Background(), apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "exporter")
	admin := "Bearer " + s.AdminToken
	put := func(body any) (int, []byte) {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return apiDo(t, s, "PUT", "/api/v1/namespaces/acme/provenance-policy", admin, "application/json", strings.NewReader(string(data)))
	}
	for name, c := range map[string]struct {
		body any
		want string
	}{
		"not a key":        {map[string]any{"repository": "acme/infra", "import_keys": []map[string]string{{"ascii_armor": "hello"}}}, "import key 1"},
		"a private key":    {map[string]any{"repository": "acme/infra", "import_keys": []map[string]string{{"ascii_armor": key.ArmoredPrivate}}}, "private key"},
		"a wrong key ID":   {map[string]any{"repository": "acme/infra", "import_keys": []map[string]string{{"key_id": "0123456789ABCDEF", "ascii_armor": key.ArmoredPublic}}}, "not 0123456789ABCDEF"},
		"a string":         {map[string]any{"repository": "acme/infra", "import_keys": []string{key.ArmoredPublic}}, "import_keys"},
		"too many":         {map[string]any{"repository": "acme/infra", "import_keys": make([]map[string]string, 17)}, "at most 16"},
		"no repository":    {map[string]any{"import_keys": []map[string]string{{"ascii_armor": key.ArmoredPublic}}}, "repository"},
		"an unknown field": {map[string]any{"repository": "acme/infra", "import_key": key.ArmoredPublic}, "import_key"},
	} {
		t.Run(name, func(t *testing.T) {
			status, raw := put(c.body)
			var e struct{ Errors []string }
			if status != http.StatusBadRequest || json.Unmarshal(raw, &e) != nil || len(e.Errors) == 0 || !strings.Contains(e.Errors[0], c.want) {
				t.Errorf("PUT = %d %s, want 400 saying %q", status, raw, c.want)
			}
			if status, _ := apiDo(t, s, "GET", "/api/v1/namespaces/acme/provenance-policy", admin, "", nil); status != http.StatusNotFound {
				t.Errorf("after a refused PUT, GET = %d", status)
			}
		})
	}
	status, raw := put(map[string]any{"repository": "acme/infra", "import_keys": []map[string]string{{"ascii_armor": key.ArmoredPublic}}})
	var p apispec.ProvenancePolicy
	if status != http.StatusOK || json.Unmarshal(raw, &p) != nil || len(p.ImportKeys) != 1 || p.ImportKeys[0].KeyID != key.KeyID || !strings.Contains(p.ImportKeys[0].ASCIIArmor, "BEGIN PGP PUBLIC KEY") {
		t.Fatalf("PUT = %d %s", status, raw)
	}
	got, err := c.GetProvenancePolicy(context.Background(), "acme")
	if err != nil || len(got.ImportKeys) != 1 || got.ImportKeys[0].KeyID != key.KeyID {
		t.Errorf("GET = %+v, %v", got, err)
	}
	// Without import_keys, a PUT replaces them with none (an empty list,
	// not null).
	status, raw = put(map[string]any{"repository": "acme/infra"})
	if status != http.StatusOK || !strings.Contains(string(raw), `"import_keys":[]`) {
		t.Errorf("PUT without import keys = %d %s", status, raw)
	}
}
