package operations_test

import (
	"context"
	"reflect"
	"testing"

	"trove.dev/trove/internal/registry"
)

// adminState is what the operations of webhooks, trust policies,
// retention rules and identity providers may write, besides env.state:
// every webhook with its deliveries (so every webhook event, the env's
// webhook wanting them all), trust policy, retention rule, identity
// provider and role mapping.
type adminState struct {
	Webhooks   []registry.Webhook
	Deliveries map[string][]registry.WebhookDelivery
	Trust      [][]registry.TrustPolicy
	Retention  []registry.RetentionRule
	Providers  []registry.IdentityProvider
	Mappings   []registry.RoleMapping
}

func (e *env) adminState(t *testing.T) adminState {
	t.Helper()
	ctx := t.Context()
	s := adminState{Deliveries: map[string][]registry.WebhookDelivery{}}
	for _, ns := range []string{"", "acme", "open", "other"} {
		ws, err := e.idx.ListWebhooks(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		s.Webhooks = append(s.Webhooks, ws...)
		if ns == "" {
			continue
		}
		ps, err := e.idx.ListTrustPolicies(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		s.Trust = append(s.Trust, ps)
	}
	for _, w := range s.Webhooks {
		ds, err := e.idx.ListWebhookDeliveries(ctx, w.ID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		s.Deliveries[w.ID] = ds
	}
	var err error
	if s.Retention, err = e.idx.ListRetentionRules(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Providers, err = e.idx.ListIdentityProviders(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Mappings, err = e.idx.ListRoleMappings(ctx, ""); err != nil {
		t.Fatal(err)
	}
	return s
}

// refusedAdmin is env.refused that also checks that no webhook,
// delivery, trust policy, retention rule, identity provider or role
// mapping changed.
func (e *env) refusedAdmin(t *testing.T, want registry.Kind, op func(ctx context.Context) error) {
	t.Helper()
	before := e.adminState(t)
	e.refused(t, want, op)
	if after := e.adminState(t); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused operation changed the index:\nbefore %+v\nafter  %+v", before, after)
	}
}

// adminOK fails the test if err is not nil.
func adminOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
