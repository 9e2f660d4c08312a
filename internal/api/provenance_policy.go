package api

import (
	"net/http"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// registerProvenancePolicy mounts a namespace's provenance policy. Its
// rules are operations.ProvenancePolicy, SetProvenancePolicy and
// DeleteProvenancePolicy; the publishes check it
// (operations.PublishProvider, PublishModule).
func (h *handler) registerProvenancePolicy(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteProvenancePolicy, h.getProvenancePolicy)
	route("PUT "+apispec.RouteProvenancePolicy, h.putProvenancePolicy)
	route("DELETE "+apispec.RouteProvenancePolicy, h.deleteProvenancePolicy)
}

// provenancePolicyDoc renders a policy as the API shows it.
func provenancePolicyDoc(p registry.ProvenancePolicy) apispec.ProvenancePolicy {
	keys := make([]apispec.BundleKey, 0, len(p.ImportKeys))
	for _, k := range p.ImportKeys {
		keys = append(keys, apispec.BundleKey{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	return apispec.ProvenancePolicy{Namespace: p.Namespace, Repository: p.Repository, Refs: p.Refs, Issuer: p.Issuer,
		ImportKeys: keys, UpdatedAt: p.UpdatedAt, UpdatedBy: p.UpdatedBy}
}

func (h *handler) getProvenancePolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := h.Ops.ProvenancePolicy(r.Context(), actor(r), r.PathValue("namespace"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, provenancePolicyDoc(p))
}

func (h *handler) putProvenancePolicy(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (the operation checks both again).
	ns, err := h.namespaceParam(r, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	var req apispec.ProvenancePolicyRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if len(req.ImportKeys) > registry.MaxPolicyImportKeys {
		return registry.Errorf(registry.Invalid, "a provenance policy has at most %d import keys; this one has %d", registry.MaxPolicyImportKeys, len(req.ImportKeys))
	}
	var keys []registry.SigningKey
	for _, k := range req.ImportKeys {
		keys = append(keys, registry.SigningKey{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	p, err := h.Ops.SetProvenancePolicy(r.Context(), actor(r), ns,
		registry.ProvenancePolicy{Repository: req.Repository, Refs: req.Refs, Issuer: req.Issuer, ImportKeys: keys})
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, provenancePolicyDoc(p))
}

func (h *handler) deleteProvenancePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteProvenancePolicy(r.Context(), actor(r), r.PathValue("namespace")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
