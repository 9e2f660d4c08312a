package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testMirrorHolds checks store.MirrorHolds: first sights that never move,
// and approvals and denials with their effects.
func testMirrorHolds(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("FirstSeenNeverMoves", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		got, err := x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", []string{"1.0.0", "1.1.0"}, at(time.Hour))
		mustOK(t, err, "SeeMirroredVersions")
		if len(got) != 2 || !got["1.0.0"].Equal(at(time.Hour)) || !got["1.1.0"].Equal(at(time.Hour)) {
			t.Fatalf("first sights %v, want both at %s", got, at(time.Hour))
		}
		got, err = x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", []string{"1.1.0", "1.2.0", "1.2.0"}, at(2*time.Hour))
		mustOK(t, err, "SeeMirroredVersions again")
		if len(got) != 2 || !got["1.1.0"].Equal(at(time.Hour)) || !got["1.2.0"].Equal(at(2*time.Hour)) {
			t.Errorf("first sights %v: 1.1.0 must keep its first sight, 1.2.0 get the new one", got)
		}
		// Other providers and hosts are apart.
		got, err = x.SeeMirroredVersions(ctx, opentofuRegistry, "hashicorp", "aws", []string{"1.0.0"}, at(3*time.Hour))
		mustOK(t, err, "SeeMirroredVersions of another host")
		if !got["1.0.0"].Equal(at(3 * time.Hour)) {
			t.Errorf("another host's first sight %v, want %s", got, at(3*time.Hour))
		}
		got, err = x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", nil, at(4*time.Hour))
		mustOK(t, err, "SeeMirroredVersions of nothing")
		if len(got) != 0 {
			t.Errorf("no versions gave %v", got)
		}
		_, err = x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", make([]string, 10_001), at(time.Hour))
		wantKind(t, err, registry.Invalid, "SeeMirroredVersions of 10,001 versions")
	})
	t.Run("FirstSeenMany", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		var vs []string
		for i := range 1000 {
			vs = append(vs, fmt.Sprintf("%d.%d.0", i/10, i%10))
		}
		got, err := x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", vs, at(time.Hour))
		mustOK(t, err, "SeeMirroredVersions of 1000 versions")
		if len(got) != len(vs) {
			t.Errorf("%d first sights, want %d", len(got), len(vs))
		}
	})
	t.Run("FirstSeenConcurrent", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		var wg sync.WaitGroup
		results := make([]map[string]time.Time, 4)
		errs := make([]error, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = x.SeeMirroredVersions(ctx, terraformRegistry, "hashicorp", "aws", []string{"2.0.0"}, at(time.Duration(i+1)*time.Minute))
			}()
		}
		wg.Wait()
		for i := range results {
			mustOK(t, errs[i], "concurrent SeeMirroredVersions")
			if !results[i]["2.0.0"].Equal(results[0]["2.0.0"]) {
				t.Errorf("concurrent callers got different first sights: %v and %v", results[0], results[i])
			}
		}
	})
	t.Run("Decisions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		deny := registry.MirrorDecision{Host: terraformRegistry, Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny,
			Versions: ">= 5.81.0, < 5.81.3", Reason: "compromised", CreatedBy: "user:sec", CreatedAt: at(time.Hour)}
		approve := registry.MirrorDecision{Host: terraformRegistry, Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorApprove,
			Versions: "5.80.1", CreatedBy: "user:ops", CreatedAt: at(2 * time.Hour)}
		other := registry.MirrorDecision{Host: terraformRegistry, Namespace: "hashicorp", Type: "google", Kind: registry.MirrorDeny,
			Versions: "6.0.0", CreatedBy: "user:sec", CreatedAt: at(3 * time.Hour)}
		for _, d := range []registry.MirrorDecision{deny, approve, other} {
			created, err := x.PutMirrorDecision(ctx, d)
			mustOK(t, err, "PutMirrorDecision")
			if !created {
				t.Errorf("PutMirrorDecision of a new decision says it was not new")
			}
		}
		list, err := x.ListMirrorDecisions(ctx, terraformRegistry, "hashicorp", "aws")
		mustOK(t, err, "ListMirrorDecisions")
		if want := []registry.MirrorDecision{approve, deny}; !slices.EqualFunc(list, want, sameDecision) {
			t.Errorf("ListMirrorDecisions = %+v, want %+v", list, want)
		}
		all, err := x.ListMirrorDecisions(ctx, terraformRegistry, "", "")
		mustOK(t, err, "ListMirrorDecisions of a host")
		if want := []registry.MirrorDecision{approve, deny, other}; !slices.EqualFunc(all, want, sameDecision) {
			t.Errorf("ListMirrorDecisions of the host = %+v, want %+v", all, want)
		}
		none, err := x.ListMirrorDecisions(ctx, opentofuRegistry, "", "")
		mustOK(t, err, "ListMirrorDecisions of another host")
		if len(none) != 0 {
			t.Errorf("another host has decisions %+v", none)
		}
		// A repeat replaces reason, author and time.
		deny2 := deny
		deny2.Reason, deny2.CreatedBy, deny2.CreatedAt = "CVE-2026-0001", "user:lead", at(4*time.Hour)
		created, err := x.PutMirrorDecision(ctx, deny2)
		mustOK(t, err, "PutMirrorDecision again")
		if created {
			t.Errorf("PutMirrorDecision of a stored decision says it was new")
		}
		list, _ = x.ListMirrorDecisions(ctx, terraformRegistry, "hashicorp", "aws")
		if want := []registry.MirrorDecision{approve, deny2}; !slices.EqualFunc(list, want, sameDecision) {
			t.Errorf("after a repeat ListMirrorDecisions = %+v, want %+v", list, want)
		}
		mustOK(t, x.DeleteMirrorDecision(ctx, terraformRegistry, "hashicorp", "aws", registry.MirrorApprove, "5.80.1"), "DeleteMirrorDecision")
		wantKind(t, x.DeleteMirrorDecision(ctx, terraformRegistry, "hashicorp", "aws", registry.MirrorApprove, "5.80.1"), registry.NotFound, "DeleteMirrorDecision again")
		wantKind(t, x.DeleteMirrorDecision(ctx, terraformRegistry, "hashicorp", "aws", registry.MirrorApprove, deny.Versions), registry.NotFound, "DeleteMirrorDecision of the other kind")
		list, _ = x.ListMirrorDecisions(ctx, terraformRegistry, "hashicorp", "aws")
		if want := []registry.MirrorDecision{deny2}; !slices.EqualFunc(list, want, sameDecision) {
			t.Errorf("after the delete ListMirrorDecisions = %+v, want %+v", list, want)
		}
	})
	t.Run("HostileDecisionsStoreNothing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		good := registry.MirrorDecision{Host: terraformRegistry, Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: "1.0.0", CreatedAt: at(0)}
		for name, mut := range map[string]func(*registry.MirrorDecision){
			"no host":             func(d *registry.MirrorDecision) { d.Host = "" },
			"bad kind":            func(d *registry.MirrorDecision) { d.Kind = "allow" },
			"bad constraint":      func(d *registry.MirrorDecision) { d.Versions = "~> banana" },
			"approval of a range": func(d *registry.MirrorDecision) { d.Kind, d.Versions = registry.MirrorApprove, ">= 1.0" },
			"bad namespace":       func(d *registry.MirrorDecision) { d.Namespace = "../../etc" },
			"reason with a NUL":   func(d *registry.MirrorDecision) { d.Reason = "a\x00b" },
			"no time":             func(d *registry.MirrorDecision) { d.CreatedAt = time.Time{} },
		} {
			d := good
			mut(&d)
			fx := &store.Effects{Audit: []registry.AuditEvent{{Time: at(0), Action: "effects.test", Actor: "user:alice", Target: name}}}
			_, err := x.PutMirrorDecision(store.WithEffects(ctx, fx), d)
			wantKind(t, err, registry.Invalid, "PutMirrorDecision with "+name)
		}
		list, err := x.ListMirrorDecisions(ctx, terraformRegistry, "", "")
		mustOK(t, err, "ListMirrorDecisions")
		if len(list) != 0 {
			t.Errorf("refused decisions were stored: %+v", list)
		}
		audit, err := x.ListAudit(ctx, registry.AuditFilter{Action: "effects.test"})
		mustOK(t, err, "ListAudit")
		if len(audit) != 0 {
			t.Errorf("refused decisions were audited: %+v", audit)
		}
	})
	t.Run("DecisionsCarryEffects", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		fx := &store.Effects{Audit: []registry.AuditEvent{{Time: at(0), Action: "effects.test", Actor: "user:alice", Target: "deny"}}}
		d := registry.MirrorDecision{Host: terraformRegistry, Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: "1.0.0", CreatedAt: at(0)}
		_, err := x.PutMirrorDecision(store.WithEffects(ctx, fx), d)
		mustOK(t, err, "PutMirrorDecision with effects")
		fx2 := &store.Effects{Audit: []registry.AuditEvent{{Time: at(time.Second), Action: "effects.test", Actor: "user:alice", Target: "undeny"}}}
		mustOK(t, x.DeleteMirrorDecision(store.WithEffects(ctx, fx2), terraformRegistry, "hashicorp", "aws", registry.MirrorDeny, "1.0.0"), "DeleteMirrorDecision with effects")
		audit, err := x.ListAudit(ctx, registry.AuditFilter{Action: "effects.test"})
		mustOK(t, err, "ListAudit")
		var targets []string
		for _, a := range audit {
			targets = append(targets, a.Target)
		}
		slices.Sort(targets)
		if !slices.Equal(targets, []string{"deny", "undeny"}) {
			t.Errorf("audited %v, want the deny and the undeny", targets)
		}
	})
}

func sameDecision(a, b registry.MirrorDecision) bool {
	return a.Host == b.Host && a.Namespace == b.Namespace && a.Type == b.Type && a.Kind == b.Kind && a.Versions == b.Versions &&
		a.Reason == b.Reason && a.CreatedBy == b.CreatedBy && a.CreatedAt.Equal(b.CreatedAt)
}
