package operations_test

import (
	"context"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestProvenancePolicyRefused: setting or removing a namespace's
// provenance policy needs admin rights and a valid policy; a refusal
// stores nothing and audits nothing.
func TestProvenancePolicyRefused(t *testing.T) {
	e := newEnv(t)
	alice := e.user(t, "alice")
	reader := e.service(t, registry.ScopeRead, "acme")
	publisher := e.service(t, registry.ScopePublish, "acme")
	good := registry.ProvenancePolicy{Repository: "acme/infra", Refs: "refs/tags/v*"}
	for name, c := range map[string]struct {
		actor func() error
		want  registry.Kind
	}{
		"a reader": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), reader, "acme", good)
			return err
		}, registry.Forbidden},
		"a publisher": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), publisher, "acme", good)
			return err
		}, registry.Forbidden},
		"no repository": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "acme", registry.ProvenancePolicy{})
			return err
		}, registry.Invalid},
		"a bad pattern": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "acme", registry.ProvenancePolicy{Repository: "a/b", Refs: "["})
			return err
		}, registry.Invalid},
		"an http issuer": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "acme", registry.ProvenancePolicy{Repository: "a/b", Issuer: "http://ci"})
			return err
		}, registry.Invalid},
		"a newline": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "acme", registry.ProvenancePolicy{Repository: "a/b\nc"})
			return err
		}, registry.Invalid},
		"a long repository": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "acme", registry.ProvenancePolicy{Repository: strings.Repeat("r", 300)})
			return err
		}, registry.Invalid},
		"a missing namespace": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "nobody", good)
			return err
		}, registry.NotFound},
		"a bad namespace": {func() error {
			_, err := e.ops.SetProvenancePolicy(context.Background(), alice, "../x", good)
			return err
		}, registry.Invalid},
		"delete by a reader": {func() error { return e.ops.DeleteProvenancePolicy(context.Background(), reader, "acme") }, registry.Forbidden},
		"delete of none":     {func() error { return e.ops.DeleteProvenancePolicy(context.Background(), alice, "acme") }, registry.NotFound},
	} {
		t.Run(name, func(t *testing.T) {
			e.refused(t, c.want, func(context.Context) error { return c.actor() })
		})
	}
	p, err := e.ops.SetProvenancePolicy(t.Context(), alice, "ACME", good)
	if err != nil || p.Namespace != "acme" || p.UpdatedBy != "user:alice" {
		t.Fatalf("SetProvenancePolicy = %+v, %v", p, err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditProvenancePolicySet || a.Namespace != "acme" || !strings.Contains(a.Details, "acme/infra") {
		t.Errorf("audited as %+v", a)
	}
	if got, err := e.ops.ProvenancePolicy(t.Context(), reader, "acme"); err != nil || got.Repository != "acme/infra" {
		t.Errorf("a reader reads %+v, %v", got, err)
	}
}
