package storetest

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

func normUser(u registry.User) registry.User {
	u.CreatedAt = normTime(u.CreatedAt)
	return u
}

func normMembership(m registry.Membership) registry.Membership {
	m.CreatedAt = normTime(m.CreatedAt)
	return m
}

func normAuthCode(c registry.AuthCode) registry.AuthCode {
	c.CreatedAt = normTime(c.CreatedAt)
	c.ExpiresAt = normTime(c.ExpiresAt)
	c.UsedAt = normTime(c.UsedAt)
	if len(c.Scopes) == 0 {
		c.Scopes = nil
	}
	return c
}

func normAudit(e registry.AuditEvent) registry.AuditEvent {
	e.Time = normTime(e.Time)
	return e
}

// testUser returns a user whose fields derive from name.
func testUser(name string, n int) registry.User {
	return registry.User{
		Name:         name,
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$" + digestOf(name)[:43],
		CreatedAt:    at(time.Duration(n) * time.Minute).In(east),
	}
}

// accessIndex returns a new index under test, also as a store.Access.
func accessIndex(t *testing.T, newIndex func(*testing.T) store.Index) (store.Index, store.Access) {
	t.Helper()
	x := newIndex(t)
	return x, x
}

func testAccess(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("Visibility", func(t *testing.T) { testVisibility(t, newIndex) })
	t.Run("Users", func(t *testing.T) { testUsers(t, newIndex) })
	t.Run("Memberships", func(t *testing.T) { testMemberships(t, newIndex) })
	t.Run("PersonalTokens", func(t *testing.T) { testPersonalTokens(t, newIndex) })
	t.Run("AuthCodes", func(t *testing.T) { testAuthCodes(t, newIndex) })
	t.Run("DeviceCodes", func(t *testing.T) { testDeviceCodes(t, newIndex) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, newIndex) })
}

func testVisibility(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateKeepsVisibilityEmptyIsPrivate", func(t *testing.T) {
		x, _ := accessIndex(t, newIndex)
		ctx := t.Context()
		want := []registry.Namespace{
			{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: t0},
			{Name: "secret", Visibility: registry.VisibilityPrivate, CreatedAt: t0},
			{Name: "unset", CreatedAt: t0},
		}
		for _, ns := range want {
			mustOK(t, x.CreateNamespace(ctx, ns), "CreateNamespace "+ns.Name)
		}
		for _, ns := range want {
			got, err := x.GetNamespace(ctx, ns.Name)
			mustOK(t, err, "GetNamespace "+ns.Name)
			wantVis := ns.Visibility
			if wantVis == "" {
				wantVis = registry.VisibilityPrivate
			}
			if got.Visibility != wantVis {
				t.Errorf("GetNamespace(%s).Visibility = %q, want %q", ns.Name, got.Visibility, wantVis)
			}
		}
		list, err := x.ListNamespaces(ctx)
		mustOK(t, err, "ListNamespaces")
		for _, ns := range list {
			if ns.Visibility == "" {
				t.Errorf("ListNamespaces: %s has an empty visibility, want it stored as private", ns.Name)
			}
		}
		checkList(t, "ListNamespaces", list, want, normNamespace)
	})
	t.Run("CreateInvalidVisibility", func(t *testing.T) {
		x, _ := accessIndex(t, newIndex)
		err := x.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", Visibility: "internal", CreatedAt: t0})
		wantKind(t, err, registry.Invalid, "CreateNamespace with visibility internal")
		_, err = x.GetNamespace(t.Context(), "acme")
		wantKind(t, err, registry.NotFound, "GetNamespace after the refused create")
	})
	t.Run("Update", func(t *testing.T) {
		x, _ := accessIndex(t, newIndex)
		ctx := t.Context()
		mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: "acme", Description: "d", CreatedAt: t0}), "CreateNamespace")
		steps := []struct {
			set, want registry.Visibility
		}{
			{registry.VisibilityPublic, registry.VisibilityPublic},
			{"", registry.VisibilityPublic}, // empty keeps
			{registry.VisibilityPrivate, registry.VisibilityPrivate},
			{"", registry.VisibilityPrivate},
		}
		for i, s := range steps {
			desc := fmt.Sprintf("d%d", i)
			mustOK(t, x.UpdateNamespace(ctx, registry.Namespace{Name: "acme", Description: desc, Visibility: s.set}), "UpdateNamespace")
			got, err := x.GetNamespace(ctx, "acme")
			mustOK(t, err, "GetNamespace")
			if got.Visibility != s.want || got.Description != desc {
				t.Errorf("step %d: after UpdateNamespace(visibility %q): visibility %q description %q, want %q %q", i, s.set, got.Visibility, got.Description, s.want, desc)
			}
		}
		err := x.UpdateNamespace(ctx, registry.Namespace{Name: "acme", Visibility: "world"})
		wantKind(t, err, registry.Invalid, "UpdateNamespace with visibility world")
		got, err := x.GetNamespace(ctx, "acme")
		mustOK(t, err, "GetNamespace")
		if got.Visibility != registry.VisibilityPrivate || got.Description != "d3" {
			t.Errorf("namespace changed by a refused update: %+v", got)
		}
	})
}

func testUsers(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateGetList", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		ctx := t.Context()
		got, err := a.ListUsers(ctx)
		mustOK(t, err, "ListUsers of an empty index")
		if len(got) != 0 {
			t.Errorf("ListUsers of an empty index = %+v", got)
		}
		admin := testUser("root", 1)
		admin.Admin = true
		off := testUser("mallory", 2)
		off.Disabled = true
		nopw := testUser("bot.ci-1", 3)
		nopw.PasswordHash = ""
		want := []registry.User{nopw, off, admin}
		for _, u := range []registry.User{admin, off, nopw} {
			mustOK(t, a.CreateUser(ctx, u), "CreateUser "+u.Name)
		}
		for _, u := range want {
			got, err := a.GetUser(ctx, u.Name)
			mustOK(t, err, "GetUser "+u.Name)
			checkEqual(t, "GetUser "+u.Name, got, u, normUser)
		}
		list, err := a.ListUsers(ctx)
		mustOK(t, err, "ListUsers")
		checkList(t, "ListUsers", list, want, normUser)
	})
	t.Run("DuplicateConflicts", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		ctx := t.Context()
		first := testUser("alice", 1)
		mustOK(t, a.CreateUser(ctx, first), "CreateUser")
		second := testUser("alice", 2)
		second.Admin = true
		wantKind(t, a.CreateUser(ctx, second), registry.Conflict, "second CreateUser")
		got, err := a.GetUser(ctx, "alice")
		mustOK(t, err, "GetUser")
		checkEqual(t, "user after the refused create", got, first, normUser)
	})
	t.Run("GetMissing", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		_, err := a.GetUser(t.Context(), "nobody")
		wantKind(t, err, registry.NotFound, "GetUser of a missing user")
	})
	t.Run("Update", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		ctx := t.Context()
		u := testUser("alice", 1)
		mustOK(t, a.CreateUser(ctx, u), "CreateUser")
		changed := u
		changed.PasswordHash = "$argon2id$new"
		changed.Admin = true
		changed.Disabled = true
		changed.CreatedAt = at(time.Hour)
		mustOK(t, a.UpdateUser(ctx, changed), "UpdateUser")
		got, err := a.GetUser(ctx, "alice")
		mustOK(t, err, "GetUser")
		changed.CreatedAt = u.CreatedAt // not mutable
		checkEqual(t, "user after update", got, changed, normUser)

		wantKind(t, a.UpdateUser(ctx, testUser("nobody", 1)), registry.NotFound, "UpdateUser of a missing user")
		_, err = a.GetUser(ctx, "nobody")
		wantKind(t, err, registry.NotFound, "GetUser after updating a missing user")
	})
}

func testMemberships(t *testing.T, newIndex func(*testing.T) store.Index) {
	setup := func(t *testing.T) (store.Index, store.Access) {
		x, a := accessIndex(t, newIndex)
		createNamespaces(t, x, "acme", "other")
		for i, name := range []string{"alice", "bob"} {
			mustOK(t, a.CreateUser(t.Context(), testUser(name, i)), "CreateUser "+name)
		}
		return x, a
	}
	t.Run("SetChangeListDelete", func(t *testing.T) {
		_, a := setup(t)
		ctx := t.Context()
		ms := []registry.Membership{
			{User: "bob", Namespace: "acme", Role: registry.RoleAdmin, CreatedAt: at(3 * time.Minute)},
			{User: "alice", Namespace: "other", Role: registry.RoleReader, CreatedAt: at(2 * time.Minute).In(east)},
			{User: "alice", Namespace: "acme", Role: registry.RolePublisher, CreatedAt: at(time.Minute)},
		}
		for _, m := range ms {
			mustOK(t, a.SetMembership(ctx, m), "SetMembership "+m.User+"@"+m.Namespace)
		}
		all := []registry.Membership{ms[2], ms[0], ms[1]} // by namespace, then user
		filters := []struct {
			user, ns string
			want     []registry.Membership
		}{
			{"", "", all},
			{"alice", "", []registry.Membership{ms[2], ms[1]}},
			{"", "acme", []registry.Membership{ms[2], ms[0]}},
			{"alice", "other", []registry.Membership{ms[1]}},
			{"bob", "other", nil},
			{"nobody", "", nil},
			{"", "nosuch", nil},
		}
		for _, f := range filters {
			got, err := a.ListMemberships(ctx, f.user, f.ns)
			mustOK(t, err, "ListMemberships")
			checkList(t, fmt.Sprintf("ListMemberships(%q, %q)", f.user, f.ns), got, f.want, normMembership)
		}

		// Changing the role keeps the membership's creation time.
		mustOK(t, a.SetMembership(ctx, registry.Membership{User: "alice", Namespace: "acme", Role: registry.RoleReader, CreatedAt: at(time.Hour)}), "SetMembership (change)")
		got, err := a.ListMemberships(ctx, "alice", "acme")
		mustOK(t, err, "ListMemberships")
		changed := ms[2]
		changed.Role = registry.RoleReader
		checkList(t, "membership after a role change", got, []registry.Membership{changed}, normMembership)

		mustOK(t, a.DeleteMembership(ctx, "alice", "acme"), "DeleteMembership")
		wantKind(t, a.DeleteMembership(ctx, "alice", "acme"), registry.NotFound, "second DeleteMembership")
		got, err = a.ListMemberships(ctx, "alice", "")
		mustOK(t, err, "ListMemberships")
		checkList(t, "memberships of alice after delete", got, []registry.Membership{ms[1]}, normMembership)
	})
	t.Run("Refused", func(t *testing.T) {
		_, a := setup(t)
		ctx := t.Context()
		cases := map[string]struct {
			m    registry.Membership
			kind registry.Kind
		}{
			"missing user":      {registry.Membership{User: "nobody", Namespace: "acme", Role: registry.RoleReader, CreatedAt: t0}, registry.NotFound},
			"missing namespace": {registry.Membership{User: "alice", Namespace: "nosuch", Role: registry.RoleReader, CreatedAt: t0}, registry.NotFound},
			"unknown role":      {registry.Membership{User: "alice", Namespace: "acme", Role: "owner", CreatedAt: t0}, registry.Invalid},
			"empty role":        {registry.Membership{User: "alice", Namespace: "acme", CreatedAt: t0}, registry.Invalid},
		}
		for name, c := range cases {
			wantKind(t, a.SetMembership(ctx, c.m), c.kind, "SetMembership with "+name)
		}
		got, err := a.ListMemberships(ctx, "", "")
		mustOK(t, err, "ListMemberships")
		if len(got) != 0 {
			t.Errorf("refused SetMembership calls stored %+v", got)
		}
		wantKind(t, a.DeleteMembership(ctx, "alice", "acme"), registry.NotFound, "DeleteMembership of no membership")
	})
	t.Run("DeleteNamespaceDeletesMemberships", func(t *testing.T) {
		x, a := setup(t)
		ctx := t.Context()
		for _, ns := range []string{"acme", "other"} {
			mustOK(t, a.SetMembership(ctx, registry.Membership{User: "alice", Namespace: ns, Role: registry.RoleAdmin, CreatedAt: t0}), "SetMembership")
		}
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		got, err := a.ListMemberships(ctx, "alice", "")
		mustOK(t, err, "ListMemberships")
		checkList(t, "memberships after the namespace was deleted", got,
			[]registry.Membership{{User: "alice", Namespace: "other", Role: registry.RoleAdmin, CreatedAt: t0}}, normMembership)
		// A namespace of the same name starts without members.
		mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: t0}), "CreateNamespace again")
		got, err = a.ListMemberships(ctx, "", "acme")
		mustOK(t, err, "ListMemberships")
		if len(got) != 0 {
			t.Errorf("recreated namespace has members %+v", got)
		}
	})
}

func testPersonalTokens(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateListByUser", func(t *testing.T) {
		x, a := accessIndex(t, newIndex)
		ctx := t.Context()
		createNamespaces(t, x, "acme")
		for i, name := range []string{"alice", "bob"} {
			mustOK(t, a.CreateUser(ctx, testUser(name, i)), "CreateUser "+name)
		}
		tokens := []registry.Token{
			testToken("tok3", "", at(2*time.Second)),
			testToken("tok1", "acme", at(time.Second)),
			testToken("tok2", "", at(time.Second)),
			testToken("tok4", "", t0),
		}
		tokens[0].User, tokens[1].User, tokens[2].User = "alice", "alice", "alice"
		tokens[3].User = "bob"
		for _, tk := range tokens {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken "+tk.ID)
		}
		got, err := x.TokenByHash(ctx, tokens[1].Hash)
		mustOK(t, err, "TokenByHash")
		checkEqual(t, "personal token", got, tokens[1], normToken)

		list, err := a.ListUserTokens(ctx, "alice")
		mustOK(t, err, "ListUserTokens")
		checkList(t, "ListUserTokens(alice)", list, []registry.Token{tokens[1], tokens[2], tokens[0]}, normToken)
		list, err = a.ListUserTokens(ctx, "nobody")
		mustOK(t, err, "ListUserTokens of an unknown user")
		if len(list) != 0 {
			t.Errorf("ListUserTokens(nobody) = %+v", list)
		}
		// Namespace listings include personal tokens bound to it.
		list, err = x.ListTokens(ctx, "acme")
		mustOK(t, err, "ListTokens")
		checkList(t, "ListTokens(acme)", list, []registry.Token{tokens[1]}, normToken)
	})
	t.Run("MissingUser", func(t *testing.T) {
		x, a := accessIndex(t, newIndex)
		ctx := t.Context()
		tk := testToken("tok1", "", t0)
		tk.User = "ghost"
		wantKind(t, x.CreateToken(ctx, tk), registry.NotFound, "CreateToken for a missing user")
		_, err := x.TokenByHash(ctx, tk.Hash)
		wantKind(t, err, registry.NotFound, "TokenByHash after the refused create")
		list, err := a.ListUserTokens(ctx, "ghost")
		mustOK(t, err, "ListUserTokens")
		if len(list) != 0 {
			t.Errorf("refused token listed: %+v", list)
		}
	})
	t.Run("ExpireShortensOnly", func(t *testing.T) {
		x, a := accessIndex(t, newIndex)
		ctx := t.Context()
		never := testToken("never", "", t0)
		later := testToken("later", "", t0)
		later.ExpiresAt = at(48 * time.Hour)
		for _, tk := range []registry.Token{never, later} {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken "+tk.ID)
		}
		steps := []struct {
			tok      registry.Token
			set      time.Time
			want     time.Time
			scenario string
		}{
			{never, at(24 * time.Hour).In(east), at(24 * time.Hour), "a token without expiry gets one"},
			{never, at(36 * time.Hour), at(24 * time.Hour), "a later expiry does not extend it"},
			{never, at(time.Hour), at(time.Hour), "an earlier expiry shortens it"},
			{later, at(-time.Hour), at(-time.Hour), "an expiry in the past expires it"},
		}
		for _, s := range steps {
			mustOK(t, a.ExpireToken(ctx, s.tok.ID, s.set), "ExpireToken "+s.tok.ID)
			got, err := x.TokenByHash(ctx, s.tok.Hash)
			mustOK(t, err, "TokenByHash")
			if !got.ExpiresAt.Equal(s.want) {
				t.Errorf("%s: ExpiresAt = %s, want %s", s.scenario, got.ExpiresAt, s.want)
			}
		}
		wantKind(t, a.ExpireToken(ctx, "nosuch", t0), registry.NotFound, "ExpireToken of a missing token")
	})
}

func testAuthCode(hash string) registry.AuthCode {
	return registry.AuthCode{
		Hash:        digestOf(hash),
		ClientID:    "terraform-cli",
		RedirectURI: "http://localhost:10003/login",
		Challenge:   "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		User:        "alice",
		Scopes:      []registry.Scope{registry.ScopeRead},
		TokenID:     "tok_" + hash,
		CreatedAt:   t0.In(east),
		ExpiresAt:   at(2 * time.Minute),
	}
}

func testAuthCodes(t *testing.T, newIndex func(*testing.T) store.Index) {
	setup := func(t *testing.T) store.Access {
		_, a := accessIndex(t, newIndex)
		mustOK(t, a.CreateUser(t.Context(), testUser("alice", 1)), "CreateUser")
		return a
	}
	t.Run("UseOnce", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		c := testAuthCode("one")
		mustOK(t, a.CreateAuthCode(ctx, c), "CreateAuthCode")
		got, err := a.UseAuthCode(ctx, c.Hash, at(time.Minute))
		mustOK(t, err, "first UseAuthCode")
		checkEqual(t, "first UseAuthCode", got, c, normAuthCode)
		got, err = a.UseAuthCode(ctx, c.Hash, at(90*time.Second))
		mustOK(t, err, "second UseAuthCode")
		used := c
		used.UsedAt = at(time.Minute)
		checkEqual(t, "second UseAuthCode (keeps the first use time)", got, used, normAuthCode)
		_, err = a.UseAuthCode(ctx, digestOf("nosuch"), at(time.Minute))
		wantKind(t, err, registry.NotFound, "UseAuthCode of a missing code")
	})
	t.Run("Refused", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		c := testAuthCode("one")
		mustOK(t, a.CreateAuthCode(ctx, c), "CreateAuthCode")
		dup := testAuthCode("one")
		dup.TokenID = "tok_other"
		wantKind(t, a.CreateAuthCode(ctx, dup), registry.Conflict, "CreateAuthCode with a taken hash")
		ghost := testAuthCode("ghost")
		ghost.User = "ghost"
		wantKind(t, a.CreateAuthCode(ctx, ghost), registry.NotFound, "CreateAuthCode for a missing user")
		_, err := a.UseAuthCode(ctx, ghost.Hash, t0)
		wantKind(t, err, registry.NotFound, "UseAuthCode of the refused code")
		rooted := testAuthCode("rooted")
		rooted.Scopes = []registry.Scope{"root"}
		wantKind(t, a.CreateAuthCode(ctx, rooted), registry.Invalid, "CreateAuthCode with an unknown scope")
		_, err = a.UseAuthCode(ctx, rooted.Hash, t0)
		wantKind(t, err, registry.NotFound, "UseAuthCode of the code with an unknown scope")
		got, err := a.UseAuthCode(ctx, c.Hash, t0)
		mustOK(t, err, "UseAuthCode")
		checkEqual(t, "code after the refused duplicate", got, c, normAuthCode)
	})
	t.Run("ConcurrentUse", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		c := testAuthCode("race")
		mustOK(t, a.CreateAuthCode(ctx, c), "CreateAuthCode")
		var fresh, failed atomic.Int32
		runTogether(8, func(i int) {
			got, err := a.UseAuthCode(ctx, c.Hash, at(time.Duration(i+1)*time.Second))
			switch {
			case err != nil:
				failed.Add(1)
			case got.UsedAt.IsZero():
				fresh.Add(1)
			}
		})
		if fresh.Load() != 1 || failed.Load() != 0 {
			t.Errorf("8 concurrent UseAuthCode: %d saw an unused code and %d failed, want exactly 1 and 0", fresh.Load(), failed.Load())
		}
	})
	t.Run("DeleteExpired", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		old, current := testAuthCode("old"), testAuthCode("current")
		old.ExpiresAt = at(time.Minute)
		current.ExpiresAt = at(3 * time.Minute)
		for _, c := range []registry.AuthCode{old, current} {
			mustOK(t, a.CreateAuthCode(ctx, c), "CreateAuthCode")
		}
		n, err := a.DeleteAuthCodes(ctx, at(2*time.Minute))
		mustOK(t, err, "DeleteAuthCodes")
		if n != 1 {
			t.Errorf("DeleteAuthCodes removed %d codes, want 1", n)
		}
		_, err = a.UseAuthCode(ctx, old.Hash, at(2*time.Minute))
		wantKind(t, err, registry.NotFound, "UseAuthCode of a deleted code")
		_, err = a.UseAuthCode(ctx, current.Hash, at(2*time.Minute))
		mustOK(t, err, "UseAuthCode of a kept code")
	})
}

func testAudit(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("AppendAndFilter", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		ctx := t.Context()
		got, err := a.ListAudit(ctx, registry.AuditFilter{})
		mustOK(t, err, "ListAudit of an empty log")
		if len(got) != 0 {
			t.Errorf("ListAudit of an empty log = %+v", got)
		}
		events := []registry.AuditEvent{
			{Time: at(time.Second).In(east), Action: registry.AuditLoginFailure, Actor: "alice", SourceAddr: "192.0.2.1", Details: "wrong password"},
			{Time: at(2 * time.Second), Action: registry.AuditLoginSuccess, Actor: "user:alice", SourceAddr: "2001:db8::1"},
			{Time: at(3 * time.Second), Action: registry.AuditTokenCreate, Actor: "user:alice", Namespace: "acme", Target: "tok_1", Details: "ünïcode"},
			{Time: at(4 * time.Second), Action: registry.AuditProviderPublish, Actor: "token:tok_1", Namespace: "acme", Target: "acme/widget 1.0.0"},
			{Time: at(5 * time.Second), Action: registry.AuditTokenRevoke, Actor: "token:tok_admin", Namespace: "other", Target: "tok_2"},
		}
		var last int64
		for i := range events {
			id, err := a.AppendAudit(ctx, events[i])
			mustOK(t, err, "AppendAudit")
			if id <= last {
				t.Fatalf("AppendAudit returned ID %d after %d, want increasing IDs", id, last)
			}
			events[i].ID, last = id, id
		}
		rev := func(idx ...int) []registry.AuditEvent {
			out := make([]registry.AuditEvent, len(idx))
			for i, j := range idx {
				out[i] = events[j]
			}
			return out
		}
		cases := []struct {
			name string
			f    registry.AuditFilter
			want []registry.AuditEvent
		}{
			{"all", registry.AuditFilter{}, rev(4, 3, 2, 1, 0)},
			{"action", registry.AuditFilter{Action: registry.AuditTokenCreate}, rev(2)},
			{"actor", registry.AuditFilter{Actor: "user:alice"}, rev(2, 1)},
			{"namespace", registry.AuditFilter{Namespace: "acme"}, rev(3, 2)},
			{"since", registry.AuditFilter{Since: at(3 * time.Second)}, rev(4, 3, 2)},
			{"until", registry.AuditFilter{Until: at(3 * time.Second)}, rev(1, 0)},
			{"since and until", registry.AuditFilter{Since: at(2 * time.Second), Until: at(4 * time.Second).In(east)}, rev(2, 1)},
			{"limit", registry.AuditFilter{Limit: 2}, rev(4, 3)},
			{"before ID", registry.AuditFilter{BeforeID: events[3].ID, Limit: 2}, rev(2, 1)},
			{"combined", registry.AuditFilter{Actor: "user:alice", Namespace: "acme"}, rev(2)},
			{"no match", registry.AuditFilter{Namespace: "nosuch"}, nil},
		}
		for _, c := range cases {
			got, err := a.ListAudit(ctx, c.f)
			mustOK(t, err, "ListAudit "+c.name)
			checkList(t, "ListAudit "+c.name, got, c.want, normAudit)
		}
	})
	t.Run("DefaultLimit", func(t *testing.T) {
		_, a := accessIndex(t, newIndex)
		ctx := t.Context()
		for i := range 105 {
			_, err := a.AppendAudit(ctx, registry.AuditEvent{Time: at(time.Duration(i) * time.Second), Action: "test", Actor: "anonymous"})
			mustOK(t, err, "AppendAudit")
		}
		got, err := a.ListAudit(ctx, registry.AuditFilter{})
		mustOK(t, err, "ListAudit")
		if len(got) != 100 {
			t.Errorf("ListAudit without a limit returned %d events, want 100", len(got))
		}
		if len(got) > 0 && !got[0].Time.Equal(at(104*time.Second)) {
			t.Errorf("newest event at %s, want %s", got[0].Time, at(104*time.Second))
		}
	})
}

// CheckMigratedTokenBindings checks an index just migrated from schema
// version 4, in which tokens were bound through tokens.namespace alone:
// token tok-acme (hash h1) bound to acme, tok-global (h2) global, and
// tok-other (h3) bound to other, written through the old column after the
// migration as a replica of the previous release writes it. Each keeps its
// binding (never global), is listed under its namespace and goes with it.
// The namespaces acme and other are deleted on the way.
func CheckMigratedTokenBindings(t *testing.T, x store.Index) {
	t.Helper()
	ctx := t.Context()
	for hash, want := range map[string][]string{"h1": {"acme"}, "h2": nil, "h3": {"other"}} {
		tok, err := x.TokenByHash(ctx, hash)
		if err != nil || !slices.Equal(tok.Namespaces, want) {
			t.Errorf("token %s: namespaces %q, %v; want %q", tok.ID, tok.Namespaces, err, want)
		}
	}
	for _, ns := range []string{"acme", "other"} {
		toks, err := x.ListTokens(ctx, ns)
		if err != nil || len(toks) != 1 || toks[0].Namespaces[0] != ns {
			t.Errorf("ListTokens(%s) = %+v, %v; want its one token", ns, toks, err)
		}
		if err := x.DeleteNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := x.CountTokens(ctx); err != nil || n != 1 {
		t.Errorf("CountTokens after deleting both namespaces = %d, %v; want 1 (the global token)", n, err)
	}
	if _, err := x.TokenByHash(ctx, "h2"); err != nil {
		t.Errorf("the global token: %v", err)
	}
	if _, err := x.TokenByHash(ctx, "h1"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the token of the deleted namespace: %v, want NotFound", err)
	}
}

// testDeviceCode returns a pending device code named name, created at t0
// and expiring 10 minutes later.
func testDeviceCode(name string) registry.DeviceCode {
	return registry.DeviceCode{DeviceHash: digestOf("device " + name), UserHash: digestOf("user " + name), ClientID: "trove-cli",
		CreatedAt: t0, ExpiresAt: at(10 * time.Minute)}
}

func normDeviceCode(d registry.DeviceCode) registry.DeviceCode {
	for _, t := range []*time.Time{&d.CreatedAt, &d.ExpiresAt, &d.LastPollAt, &d.DecidedAt, &d.UsedAt} {
		*t = normTime(*t)
	}
	if len(d.Scopes) == 0 {
		d.Scopes = nil
	}
	return d
}

func testDeviceCodes(t *testing.T, newIndex func(*testing.T) store.Index) {
	setup := func(t *testing.T) store.Access {
		_, a := accessIndex(t, newIndex)
		mustOK(t, a.CreateUser(t.Context(), testUser("alice", 1)), "CreateUser")
		return a
	}
	approve := func(when time.Duration) registry.DeviceDecision {
		return registry.DeviceDecision{Decision: registry.DeviceApproved, User: "alice", Scopes: []registry.Scope{registry.ScopeRead},
			TokenID: "tok_0123456789abcdef", DecidedAt: at(when)}
	}
	t.Run("Lifecycle", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		d := testDeviceCode("one")
		mustOK(t, a.CreateDeviceCode(ctx, d), "CreateDeviceCode")
		got, err := a.PollDeviceCode(ctx, d.DeviceHash, at(time.Minute))
		mustOK(t, err, "PollDeviceCode while pending")
		checkEqual(t, "PollDeviceCode while pending", got, d, normDeviceCode)
		got, err = a.DecideDeviceCode(ctx, d.UserHash, approve(2*time.Minute))
		mustOK(t, err, "DecideDeviceCode")
		d.LastPollAt = at(time.Minute)
		checkEqual(t, "DecideDeviceCode (the code before)", got, d, normDeviceCode)
		again, err := a.DecideDeviceCode(ctx, d.UserHash, registry.DeviceDecision{Decision: registry.DeviceDenied, User: "alice", DecidedAt: at(3 * time.Minute)})
		mustOK(t, err, "second DecideDeviceCode")
		if again.Decision != registry.DeviceApproved || again.User != "alice" || again.TokenID != "tok_0123456789abcdef" ||
			len(again.Scopes) != 1 || again.Scopes[0] != registry.ScopeRead || !again.DecidedAt.Equal(at(2*time.Minute)) {
			t.Errorf("second DecideDeviceCode returned %+v, want the first decision, unchanged", again)
		}
		got, err = a.PollDeviceCode(ctx, d.DeviceHash, at(4*time.Minute))
		mustOK(t, err, "PollDeviceCode once approved")
		if got.Decision != registry.DeviceApproved || !got.UsedAt.IsZero() || !got.LastPollAt.Equal(at(time.Minute)) {
			t.Errorf("first poll once approved: %+v, want approved, unused, last poll 1m", got)
		}
		got, err = a.PollDeviceCode(ctx, d.DeviceHash, at(5*time.Minute))
		mustOK(t, err, "PollDeviceCode once used")
		if !got.UsedAt.Equal(at(4*time.Minute)) || !got.LastPollAt.Equal(at(4*time.Minute)) {
			t.Errorf("poll after the use: %+v, want used and last polled at 4m", got)
		}
		_, err = a.PollDeviceCode(ctx, digestOf("nosuch"), t0)
		wantKind(t, err, registry.NotFound, "PollDeviceCode of a missing code")
		_, err = a.DecideDeviceCode(ctx, digestOf("nosuch"), approve(time.Minute))
		wantKind(t, err, registry.NotFound, "DecideDeviceCode of a missing code")
	})
	t.Run("Refused", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		d := testDeviceCode("one")
		mustOK(t, a.CreateDeviceCode(ctx, d), "CreateDeviceCode")
		sameUser := testDeviceCode("two")
		sameUser.UserHash = d.UserHash
		wantKind(t, a.CreateDeviceCode(ctx, sameUser), registry.Conflict, "CreateDeviceCode with a taken user code")
		sameDevice := testDeviceCode("three")
		sameDevice.DeviceHash = d.DeviceHash
		wantKind(t, a.CreateDeviceCode(ctx, sameDevice), registry.Conflict, "CreateDeviceCode with a taken device code")
		ghost := approve(time.Minute)
		ghost.User = "ghost"
		_, err := a.DecideDeviceCode(ctx, d.UserHash, ghost)
		wantKind(t, err, registry.NotFound, "DecideDeviceCode for a missing user")
		late, err := a.DecideDeviceCode(ctx, d.UserHash, approve(10*time.Minute))
		mustOK(t, err, "DecideDeviceCode of an expired code")
		if late.Decision != "" {
			t.Errorf("an expired code was decided before: %+v", late)
		}
		got, err := a.PollDeviceCode(ctx, d.DeviceHash, at(11*time.Minute))
		mustOK(t, err, "PollDeviceCode")
		if got.Decision != "" || !got.UsedAt.IsZero() {
			t.Errorf("after refused decisions the code is %+v, want pending", got)
		}
	})
	t.Run("ConcurrentPolls", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		d := testDeviceCode("race")
		mustOK(t, a.CreateDeviceCode(ctx, d), "CreateDeviceCode")
		_, err := a.DecideDeviceCode(ctx, d.UserHash, approve(time.Minute))
		mustOK(t, err, "DecideDeviceCode")
		var fresh, failed atomic.Int32
		runTogether(8, func(i int) {
			got, err := a.PollDeviceCode(ctx, d.DeviceHash, at(time.Duration(i+2)*time.Second))
			switch {
			case err != nil:
				failed.Add(1)
			case got.Decision == registry.DeviceApproved && got.UsedAt.IsZero():
				fresh.Add(1)
			}
		})
		if fresh.Load() != 1 || failed.Load() != 0 {
			t.Errorf("8 concurrent polls of an approved code: %d saw it unused and %d failed, want exactly 1 and 0", fresh.Load(), failed.Load())
		}
	})
	t.Run("DeleteExpired", func(t *testing.T) {
		a := setup(t)
		ctx := t.Context()
		old, current := testDeviceCode("old"), testDeviceCode("current")
		old.ExpiresAt = at(time.Minute)
		current.ExpiresAt = at(3 * time.Minute)
		for _, d := range []registry.DeviceCode{old, current} {
			mustOK(t, a.CreateDeviceCode(ctx, d), "CreateDeviceCode")
		}
		n, err := a.DeleteDeviceCodes(ctx, at(2*time.Minute))
		mustOK(t, err, "DeleteDeviceCodes")
		if n != 1 {
			t.Errorf("DeleteDeviceCodes removed %d codes, want 1", n)
		}
		_, err = a.PollDeviceCode(ctx, old.DeviceHash, at(2*time.Minute))
		wantKind(t, err, registry.NotFound, "PollDeviceCode of a deleted code")
		_, err = a.PollDeviceCode(ctx, current.DeviceHash, at(2*time.Minute))
		mustOK(t, err, "PollDeviceCode of a kept code")
	})
}
