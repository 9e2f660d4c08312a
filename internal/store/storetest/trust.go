package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// trustPolicy returns a policy of namespace with the given ID (tp_ and
// 16 hex digits, from n) created at created.
func trustPolicy(n int, namespace string, created time.Time) registry.TrustPolicy {
	return registry.TrustPolicy{
		ID:          fmt.Sprintf("tp_%016x", n),
		Namespace:   namespace,
		Issuer:      "https://token.actions.githubusercontent.com",
		Audience:    "https://registry.example",
		Conditions:  map[string]string{"repository": "acme/infra", "ref": "refs/tags/v*"},
		Scope:       registry.ScopePublish,
		TokenTTL:    15 * time.Minute,
		Description: "releases of acme/infra",
		CreatedAt:   created,
	}
}

func normPolicy(p registry.TrustPolicy) registry.TrustPolicy {
	p.CreatedAt = normTime(p.CreatedAt)
	return p
}

func testTrustPolicies(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateGetList", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "labs")
		second := trustPolicy(2, "acme", at(time.Second).In(east))
		second.Scope, second.TokenTTL, second.Description = registry.ScopeRead, time.Hour, ""
		second.Conditions = map[string]string{"project_path": "acme/*"}
		first := trustPolicy(1, "acme", at(0))
		third := trustPolicy(3, "labs", at(0))
		for _, p := range []registry.TrustPolicy{second, first, third} {
			mustOK(t, x.CreateTrustPolicy(ctx, p), "CreateTrustPolicy "+p.ID)
		}
		got, err := x.GetTrustPolicy(ctx, "acme", second.ID)
		mustOK(t, err, "GetTrustPolicy")
		if !reflect.DeepEqual(normPolicy(got), normPolicy(second)) {
			t.Errorf("GetTrustPolicy = %+v, want %+v", got, second)
		}
		list, err := x.ListTrustPolicies(ctx, "acme")
		mustOK(t, err, "ListTrustPolicies")
		if len(list) != 2 || list[0].ID != first.ID || list[1].ID != second.ID {
			t.Fatalf("ListTrustPolicies(acme) = %+v, want %s then %s (by creation time)", list, first.ID, second.ID)
		}
		if !reflect.DeepEqual(normPolicy(list[0]), normPolicy(first)) {
			t.Errorf("listed %+v, want %+v", list[0], first)
		}
		none, err := x.ListTrustPolicies(ctx, "nowhere")
		if err != nil || len(none) != 0 {
			t.Errorf("ListTrustPolicies of an unknown namespace = %v, %v; want none, no error", none, err)
		}
	})
	t.Run("NotFoundAndConflict", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "labs")
		p := trustPolicy(1, "acme", at(0))
		wantKind(t, x.CreateTrustPolicy(ctx, trustPolicy(9, "nowhere", at(0))), registry.NotFound, "CreateTrustPolicy in a missing namespace")
		mustOK(t, x.CreateTrustPolicy(ctx, p), "CreateTrustPolicy")
		again := p
		again.Namespace = "labs"
		wantKind(t, x.CreateTrustPolicy(ctx, again), registry.Conflict, "CreateTrustPolicy with a taken ID")
		_, err := x.GetTrustPolicy(ctx, "labs", p.ID)
		wantKind(t, err, registry.NotFound, "GetTrustPolicy through another namespace")
		_, err = x.GetTrustPolicy(ctx, "acme", "tp_ffffffffffffffff")
		wantKind(t, err, registry.NotFound, "GetTrustPolicy of a missing policy")
		wantKind(t, x.DeleteTrustPolicy(ctx, "labs", p.ID), registry.NotFound, "DeleteTrustPolicy through another namespace")
		mustOK(t, x.DeleteTrustPolicy(ctx, "acme", p.ID), "DeleteTrustPolicy")
		wantKind(t, x.DeleteTrustPolicy(ctx, "acme", p.ID), registry.NotFound, "DeleteTrustPolicy twice")
		if list, err := x.ListTrustPolicies(ctx, "acme"); err != nil || len(list) != 0 {
			t.Errorf("ListTrustPolicies after delete = %v, %v", list, err)
		}
	})
	t.Run("DeleteNamespaceDeletesPolicies", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateTrustPolicy(ctx, trustPolicy(1, "acme", at(0))), "CreateTrustPolicy")
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		createNamespaces(t, x, "acme")
		if list, err := x.ListTrustPolicies(ctx, "acme"); err != nil || len(list) != 0 {
			t.Errorf("policies of a deleted and recreated namespace: %v, %v; want none", list, err)
		}
		mustOK(t, x.CreateTrustPolicy(ctx, trustPolicy(1, "acme", at(0))), "CreateTrustPolicy with the ID of a deleted policy")
	})
}

func testReplayGuard(t *testing.T, newIndex func(*testing.T) store.Index) {
	const iss = "https://token.actions.githubusercontent.com"
	t.Run("OnceUntilExpiry", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		exp := at(10 * time.Minute)
		mustOK(t, x.UseTokenID(ctx, iss, "jti-1", exp, at(0)), "UseTokenID")
		wantKind(t, x.UseTokenID(ctx, iss, "jti-1", exp, at(time.Minute)), registry.Conflict, "UseTokenID replayed")
		wantKind(t, x.UseTokenID(ctx, iss, "jti-1", exp, exp), registry.Conflict, "UseTokenID replayed at its expiry")
		mustOK(t, x.UseTokenID(ctx, "https://gitlab.com", "jti-1", exp, at(0)), "UseTokenID of the same jti of another issuer")
		mustOK(t, x.UseTokenID(ctx, iss, "jti-2", exp, at(0)), "UseTokenID of another jti")
		// Once expired, the record is purged by the next call.
		mustOK(t, x.UseTokenID(ctx, iss, "jti-1", at(time.Hour), exp.Add(time.Microsecond)), "UseTokenID after the record expired")
		wantKind(t, x.UseTokenID(ctx, iss, "jti-1", at(time.Hour), exp.Add(time.Second)), registry.Conflict, "UseTokenID of the new record")
	})
	t.Run("Invalid", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		wantKind(t, x.UseTokenID(ctx, iss, "", at(time.Minute), at(0)), registry.Invalid, "UseTokenID without jti")
		wantKind(t, x.UseTokenID(ctx, "", "j", at(time.Minute), at(0)), registry.Invalid, "UseTokenID without issuer")
		wantKind(t, x.UseTokenID(ctx, iss, "j", time.Time{}, at(0)), registry.Invalid, "UseTokenID without expiry")
	})
	t.Run("ConcurrentCallersOneWins", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		const callers = 8
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() { errs[i] = x.UseTokenID(ctx, iss, "race", at(time.Hour), at(0)) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !registry.IsKind(err, registry.Conflict):
				t.Errorf("UseTokenID: %v, want nil or Conflict", err)
			}
		}
		if won != 1 {
			t.Errorf("%d concurrent callers recorded the same token ID, want 1", won)
		}
	})
}

// CheckMigratedTrustPolicies checks an index migrated to schema version
// 10 from an older one that holds the namespace acme: policies can be
// created in it and go with it, and token IDs can be recorded.
func CheckMigratedTrustPolicies(t *testing.T, x store.Index) {
	t.Helper()
	ctx := t.Context()
	mustOK(t, x.CreateTrustPolicy(ctx, trustPolicy(1, "acme", at(0))), "CreateTrustPolicy in a migrated index")
	if list, err := x.ListTrustPolicies(ctx, "acme"); err != nil || len(list) != 1 {
		t.Errorf("ListTrustPolicies after the migration = %v, %v; want 1", list, err)
	}
	mustOK(t, x.UseTokenID(ctx, "https://gitlab.com", "j", at(time.Hour), at(0)), "UseTokenID in a migrated index")
	mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
	if list, err := x.ListTrustPolicies(ctx, "acme"); err != nil || len(list) != 0 {
		t.Errorf("policies of a deleted namespace = %v, %v; want none", list, err)
	}
}
