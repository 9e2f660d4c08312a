package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// generateKey answers POST RouteKeys with {"managed": true}: Trove
// generates the namespace's registry-managed key
// (operations.GenerateSigningKey). The answer carries the public key
// only.
func (h *handler) generateKey(w http.ResponseWriter, r *http.Request, ns string, req apispec.AddSigningKeyRequest) error {
	if req.ASCIIArmor != "" {
		return registry.Errorf(registry.Invalid, "send either ascii_armor (a public key to add) or managed: true (Trove generates the key), not both")
	}
	key, err := h.Ops.GenerateSigningKey(r.Context(), actor(r), ns)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, keyDoc(key))
}

// signedDetails describes who signed a published version, for the audit log.
func signedDetails(k registry.SigningKey) string {
	if k.Managed {
		return "signed by Trove with managed key " + k.KeyID
	}
	return "signed by key " + k.KeyID
}
