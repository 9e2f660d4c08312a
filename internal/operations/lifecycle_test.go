package operations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestLifecycleRefused: deprecating needs publish rights, revoking admin
// rights; hostile names, versions, reasons and links are refused;
// nothing is stored and no cache is dropped.
func TestLifecycleRefused(t *testing.T) {
	e := newEnv(t)
	alice, pat, bob, eve := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve")
	widget := operations.VersionRef{Namespace: "acme", Name: "widget", Version: "1.0.0"}
	network := operations.VersionRef{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0"}
	ok := operations.Why{Reason: "use 2.x"}
	with := func(v operations.VersionRef, f func(*operations.VersionRef)) operations.VersionRef { f(&v); return v }
	for _, tc := range []struct {
		name   string
		actor  operations.Actor
		change operations.LifecycleChange
		ref    operations.VersionRef
		why    operations.Why
		want   registry.Kind
	}{
		{"reader deprecates", bob, operations.Deprecate, widget, ok, registry.Forbidden},
		{"publisher revokes", pat, operations.Revoke, widget, ok, registry.Forbidden},
		{"publisher restores", pat, operations.Restore, widget, ok, registry.Forbidden},
		{"outsider deprecates", eve, operations.Deprecate, widget, ok, registry.NotFound},
		{"empty reason", alice, operations.Deprecate, widget, operations.Why{}, registry.Invalid},
		{"reason with newline", alice, operations.Revoke, widget, operations.Why{Reason: "bad\nforged: entry"}, registry.Invalid},
		{"reason with escape", alice, operations.Deprecate, widget, operations.Why{Reason: "\x1b[2Jgone"}, registry.Invalid},
		{"reason too long", alice, operations.Deprecate, widget, operations.Why{Reason: strings.Repeat("r", 5000)}, registry.Invalid},
		{"script link", alice, operations.Deprecate, widget, operations.Why{Reason: "x", Link: "javascript:alert(1)"}, registry.Invalid},
		{"http link", alice, operations.Deprecate, widget, operations.Why{Reason: "x", Link: "http://example.com/"}, registry.Invalid},
		{"link with credentials", alice, operations.Deprecate, widget, operations.Why{Reason: "x", Link: "https://u:p@example.com/"}, registry.Invalid},
		{"version with shell", alice, operations.Deprecate, with(widget, func(v *operations.VersionRef) { v.Version = "1.0.0;rm -rf" }), ok, registry.Invalid},
		{"type path", alice, operations.Deprecate, with(widget, func(v *operations.VersionRef) { v.Name = "../widget" }), ok, registry.Invalid},
		{"namespace path", alice, operations.Deprecate, with(widget, func(v *operations.VersionRef) { v.Namespace = "acme/../other" }), ok, registry.Invalid},
		{"absent version", alice, operations.Deprecate, with(widget, func(v *operations.VersionRef) { v.Version = "9.9.9" }), ok, registry.NotFound},
		{"unknown change", alice, operations.LifecycleChange(42), widget, ok, registry.Invalid},
	} {
		t.Run("provider/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				return e.ops.ProviderLifecycle(ctx, tc.actor, tc.change, tc.ref, tc.why)
			})
		})
		ref := network
		if tc.ref != widget {
			ref = with(network, func(v *operations.VersionRef) {
				if tc.ref.Namespace != widget.Namespace {
					v.Namespace = tc.ref.Namespace
				}
				if tc.ref.Name != widget.Name {
					v.Name = tc.ref.Name
				}
				v.Version = tc.ref.Version
			})
		}
		t.Run("module/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error { return e.ops.ModuleLifecycle(ctx, tc.actor, tc.change, ref, tc.why) })
		})
	}
	t.Run("module/system path", func(t *testing.T) {
		e.refused(t, registry.Invalid, func(ctx context.Context) error {
			return e.ops.ModuleLifecycle(ctx, alice, operations.Deprecate, with(network, func(v *operations.VersionRef) { v.System = "aws/../x" }), ok)
		})
	})
}

// TestLifecycle: a publisher deprecates, an admin revokes and restores;
// each change is stored with its audit entry, and this process's caches
// of the version are dropped.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, pat := e.user(t, "alice"), e.user(t, "pat")
	widget := operations.VersionRef{Namespace: "acme", Name: "widget", Version: "1.0.0"}
	if err := e.ops.ProviderLifecycle(ctx, pat, operations.Deprecate, widget, operations.Why{Reason: "use 2.x", Link: "https://example.com/up"}); err != nil {
		t.Fatal(err)
	}
	v, err := e.idx.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
	if err != nil || v.Deprecation == nil || v.Deprecation.Reason != "use 2.x" || v.Deprecation.By != "user:pat" {
		t.Fatalf("deprecation %v %+v", err, v.Deprecation)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditProviderDeprecate || a.Target != "acme/widget 1.0.0" ||
		a.Details != "reason: use 2.x link: https://example.com/up" {
		t.Errorf("audited as %+v", a)
	}
	if got := e.deliveries(t); len(got) != 1 || got[0] != registry.EventProviderDeprecated {
		t.Errorf("webhook deliveries %q; want one %s", got, registry.EventProviderDeprecated)
	}
	e.now = e.now.Add(time.Minute)
	network := operations.VersionRef{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0"}
	if err := e.ops.ModuleLifecycle(ctx, alice, operations.Revoke, network, operations.Why{Reason: "leaks"}); err != nil {
		t.Fatal(err)
	}
	m, err := e.idx.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0")
	if err != nil || m.Revocation == nil || m.Revocation.Reason != "leaks" {
		t.Fatalf("revocation %v %+v", err, m.Revocation)
	}
	if err := e.ops.ModuleLifecycle(ctx, alice, operations.Restore, network, operations.Why{}); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditModuleRestore || a.Target != "acme/net/aws 1.0.0" {
		t.Errorf("audited as %+v", a)
	}
	if got := e.deliveries(t); len(got) != 2 {
		t.Errorf("webhook deliveries %q; want the revocation and the restoration", got)
	}
	want := []string{"provider acme/widget", "module acme/net/aws", "module acme/net/aws"}
	if strings.Join(e.changed, ",") != strings.Join(want, ",") {
		t.Errorf("caches dropped for %q; want %q", e.changed, want)
	}
}
