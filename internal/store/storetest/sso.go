package storetest

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

func testIdentityProvider(name string) registry.IdentityProvider {
	return registry.IdentityProvider{
		Name: name, DisplayName: "Corp " + name, Issuer: "https://idp.example.com/" + name, ClientID: "trove-" + name,
		ClientSecretEnv: "TROVE_OIDC_SECRET_CORP", Scopes: []string{"profile", "groups"}, UsernameClaim: "email",
		CreatedAt: at(time.Minute).In(east), UpdatedAt: at(time.Minute).In(east),
	}
}

func normIdentityProvider(p registry.IdentityProvider) registry.IdentityProvider {
	p.CreatedAt, p.UpdatedAt = normTime(p.CreatedAt), normTime(p.UpdatedAt)
	if len(p.Scopes) == 0 {
		p.Scopes = nil
	}
	return p
}

func testSSO(t *testing.T, newIndex func(*testing.T) store.Index) {
	ctx := t.Context()
	t.Run("IdentityProviderCreatedBound", func(t *testing.T) {
		// Of concurrent puts of a new provider exactly one creates it,
		// and each tells its effects' Bind, in its transaction, what it
		// did: as it answers.
		x := newIndex(t)
		const n = 6
		var wg sync.WaitGroup
		created, bound := make([]bool, n), make([]store.IdentityProviderCreated, n)
		calls, errs := make([]int, n), make([]error, n)
		for i := range n {
			wg.Go(func() {
				fx := &store.Effects{Bind: func(record any) {
					if c, ok := record.(store.IdentityProviderCreated); ok {
						bound[i] = c
						calls[i]++
					}
				}}
				created[i], errs[i] = x.PutIdentityProvider(store.WithEffects(ctx, fx), testIdentityProvider("corp"))
			})
		}
		wg.Wait()
		creators := 0
		for i := range n {
			mustOK(t, errs[i], "PutIdentityProvider")
			if calls[i] == 0 || bool(bound[i]) != created[i] {
				t.Errorf("put %d answered created %v, bound %v (%d calls)", i, created[i], bound[i], calls[i])
			}
			if created[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Errorf("%d of %d concurrent puts of a new provider created it, want 1", creators, n)
		}
	})
	t.Run("IdentityProviders", func(t *testing.T) {
		x := newIndex(t)
		p := testIdentityProvider("corp")
		created, err := x.PutIdentityProvider(ctx, p)
		mustOK(t, err, "PutIdentityProvider")
		if !created {
			t.Error("PutIdentityProvider of a new provider: created = false")
		}
		got, err := x.GetIdentityProvider(ctx, "corp")
		mustOK(t, err, "GetIdentityProvider")
		if !reflect.DeepEqual(normIdentityProvider(got), normIdentityProvider(p)) {
			t.Errorf("GetIdentityProvider = %+v, want %+v", got, p)
		}
		// Replace: every field but CreatedAt.
		q := p
		q.DisplayName, q.Issuer, q.Scopes, q.ClientSecretEnv = "", "http://localhost:9999", nil, ""
		q.CreatedAt, q.UpdatedAt = at(time.Hour), at(2*time.Hour)
		created, err = x.PutIdentityProvider(ctx, q)
		mustOK(t, err, "PutIdentityProvider (replace)")
		if created {
			t.Error("PutIdentityProvider of an existing provider: created = true")
		}
		got, err = x.GetIdentityProvider(ctx, "corp")
		mustOK(t, err, "GetIdentityProvider")
		want := q
		want.CreatedAt = p.CreatedAt
		if !reflect.DeepEqual(normIdentityProvider(got), normIdentityProvider(want)) {
			t.Errorf("after replace: %+v, want %+v", got, want)
		}
		_, err = x.PutIdentityProvider(ctx, testIdentityProvider("a"))
		mustOK(t, err, "PutIdentityProvider a")
		list, err := x.ListIdentityProviders(ctx)
		mustOK(t, err, "ListIdentityProviders")
		if len(list) != 2 || list[0].Name != "a" || list[1].Name != "corp" {
			t.Errorf("ListIdentityProviders = %+v, want a, corp", list)
		}
		bad := testIdentityProvider("Bad Name")
		_, err = x.PutIdentityProvider(ctx, bad)
		wantKind(t, err, registry.Invalid, "PutIdentityProvider with an invalid name")
		_, err = x.GetIdentityProvider(ctx, "missing")
		wantKind(t, err, registry.NotFound, "GetIdentityProvider missing")
		wantKind(t, x.DeleteIdentityProvider(ctx, "missing"), registry.NotFound, "DeleteIdentityProvider missing")
		mustOK(t, x.DeleteIdentityProvider(ctx, "a"), "DeleteIdentityProvider")
		_, err = x.GetIdentityProvider(ctx, "a")
		wantKind(t, err, registry.NotFound, "GetIdentityProvider after delete")
	})

	t.Run("RoleMappings", func(t *testing.T) {
		x := newIndex(t)
		_, err := x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform", Namespace: "acme", Role: registry.RolePublisher, CreatedAt: t0})
		wantKind(t, err, registry.NotFound, "CreateRoleMapping of a missing provider")
		_, err = x.PutIdentityProvider(ctx, testIdentityProvider("corp"))
		mustOK(t, err, "PutIdentityProvider")
		_, err = x.PutIdentityProvider(ctx, testIdentityProvider("other"))
		mustOK(t, err, "PutIdentityProvider")
		m1, err := x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform", Namespace: "acme", Role: registry.RolePublisher, CreatedAt: at(time.Second).In(east)})
		mustOK(t, err, "CreateRoleMapping")
		m2, err := x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "other", Claim: "groups", Value: "ops", Namespace: "*", Role: registry.RoleAdmin, CreatedAt: t0})
		mustOK(t, err, "CreateRoleMapping")
		m3, err := x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "ops", Namespace: "*", Role: registry.RoleAdmin, CreatedAt: t0})
		mustOK(t, err, "CreateRoleMapping")
		if m1.ID == 0 || m2.ID <= m1.ID || m3.ID <= m2.ID {
			t.Errorf("IDs %d, %d, %d: want increasing, non-zero", m1.ID, m2.ID, m3.ID)
		}
		_, err = x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform", Namespace: "acme", Role: registry.RoleReader, CreatedAt: t0})
		wantKind(t, err, registry.Conflict, "CreateRoleMapping duplicate")
		_, err = x.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "x", Namespace: "*", Role: registry.RoleReader, CreatedAt: t0})
		wantKind(t, err, registry.Invalid, "CreateRoleMapping of * with role reader")
		got, err := x.GetRoleMapping(ctx, m1.ID)
		mustOK(t, err, "GetRoleMapping")
		got.CreatedAt, m1.CreatedAt = normTime(got.CreatedAt), normTime(m1.CreatedAt)
		if !reflect.DeepEqual(got, m1) {
			t.Errorf("GetRoleMapping = %+v, want %+v", got, m1)
		}
		list, err := x.ListRoleMappings(ctx, "corp")
		mustOK(t, err, "ListRoleMappings")
		if len(list) != 2 || list[0].ID != m1.ID || list[1].ID != m3.ID {
			t.Errorf("ListRoleMappings(corp) = %+v, want %d, %d", list, m1.ID, m3.ID)
		}
		all, err := x.ListRoleMappings(ctx, "")
		mustOK(t, err, "ListRoleMappings")
		if len(all) != 3 {
			t.Errorf("ListRoleMappings(\"\") has %d mappings, want 3", len(all))
		}
		none, err := x.ListRoleMappings(ctx, "missing")
		mustOK(t, err, "ListRoleMappings missing")
		if len(none) != 0 {
			t.Errorf("ListRoleMappings(missing) = %+v", none)
		}
		mustOK(t, x.DeleteRoleMapping(ctx, m3.ID), "DeleteRoleMapping")
		wantKind(t, x.DeleteRoleMapping(ctx, m3.ID), registry.NotFound, "DeleteRoleMapping again")
		_, err = x.GetRoleMapping(ctx, m3.ID)
		wantKind(t, err, registry.NotFound, "GetRoleMapping deleted")
		// Deleting a provider deletes its mappings.
		mustOK(t, x.DeleteIdentityProvider(ctx, "corp"), "DeleteIdentityProvider")
		_, err = x.GetRoleMapping(ctx, m1.ID)
		wantKind(t, err, registry.NotFound, "GetRoleMapping of a deleted provider")
		all, err = x.ListRoleMappings(ctx, "")
		mustOK(t, err, "ListRoleMappings")
		if len(all) != 1 || all[0].ID != m2.ID {
			t.Errorf("after deleting corp: %+v, want only %d", all, m2.ID)
		}
	})

	t.Run("Identities", func(t *testing.T) {
		x := newIndex(t)
		mustOK(t, x.CreateUser(ctx, testUser("alice", 1)), "CreateUser")
		id := registry.Identity{Issuer: "https://idp.example.com", Subject: "248289761001", Provider: "corp", CreatedAt: t0, LastLoginAt: t0}
		_, err := x.GetIdentity(ctx, id.Issuer, id.Subject)
		wantKind(t, err, registry.NotFound, "GetIdentity before linking")
		// A taken name is a Conflict and links nothing.
		err = x.CreateIdentityUser(ctx, id, registry.User{Name: "alice", CreatedAt: t0})
		wantKind(t, err, registry.Conflict, "CreateIdentityUser with a taken name")
		_, err = x.GetIdentity(ctx, id.Issuer, id.Subject)
		wantKind(t, err, registry.NotFound, "GetIdentity after a conflict")
		mustOK(t, x.CreateIdentityUser(ctx, id, registry.User{Name: "alice-2", CreatedAt: t0}), "CreateIdentityUser")
		got, err := x.GetIdentity(ctx, id.Issuer, id.Subject)
		mustOK(t, err, "GetIdentity")
		if got.User != "alice-2" || got.Provider != "corp" || !got.CreatedAt.Equal(t0) {
			t.Errorf("GetIdentity = %+v", got)
		}
		u, err := x.GetUser(ctx, "alice-2")
		mustOK(t, err, "GetUser")
		if u.PasswordHash != "" || u.Admin {
			t.Errorf("linked user = %+v, want no password, no admin", u)
		}
		err = x.CreateIdentityUser(ctx, id, registry.User{Name: "alice-3", CreatedAt: t0})
		wantKind(t, err, registry.Conflict, "CreateIdentityUser of a linked identity")
		if _, err := x.GetUser(ctx, "alice-3"); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("a failed CreateIdentityUser left user alice-3: %v", err)
		}
		// Same subject at another issuer is another person.
		other := id
		other.Issuer = "https://other.example.com"
		mustOK(t, x.CreateIdentityUser(ctx, other, registry.User{Name: "alice-3", CreatedAt: t0}), "CreateIdentityUser other issuer")
		mustOK(t, x.TouchIdentity(ctx, id.Issuer, id.Subject, at(time.Hour)), "TouchIdentity")
		got, err = x.GetIdentity(ctx, id.Issuer, id.Subject)
		mustOK(t, err, "GetIdentity")
		if !got.LastLoginAt.Equal(at(time.Hour)) {
			t.Errorf("LastLoginAt = %v, want %v", got.LastLoginAt, at(time.Hour))
		}
		wantKind(t, x.TouchIdentity(ctx, "https://x", "y", t0), registry.NotFound, "TouchIdentity missing")
	})

	t.Run("ReconcileRoles", func(t *testing.T) {
		x := newIndex(t)
		for _, ns := range []string{"acme", "labs", "ops", "manual"} {
			mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: ns, CreatedAt: t0}), "CreateNamespace")
		}
		mustOK(t, x.CreateUser(ctx, registry.User{Name: "bob", CreatedAt: t0}), "CreateUser")
		mustOK(t, x.SetMembership(ctx, registry.Membership{User: "bob", Namespace: "manual", Role: registry.RoleReader, CreatedAt: t0}), "SetMembership")
		roles := func() map[string]registry.Role {
			ms, err := x.ListMemberships(ctx, "bob", "")
			mustOK(t, err, "ListMemberships")
			out := map[string]registry.Role{}
			for _, m := range ms {
				out[m.Namespace] = m.Role
			}
			return out
		}
		isAdmin := func() bool {
			u, err := x.GetUser(ctx, "bob")
			mustOK(t, err, "GetUser")
			return u.Admin
		}
		_, err := x.ReconcileRoles(ctx, "nobody", nil, false, t0)
		wantKind(t, err, registry.NotFound, "ReconcileRoles of a missing user")

		changes, err := x.ReconcileRoles(ctx, "bob", []registry.RoleGrant{
			{Namespace: "acme", Role: registry.RolePublisher}, {Namespace: "labs", Role: registry.RoleReader},
			{Namespace: "manual", Role: registry.RoleAdmin}, {Namespace: "gone", Role: registry.RoleAdmin},
		}, true, t0)
		mustOK(t, err, "ReconcileRoles")
		wantChanges := []registry.RoleChange{
			{Namespace: "*", Role: registry.RoleAdmin},
			{Namespace: "acme", Role: registry.RolePublisher},
			{Namespace: "labs", Role: registry.RoleReader},
		}
		if !reflect.DeepEqual(changes, wantChanges) {
			t.Errorf("first ReconcileRoles changes = %+v, want %+v", changes, wantChanges)
		}
		want := map[string]registry.Role{"acme": registry.RolePublisher, "labs": registry.RoleReader, "manual": registry.RoleReader}
		if got := roles(); !reflect.DeepEqual(got, want) || !isAdmin() {
			t.Errorf("after grant: %v admin %v, want %v admin true (an admin's membership of manual kept)", got, isAdmin(), want)
		}
		// The same grants again change nothing.
		changes, err = x.ReconcileRoles(ctx, "bob", []registry.RoleGrant{
			{Namespace: "acme", Role: registry.RolePublisher}, {Namespace: "labs", Role: registry.RoleReader}}, true, t0)
		mustOK(t, err, "ReconcileRoles again")
		if len(changes) != 0 {
			t.Errorf("repeated ReconcileRoles changed %+v", changes)
		}
		// An admin changes labs; then every grant is withdrawn.
		mustOK(t, x.SetMembership(ctx, registry.Membership{User: "bob", Namespace: "labs", Role: registry.RoleAdmin, CreatedAt: t0}), "SetMembership labs")
		changes, err = x.ReconcileRoles(ctx, "bob", nil, false, t0)
		mustOK(t, err, "ReconcileRoles withdrawn")
		wantChanges = []registry.RoleChange{{Namespace: "*", Removed: true}, {Namespace: "acme", Removed: true}}
		if !reflect.DeepEqual(changes, wantChanges) {
			t.Errorf("withdrawing changes = %+v, want %+v", changes, wantChanges)
		}
		want = map[string]registry.Role{"labs": registry.RoleAdmin, "manual": registry.RoleReader}
		if got := roles(); !reflect.DeepEqual(got, want) || isAdmin() {
			t.Errorf("after withdrawal: %v admin %v, want %v admin false", got, isAdmin(), want)
		}
		// An admin flag set by hand is never cleared by the mappings.
		mustOK(t, x.UpdateUser(ctx, registry.User{Name: "bob", Admin: true}), "UpdateUser")
		changes, err = x.ReconcileRoles(ctx, "bob", nil, false, t0)
		mustOK(t, err, "ReconcileRoles")
		if len(changes) != 0 || !isAdmin() {
			t.Errorf("a hand-set admin flag: changes %+v, admin %v; want none, true", changes, isAdmin())
		}
		// A role the mappings changed is changed back and still managed.
		_, err = x.ReconcileRoles(ctx, "bob", []registry.RoleGrant{{Namespace: "ops", Role: registry.RoleReader}}, false, t0)
		mustOK(t, err, "ReconcileRoles ops")
		changes, err = x.ReconcileRoles(ctx, "bob", []registry.RoleGrant{{Namespace: "ops", Role: registry.RoleAdmin}}, false, t0)
		mustOK(t, err, "ReconcileRoles ops admin")
		if !reflect.DeepEqual(changes, []registry.RoleChange{{Namespace: "ops", Role: registry.RoleAdmin}}) {
			t.Errorf("role upgrade changes = %+v", changes)
		}
		changes, err = x.ReconcileRoles(ctx, "bob", nil, false, t0)
		mustOK(t, err, "ReconcileRoles")
		if !reflect.DeepEqual(changes, []registry.RoleChange{{Namespace: "ops", Removed: true}}) {
			t.Errorf("removal after upgrade = %+v", changes)
		}
		_, err = x.ReconcileRoles(ctx, "bob", []registry.RoleGrant{{Namespace: "ops", Role: "owner"}}, false, t0)
		wantKind(t, err, registry.Invalid, "ReconcileRoles with an unknown role")
	})
}
