package operations_test

import (
	"context"
	"strings"
	"testing"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestMembersRefused: only a namespace's admins set and remove its
// members; hostile names and roles are refused; nothing is stored.
func TestMembersRefused(t *testing.T) {
	e := newEnv(t)
	alice, pat, bob, eve := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve")
	publisher := e.service(t, registry.ScopePublish, "acme")
	otherAdmin := e.service(t, registry.ScopeAdmin, "open")
	for _, tc := range []struct {
		name              string
		actor             operations.Actor
		ns, user, role    string
		want              registry.Kind
		alsoRemoveRefused bool
	}{
		{"by a publisher", pat, "acme", "eve", "admin", registry.Forbidden, true},
		{"by a reader", bob, "acme", "bob", "admin", registry.Forbidden, true},
		{"by a publish token", publisher, "acme", "eve", "reader", registry.Forbidden, true},
		{"by an admin of another namespace", otherAdmin, "acme", "eve", "reader", registry.NotFound, true},
		{"by an outsider of a private namespace", eve, "acme", "eve", "admin", registry.NotFound, true},
		{"absent namespace", alice, "nope", "eve", "reader", registry.NotFound, true},
		{"namespace path", alice, "../acme", "eve", "reader", registry.Invalid, true},
		{"namespace with NUL", alice, "acme\x00", "eve", "reader", registry.Invalid, true},
		{"user path", alice, "acme", "../root", "reader", registry.Invalid, true},
		{"user with newline", alice, "acme", "eve\nroot", "reader", registry.Invalid, true},
		{"user too long", alice, "acme", strings.Repeat("e", 10_000), "reader", registry.Invalid, true},
		{"unknown role", alice, "acme", "eve", "owner", registry.Invalid, false},
		{"role with spaces", alice, "acme", "eve", " admin ", registry.Invalid, false},
		{"empty role", alice, "acme", "eve", "", registry.Invalid, false},
	} {
		t.Run("set/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.SetMember(ctx, tc.actor, tc.ns, tc.user, tc.role)
				return err
			})
		})
		if tc.alsoRemoveRefused {
			t.Run("remove/"+tc.name, func(t *testing.T) {
				e.refused(t, tc.want, func(ctx context.Context) error { return e.ops.RemoveMember(ctx, tc.actor, tc.ns, tc.user) })
			})
		}
	}
	if _, err := e.ops.Members(t.Context(), bob, "acme"); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a reader lists the members: %v; want Forbidden", err)
	}
}

// TestMembers: an admin sets and removes members; the rights change at
// once and each change is audited.
func TestMembers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	m, err := e.ops.SetMember(ctx, alice, "acme", "EVE", "publisher")
	if err != nil || m.User != "eve" || m.Role != registry.RolePublisher {
		t.Fatalf("set: %v %+v", err, m)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMembershipSet || a.Namespace != "acme" || a.Target != "eve" ||
		a.Details != "role publisher" || a.Actor != "user:alice" || a.SourceAddr != "192.0.2.7" {
		t.Errorf("audited as %+v", a)
	}
	// eve's token, read before, now may publish: the rights are read
	// again (the authenticator's cache was dropped).
	r := e.user(t, "eve")
	if !r.Principal.Allows(registry.ScopePublish, "acme", e.now) {
		t.Error("eve may not publish after she became a publisher")
	}
	if err := e.ops.RemoveMember(ctx, alice, "acme", "eve"); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditMembershipDelete || a.Target != "eve" {
		t.Errorf("removal audited as %+v", a)
	}
	ms, err := e.ops.Members(ctx, alice, "acme")
	if err != nil || len(ms) != 3 {
		t.Errorf("members after the removal: %v %+v", err, ms)
	}
}
