package storetest

import (
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testProvenancePolicies checks the namespaces' provenance policies.
func testProvenancePolicies(t *testing.T, newIndex func(*testing.T) store.Index) {
	x, ctx := newIndex(t), t.Context()
	createNamespaces(t, x, "acme", "other")
	_, err := x.GetProvenancePolicy(ctx, "acme")
	wantKind(t, err, registry.NotFound, "GetProvenancePolicy of a namespace without one")
	p := registry.ProvenancePolicy{Namespace: "acme", Repository: "acme/infra", Refs: "refs/tags/v*", UpdatedAt: t0, UpdatedBy: "user:ada"}
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy")
	got, err := x.GetProvenancePolicy(ctx, "acme")
	mustOK(t, err, "GetProvenancePolicy")
	if got.Repository != p.Repository || got.Refs != p.Refs || got.Issuer != "" || !got.UpdatedAt.Equal(t0) || got.UpdatedBy != "user:ada" {
		t.Errorf("GetProvenancePolicy = %+v, want %+v", got, p)
	}
	p.Issuer, p.Refs = "https://ci.example.test", ""
	mustOK(t, x.PutProvenancePolicy(ctx, p), "PutProvenancePolicy again (replace)")
	if got, _ := x.GetProvenancePolicy(ctx, "acme"); got.Issuer != p.Issuer || got.Refs != "" {
		t.Errorf("the replaced policy reads %+v", got)
	}
	for name, bad := range map[string]registry.ProvenancePolicy{
		"no repository":     {Namespace: "other", UpdatedAt: t0},
		"bad pattern":       {Namespace: "other", Repository: "acme/infra", Refs: "refs/[", UpdatedAt: t0},
		"http issuer":       {Namespace: "other", Repository: "acme/infra", Issuer: "http://ci.example.test", UpdatedAt: t0},
		"control character": {Namespace: "other", Repository: "acme/\x1binfra", UpdatedAt: t0},
	} {
		wantKind(t, x.PutProvenancePolicy(ctx, bad), registry.Invalid, "PutProvenancePolicy with "+name)
	}
	_, err = x.GetProvenancePolicy(ctx, "other")
	wantKind(t, err, registry.NotFound, "GetProvenancePolicy after refused puts")
	wantKind(t, x.PutProvenancePolicy(ctx, registry.ProvenancePolicy{Namespace: "nobody", Repository: "a/b", UpdatedAt: t0}), registry.NotFound,
		"PutProvenancePolicy of a missing namespace")
	mustOK(t, x.DeleteProvenancePolicy(ctx, "acme"), "DeleteProvenancePolicy")
	wantKind(t, x.DeleteProvenancePolicy(ctx, "acme"), registry.NotFound, "DeleteProvenancePolicy again")
}
