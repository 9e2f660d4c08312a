package operations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// withCollector gives e's operations a garbage collector on e's index and
// a blob store of its own, and gives acme a retention rule keeping its
// newest version of each provider and module, with a 1.1.0 of the
// provider and of the module published after their 1.0.0: a collection
// deletes both 1.0.0 versions.
func (e *env) withCollector(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	blobs := e.st.Blobs
	c, err := gc.New(gc.Options{Index: e.idx, Blobs: blobs, Versions: e.idx})
	if err != nil {
		t.Fatal(err)
	}
	e.reopen(func(o *operations.Options) { o.GC = c })
	pv, err := e.idx.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	pv.Version, pv.PublishedAt = "1.1.0", e.now.Add(time.Minute)
	for i := range pv.Platforms {
		pv.Platforms[i].Filename = strings.ReplaceAll(pv.Platforms[i].Filename, "1.0.0", "1.1.0")
	}
	if err := e.idx.CreateProviderVersion(ctx, pv); err != nil {
		t.Fatal(err)
	}
	mv, err := e.idx.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	mv.Version, mv.PublishedAt = "1.1.0", e.now.Add(time.Minute)
	if err := e.idx.CreateModuleVersion(ctx, mv); err != nil {
		t.Fatal(err)
	}
	if err := e.idx.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "acme", KeepLast: 1, UpdatedAt: e.now, UpdatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	e.changed = nil // the publishes above
}

// TestCollectGarbageRefused: only global admins run collections and
// expire versions; hostile versions are refused; nothing is deleted,
// audited or announced.
func TestCollectGarbageRefused(t *testing.T) {
	e := newEnv(t)
	e.withCollector(t)
	alice, pat, root := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "root")
	nsAdmin := e.service(t, registry.ScopeAdmin, "acme")
	for _, tc := range []struct {
		name  string
		actor operations.Actor
	}{
		{"by a namespace admin", alice},
		{"by a publisher", pat},
		{"by a namespace-bound admin token", nsAdmin},
		{"by a publish token", e.service(t, registry.ScopePublish)},
	} {
		t.Run("collect/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, registry.Forbidden, func(ctx context.Context) error {
				_, err := e.ops.CollectGarbage(ctx, tc.actor, gc.Run{})
				return err
			})
		})
	}
	ref := func(ns, name, system, version string) operations.VersionRef {
		return operations.VersionRef{Namespace: ns, Name: name, System: system, Version: version}
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		e     operations.ExpiredVersion
		want  registry.Kind
	}{
		{"by a namespace admin", alice, operations.ExpiredVersion{Version: ref("acme", "widget", "", "1.0.0")}, registry.Forbidden},
		{"by a namespace-bound admin token", nsAdmin, operations.ExpiredVersion{Module: true, Version: ref("acme", "net", "aws", "1.0.0")}, registry.Forbidden},
		{"namespace path", root, operations.ExpiredVersion{Version: ref("../acme", "widget", "", "1.0.0")}, registry.Invalid},
		{"type with NUL", root, operations.ExpiredVersion{Version: ref("acme", "widget\x00", "", "1.0.0")}, registry.Invalid},
		{"version no semver", root, operations.ExpiredVersion{Version: ref("acme", "widget", "", "1")}, registry.Invalid},
		{"module system path", root, operations.ExpiredVersion{Module: true, Version: ref("acme", "net", "../aws", "1.0.0")}, registry.Invalid},
		{"module version with a newline", root, operations.ExpiredVersion{Module: true, Version: ref("acme", "net", "aws", "1.0.0\n")}, registry.Invalid},
		{"absent version", root, operations.ExpiredVersion{Version: ref("acme", "widget", "", "0.9.0")}, registry.NotFound},
	} {
		t.Run("expire/"+tc.name, func(t *testing.T) {
			e.refusedAll(t, tc.want, func(ctx context.Context) error { return e.ops.ExpireVersion(ctx, tc.actor, tc.e) })
		})
	}
	// A dry run deletes and records nothing.
	t.Run("dry run", func(t *testing.T) {
		before, more := e.state(t), e.moreState(t)
		rep, err := e.ops.CollectGarbage(t.Context(), root, gc.Run{DryRun: true})
		if err != nil || len(rep.Expired) != 2 {
			t.Fatalf("dry run: %v, expired %+v; want both 1.0.0 versions", err, rep.Expired)
		}
		if after := e.state(t); len(after.Audit) != len(before.Audit) || after.CacheDrops != before.CacheDrops {
			t.Errorf("a dry run audited or dropped caches: %+v", after)
		}
		if after := e.moreState(t); after.Deliveries != more.Deliveries || len(after.Providers) != len(more.Providers) {
			t.Errorf("a dry run changed %+v to %+v", more, after)
		}
	})
	// Without a collector, nothing runs.
	e.reopen(func(*operations.Options) {})
	e.refusedAll(t, registry.Internal, func(ctx context.Context) error {
		_, err := e.ops.CollectGarbage(ctx, root, gc.Run{})
		return err
	})
}

// TestCollectGarbage: the versions a retention rule expires are deleted
// by the path of a user's delete: audited as provider.delete and
// module.delete by the collection's actor, announced as provider.deleted
// and module.deleted with the rule as the reason; the collection itself
// is recorded (gc.run).
func TestCollectGarbage(t *testing.T) {
	for _, tc := range []struct {
		name            string
		operator        string
		actor, fromAddr string
	}{
		{"by a global admin", "", "user:root", "192.0.2.7"},
		{"scheduled", "trove serve --gc-interval", "trove serve --gc-interval", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.withCollector(t)
			ctx := t.Context()
			a := e.user(t, "root")
			if tc.operator != "" {
				a = operations.Actor{Operator: tc.operator}
			}
			rep, err := e.ops.CollectGarbage(ctx, a, gc.Run{})
			if err != nil || len(rep.Expired) != 2 {
				t.Fatalf("collection: %v, expired %+v", err, rep.Expired)
			}
			for _, v := range [][2]string{{"provider", "1.0.0"}, {"module", "1.0.0"}} {
				var err error
				if v[0] == "provider" {
					_, err = e.idx.GetProviderVersion(ctx, "acme", "widget", v[1])
				} else {
					_, err = e.idx.GetModuleVersion(ctx, "acme", "net", "aws", v[1])
				}
				if !registry.IsKind(err, registry.NotFound) {
					t.Errorf("the expired %s version reads back: %v", v[0], err)
				}
			}
			events, err := e.idx.ListAudit(ctx, registry.AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]registry.AuditEvent{}
			for _, ev := range events {
				got[ev.Action] = ev
			}
			for action, target := range map[string]string{registry.AuditProviderDelete: "acme/widget 1.0.0", registry.AuditModuleDelete: "acme/net/aws 1.0.0"} {
				ev := got[action]
				if ev.Target != target || ev.Namespace != "acme" || ev.Details != "retention rule of namespace acme" ||
					ev.Actor != tc.actor || ev.SourceAddr != tc.fromAddr {
					t.Errorf("%s audited as %+v", action, ev)
				}
			}
			if ev := got[registry.AuditGC]; ev.Actor != tc.actor || !strings.Contains(ev.Details, "2 versions deleted by retention rules") {
				t.Errorf("the collection audited as %+v", ev)
			}
			if got, want := e.deliveries(t), []string{registry.EventProviderDeleted, registry.EventModuleDeleted}; !sameElements(got, want) {
				t.Errorf("webhook deliveries %q; want %q", got, want)
			}
			if len(e.changed) != 2 {
				t.Errorf("cache drops %q; want the provider's and the module's", e.changed)
			}
		})
	}
}
