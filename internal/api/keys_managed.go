package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// generateKey answers POST RouteKeys with {"managed": true}: Trove
// generates the namespace's registry-managed key. The caller holds admin
// on the namespace (addKey checked it). The answer, the audit event and
// the logs carry the public key only.
func (h *handler) generateKey(w http.ResponseWriter, r *http.Request, ns string, req apispec.AddSigningKeyRequest) error {
	if req.ASCIIArmor != "" {
		return registry.Errorf(registry.Invalid, "send either ascii_armor (a public key to add) or managed: true (Trove generates the key), not both")
	}
	if h.Managed == nil {
		return registry.Errorf(registry.Unavailable, "this Trove does not generate managed signing keys; add a public key instead: trove key add %s --file key.asc", ns)
	}
	// The audit entry commits with the key, named once it is made.
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditKeyGenerate, Namespace: ns})
	fx.Bind = func(record any) {
		if key, ok := record.(registry.SigningKey); ok {
			fx.Audit[0].Target, fx.Audit[0].Details = key.KeyID, "registry-managed key, fingerprint "+key.Fingerprint
		}
	}
	key, err := h.Managed.Generate(store.WithEffects(r.Context(), fx), ns)
	if err != nil {
		return err
	}
	h.done(r.Context(), fx)
	h.Logger.InfoContext(r.Context(), "generated managed signing key", "namespace", ns, "key_id", key.KeyID)
	return httpjson.Write(w, http.StatusCreated, keyDoc(key))
}

// signedDetails describes who signed a published version, for the audit log.
func signedDetails(k registry.SigningKey) string {
	if k.Managed {
		return "signed by Trove with managed key " + k.KeyID
	}
	return "signed by key " + k.KeyID
}
