package operations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestRetentionRulesRefused: only a namespace's admins set and remove
// its retention rule (the collector deletes what it expires); rules that
// keep nothing or do not parse are refused; nothing is stored.
func TestRetentionRulesRefused(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, pat, bob, eve, root := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve"), e.user(t, "root")
	publisher := e.service(t, registry.ScopePublish, "acme")
	otherAdmin := e.service(t, registry.ScopeAdmin, "open")
	_, err := e.ops.SetRetentionRule(ctx, alice, "acme", registry.RetentionRule{KeepLast: 5})
	adminOK(t, err)
	good := registry.RetentionRule{KeepLast: 3, Pin: []string{"~> 1.0"}}
	for _, tc := range []struct {
		name              string
		actor             operations.Actor
		ns                string
		rule              registry.RetentionRule
		want              registry.Kind
		alsoDeleteRefused bool
	}{
		{"by a publisher", pat, "acme", good, registry.Forbidden, true},
		{"by a reader", bob, "acme", good, registry.Forbidden, true},
		{"by a publish token", publisher, "acme", good, registry.Forbidden, true},
		{"by an outsider", eve, "acme", good, registry.NotFound, true},
		{"by an admin of another namespace", otherAdmin, "acme", good, registry.NotFound, true},
		{"absent namespace", root, "nope", good, registry.NotFound, true},
		{"namespace path", root, "../acme", good, registry.Invalid, true},
		{"namespace with NUL", root, "acme\x00", good, registry.Invalid, true},
		{"keeps nothing", alice, "acme", registry.RetentionRule{Pin: []string{"1.0.0"}}, registry.Invalid, false},
		{"negative count", alice, "acme", registry.RetentionRule{KeepLast: -1}, registry.Invalid, false},
		{"huge count", alice, "acme", registry.RetentionRule{KeepLast: 1 << 40}, registry.Invalid, false},
		{"negative age", alice, "acme", registry.RetentionRule{KeepWithin: -time.Hour}, registry.Invalid, false},
		{"age of a second", alice, "acme", registry.RetentionRule{KeepWithin: time.Second}, registry.Invalid, false},
		{"pin that does not parse", alice, "acme", registry.RetentionRule{KeepLast: 1, Pin: []string{"~> banana"}}, registry.Invalid, false},
		{"pin with a newline", alice, "acme", registry.RetentionRule{KeepLast: 1, Pin: []string{"1.0.0\n2.0.0"}}, registry.Invalid, false},
		{"empty pin", alice, "acme", registry.RetentionRule{KeepLast: 1, Pin: []string{""}}, registry.Invalid, false},
		{"pin too long", alice, "acme", registry.RetentionRule{KeepLast: 1, Pin: []string{strings.Repeat("1", 10_000)}}, registry.Invalid, false},
		{"too many pins", alice, "acme", registry.RetentionRule{KeepLast: 1, Pin: strings.Split(strings.Repeat("1.0.0,", 1000), ",")[:1000]}, registry.Invalid, false},
	} {
		t.Run("set/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.SetRetentionRule(ctx, tc.actor, tc.ns, tc.rule)
				return err
			})
		})
		if tc.alsoDeleteRefused {
			t.Run("delete/"+tc.name, func(t *testing.T) {
				e.refusedAdmin(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteRetentionRule(ctx, tc.actor, tc.ns) })
			})
		}
	}
	t.Run("delete/no rule", func(t *testing.T) {
		e.refusedAdmin(t, registry.NotFound, func(ctx context.Context) error { return e.ops.DeleteRetentionRule(ctx, root, "open") })
	})
	if _, err := e.ops.RetentionRule(ctx, eve, "acme"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("an outsider reads the rule: %v; want NotFound", err)
	}
	if r, err := e.ops.RetentionRule(ctx, bob, "acme"); err != nil || r.KeepLast != 5 {
		t.Errorf("a reader reads the rule: %v %+v", err, r)
	}
}

// TestRetentionRules: an admin sets, replaces and removes the rule; the
// namespace given stands, not the rule's; each change is audited.
func TestRetentionRules(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	r, err := e.ops.SetRetentionRule(ctx, alice, "ACME", registry.RetentionRule{Namespace: "other", KeepLast: 3, KeepWithin: 90 * 24 * time.Hour, Pin: []string{"~> 1.0"}})
	if err != nil || r.Namespace != "acme" || r.UpdatedBy != "user:alice" || !r.UpdatedAt.Equal(e.now) {
		t.Fatalf("set: %v %+v", err, r)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditRetentionPut || a.Namespace != "acme" || a.Target != "acme" ||
		a.Details != "keep_last 3 keep_within 90d pin [~> 1.0]" || a.SourceAddr != "192.0.2.7" {
		t.Errorf("set audited as %+v", a)
	}
	if _, err := e.idx.GetRetentionRule(ctx, "other"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the rule's own namespace was used: %v", err)
	}
	got, err := e.ops.RetentionRule(ctx, alice, "acme")
	if err != nil || got.KeepLast != 3 || !got.UpdatedAt.Equal(r.UpdatedAt) {
		t.Errorf("read back: %v %+v, want %+v", err, got, r)
	}
	if err := e.ops.DeleteRetentionRule(ctx, alice, "acme"); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditRetentionDelete || a.Target != "acme" {
		t.Errorf("delete audited as %+v", a)
	}
}
