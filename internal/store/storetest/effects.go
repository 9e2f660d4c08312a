package storetest

import (
	"fmt"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testEffects checks store.Effects: the audit entries and webhook events
// a write carries commit in its transaction, or not at all.
func testEffects(t *testing.T, newIndex func(*testing.T) store.Index) {
	// effects returns the effects of a change of namespace ns, with an
	// audit entry and a provider.published event named by n.
	effects := func(n int, ns string) *store.Effects {
		return &store.Effects{
			Audit: []registry.AuditEvent{{Time: at(time.Duration(n) * time.Second), Action: "effects.test", Actor: "user:alice",
				SourceAddr: "192.0.2.1", Namespace: ns, Target: fmt.Sprintf("target %d", n), Details: "details"}},
			Events: []registry.WebhookEvent{event(fmt.Sprintf("ev_%016x", n), registry.EventProviderPublished, ns, at(time.Duration(n)*time.Second))},
			NewID:  func() string { return fmt.Sprintf("dl_%08x%08x", n, 1) },
		}
	}
	audited := func(t *testing.T, x store.Index, target string) []registry.AuditEvent {
		t.Helper()
		var out []registry.AuditEvent
		list, err := x.ListAudit(t.Context(), registry.AuditFilter{Action: "effects.test"})
		mustOK(t, err, "ListAudit")
		for _, e := range list {
			if e.Target == target {
				out = append(out, e)
			}
		}
		return out
	}
	deliveries := func(t *testing.T, x store.Index, hook string) []registry.WebhookDelivery {
		t.Helper()
		list, err := x.ListWebhookDeliveries(t.Context(), hook, 100)
		mustOK(t, err, "ListWebhookDeliveries")
		return list
	}

	t.Run("CommitWithTheChange", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		hook, other := webhook(1, "acme", registry.EventProviderPublished), webhook(2, "acme", registry.EventModulePublished)
		mustOK(t, x.CreateWebhook(ctx, hook), "CreateWebhook")
		mustOK(t, x.CreateWebhook(ctx, other), "CreateWebhook")
		fx := effects(1, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(store.WithEffects(ctx, fx), key), "AddSigningKey with effects")
		if !fx.Taken() || fx.Deliveries() != 1 {
			t.Errorf("after the write: Taken = %v, Deliveries = %d, want true and 1", fx.Taken(), fx.Deliveries())
		}
		got := audited(t, x, "target 1")
		if len(got) != 1 || got[0].ID == 0 || got[0].Actor != "user:alice" || got[0].SourceAddr != "192.0.2.1" || got[0].Namespace != "acme" ||
			!got[0].Time.Equal(fx.Audit[0].Time) {
			t.Errorf("audit log after the write = %+v, want the one event %+v with an ID", got, fx.Audit[0])
		}
		ds := deliveries(t, x, hook.ID)
		if len(ds) != 1 || ds[0].EventID != fx.Events[0].ID || ds[0].State != registry.DeliveryPending || ds[0].ID != fx.NewID() {
			t.Fatalf("deliveries of the subscribed webhook = %+v, want one pending delivery of %s", ds, fx.Events[0].ID)
		}
		d, err := x.GetWebhookDelivery(ctx, hook.ID, ds[0].ID)
		mustOK(t, err, "GetWebhookDelivery")
		if string(d.Payload) != string(fx.Events[0].Payload) {
			t.Errorf("delivery payload = %s, want %s", d.Payload, fx.Events[0].Payload)
		}
		if ds := deliveries(t, x, other.ID); len(ds) != 0 {
			t.Errorf("deliveries of a webhook that does not want the event = %+v, want none", ds)
		}
		// Taken effects are not written again by a later write with the
		// same context.
		mustOK(t, x.DeleteSigningKey(store.WithEffects(ctx, fx), "acme", key.KeyID), "DeleteSigningKey with taken effects")
		if got := audited(t, x, "target 1"); len(got) != 1 {
			t.Errorf("audit log after a second write = %+v, want the event once", got)
		}
		if ds := deliveries(t, x, hook.ID); len(ds) != 1 {
			t.Errorf("deliveries after a second write = %+v, want one", ds)
		}
	})

	t.Run("FailedWriteRecordsNothing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		hook := webhook(1, "", registry.EventProviderPublished)
		mustOK(t, x.CreateWebhook(ctx, hook), "CreateWebhook")
		fx := effects(2, "acme")
		err := x.CreateNamespace(store.WithEffects(ctx, fx), registry.Namespace{Name: "acme", CreatedAt: t0})
		wantKind(t, err, registry.Conflict, "CreateNamespace of a taken name with effects")
		if fx.Taken() {
			t.Error("a failed write took its effects")
		}
		if got := audited(t, x, "target 2"); len(got) != 0 {
			t.Errorf("audit log after a failed write = %+v, want nothing", got)
		}
		if ds := deliveries(t, x, hook.ID); len(ds) != 0 {
			t.Errorf("deliveries after a failed write = %+v, want none", ds)
		}
		// The untaken effects go with the next write that commits.
		mustOK(t, x.CreateNamespace(store.WithEffects(ctx, fx), registry.Namespace{Name: "labs", CreatedAt: t0}), "CreateNamespace with effects")
		if !fx.Taken() || len(audited(t, x, "target 2")) != 1 || len(deliveries(t, x, hook.ID)) != 1 {
			t.Errorf("after a write that commits: Taken = %v, audit %v, deliveries %v; want the effects committed once",
				fx.Taken(), audited(t, x, "target 2"), deliveries(t, x, hook.ID))
		}
	})

	t.Run("FailedEffectsUndoTheChange", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		hook := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, hook), "CreateWebhook")
		mustOK(t, x.CreateNamespace(store.WithEffects(ctx, effects(3, "acme")), registry.Namespace{Name: "labs", CreatedAt: t0}), "CreateNamespace")
		// The event ID is taken: the effects fail, and the change with them.
		fx := effects(3, "acme")
		fx.Audit[0].Target = "target 4"
		err := x.CreateNamespace(store.WithEffects(ctx, fx), registry.Namespace{Name: "ops", CreatedAt: t0})
		wantKind(t, err, registry.Conflict, "CreateNamespace whose event's ID is taken")
		_, err = x.GetNamespace(ctx, "ops")
		wantKind(t, err, registry.NotFound, "GetNamespace of a change whose effects failed")
		if got := audited(t, x, "target 4"); len(got) != 0 || fx.Taken() {
			t.Errorf("audit log after failed effects = %+v (Taken %v), want nothing", got, fx.Taken())
		}
	})

	t.Run("NoWebhookNoEvent", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		fx := effects(5, "acme")
		mustOK(t, x.CreateNamespace(store.WithEffects(ctx, fx), registry.Namespace{Name: "labs", CreatedAt: t0}), "CreateNamespace")
		if !fx.Taken() || fx.Deliveries() != 0 || len(audited(t, x, "target 5")) != 1 {
			t.Errorf("Taken = %v, Deliveries = %d, audit %v; want taken, no delivery, the audit event", fx.Taken(), fx.Deliveries(), audited(t, x, "target 5"))
		}
		// The event was not stored: a webhook created now may enqueue
		// its ID on its own.
		hook := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, hook), "CreateWebhook")
		n, err := x.EnqueueEvent(ctx, fx.Events[0], idSource())
		mustOK(t, err, "EnqueueEvent of the event that had no webhook")
		if n != 1 {
			t.Errorf("EnqueueEvent = %d deliveries, want 1", n)
		}
	})

	t.Run("BindCompletesVersionEffects", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		fx := effects(6, "acme")
		fx.Bind = func(record any) {
			if v, ok := record.(registry.ProviderVersion); ok {
				fx.Audit[0].Details = "signed by key " + v.SigningKey.KeyID
			}
		}
		v := testVersion("acme", "cloud", "1.0.0", key, t0)
		mustOK(t, x.CreateProviderVersion(store.WithEffects(ctx, fx), v), "CreateProviderVersion with effects")
		got := audited(t, x, "target 6")
		if len(got) != 1 || got[0].Details != "signed by key "+key.KeyID {
			t.Errorf("audit log = %+v, want one event with the details Bind set", got)
		}
		m := testModuleVersion("acme", "net", "aws", "1.0.0", t0)
		mfx := effects(7, "acme")
		mfx.Bind = func(record any) {
			if v, ok := record.(registry.ModuleVersion); ok {
				mfx.Audit[0].Details = "sha256 " + v.ArchiveDigest
			}
		}
		mustOK(t, x.CreateModuleVersion(store.WithEffects(ctx, mfx), m), "CreateModuleVersion with effects")
		if got := audited(t, x, "target 7"); len(got) != 1 || got[0].Details != "sha256 "+m.ArchiveDigest {
			t.Errorf("audit log = %+v, want one event with the details Bind set", got)
		}
	})

	t.Run("DeletesCarryEffects", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		hook := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, hook), "CreateWebhook")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", key, t0)), "CreateProviderVersion")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "net", "aws", "1.0.0", t0)), "CreateModuleVersion")
		for i, del := range []func(fx *store.Effects) error{
			func(fx *store.Effects) error {
				return x.DeleteProviderVersion(store.WithEffects(ctx, fx), "acme", "cloud", "1.0.0")
			},
			func(fx *store.Effects) error {
				return x.DeleteModuleVersion(store.WithEffects(ctx, fx), "acme", "net", "aws", "1.0.0")
			},
		} {
			fx := effects(10+i, "acme")
			mustOK(t, del(fx), "delete with effects")
			if !fx.Taken() || len(audited(t, x, fmt.Sprintf("target %d", 10+i))) != 1 {
				t.Errorf("delete %d: Taken = %v, want the effects committed", i, fx.Taken())
			}
			fx = effects(20+i, "acme")
			wantKind(t, del(fx), registry.NotFound, "delete again with effects")
			if fx.Taken() || len(audited(t, x, fmt.Sprintf("target %d", 20+i))) != 0 {
				t.Errorf("delete %d again: Taken = %v, want nothing recorded", i, fx.Taken())
			}
		}
		if ds := deliveries(t, x, hook.ID); len(ds) != 2 {
			t.Errorf("deliveries = %+v, want one per delete", ds)
		}
	})

	t.Run("BindLearnsWhatOnlyTheWriteKnows", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		for _, v := range []string{"1.0.0", "1.1.0"} {
			mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", v, key, t0)), "CreateProviderVersion")
		}
		// bindInto returns effects whose Bind writes what it is given
		// into their audit entry's details.
		bindInto := func(n int) *store.Effects {
			fx := effects(n, "acme")
			fx.Bind = func(record any) { fx.Audit[0].Details = fmt.Sprintf("%v", record) }
			return fx
		}
		fx := bindInto(30)
		n, err := x.DeleteProvider(store.WithEffects(ctx, fx), "acme", "cloud")
		mustOK(t, err, "DeleteProvider with effects")
		if got := audited(t, x, "target 30"); n != 2 || len(got) != 1 || got[0].Details != "2" {
			t.Errorf("DeleteProvider = %d, audit %+v; want 2 versions named by Bind", n, got)
		}
		_, err = x.PutIdentityProvider(ctx, testIdentityProvider("corp"))
		mustOK(t, err, "PutIdentityProvider")
		fx = bindInto(31)
		m, err := x.CreateRoleMapping(store.WithEffects(ctx, fx), registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform",
			Namespace: "acme", Role: registry.RolePublisher, CreatedAt: t0})
		mustOK(t, err, "CreateRoleMapping with effects")
		if got := audited(t, x, "target 31"); len(got) != 1 || got[0].Details != fmt.Sprintf("%v", m) || m.ID == 0 {
			t.Errorf("audit %+v, want the mapping %+v with its ID named by Bind", got, m)
		}
		mustOK(t, x.CreateUser(ctx, registry.User{Name: "bob", CreatedAt: t0}), "CreateUser")
		// Effects empty until Bind fills them are taken all the same.
		fx = &store.Effects{}
		fx.Bind = func(record any) {
			fx.Audit = nil
			for _, c := range record.([]registry.RoleChange) {
				fx.Audit = append(fx.Audit, registry.AuditEvent{Time: t0, Action: "effects.test", Actor: "sso:corp", Target: "role " + c.Namespace})
			}
		}
		changes, err := x.ReconcileRoles(store.WithEffects(ctx, fx), "bob", []registry.RoleGrant{{Namespace: "acme", Role: registry.RoleReader}}, false, t0)
		mustOK(t, err, "ReconcileRoles with effects")
		if got := audited(t, x, "role acme"); len(changes) != 1 || len(got) != 1 || !fx.Taken() {
			t.Errorf("ReconcileRoles = %+v, audit %+v (Taken %v); want one change and its entry", changes, got, fx.Taken())
		}
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "2.0.0", key, t0)), "CreateProviderVersion")
		fx = bindInto(32)
		digest := digestOf("docs")
		created, err := x.SetProviderDocs(store.WithEffects(ctx, fx), "acme", "cloud", "2.0.0", digest, 100)
		mustOK(t, err, "SetProviderDocs with effects")
		if got := audited(t, x, "target 32"); !created || len(got) != 1 || got[0].Details != digest {
			t.Errorf("SetProviderDocs created %v, audit %+v; want created and the digest %s named by Bind", created, got, digest)
		}
		// A repeat of the same documentation changes nothing: its effects
		// stay untaken, nothing more is audited.
		fx = bindInto(32)
		created, err = x.SetProviderDocs(store.WithEffects(ctx, fx), "acme", "cloud", "2.0.0", digest, 100)
		mustOK(t, err, "SetProviderDocs repeated with effects")
		if got := audited(t, x, "target 32"); created || fx.Taken() || len(got) != 1 {
			t.Errorf("repeated SetProviderDocs: created %v, effects taken %v, audit %+v; want neither and the one entry of the first", created, fx.Taken(), got)
		}
		managed := testKey("acme", 2)
		managed.Managed = true
		fx = bindInto(33)
		fx.Bind = func(record any) {
			if k, ok := record.(registry.SigningKey); ok {
				fx.Audit[0].Details = k.KeyID
			}
		}
		mustOK(t, x.AddManagedSigningKey(store.WithEffects(ctx, fx), managed, []byte("sealed")), "AddManagedSigningKey with effects")
		if got := audited(t, x, "target 33"); len(got) != 1 || got[0].Details != managed.KeyID {
			t.Errorf("audit %+v, want the key %s named by Bind", got, managed.KeyID)
		}
	})
}
