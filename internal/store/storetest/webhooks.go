package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// webhook returns an active webhook of namespace ("" global) with an ID
// from n.
func webhook(n int, namespace string, events ...string) registry.Webhook {
	return registry.Webhook{
		ID: fmt.Sprintf("wh_%016x", n), Namespace: namespace, URL: fmt.Sprintf("https://hooks.example/%d", n),
		Events: events, Secret: "0123456789abcdef0123", Active: true, Description: "chat",
		CreatedAt: at(time.Duration(n) * time.Second).In(east), CreatedBy: "user:alice",
	}
}

func normWebhook(w registry.Webhook) registry.Webhook {
	w.CreatedAt = normTime(w.CreatedAt)
	if len(w.Events) == 0 {
		w.Events = nil
	}
	return w
}

// idSource returns a newID function giving dl_ IDs from a counter.
func idSource() func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("dl_%016x", n.Add(1)) }
}

func event(id, typ, namespace string, when time.Time) registry.WebhookEvent {
	return registry.WebhookEvent{ID: id, Type: typ, Namespace: namespace, Time: when, Payload: []byte(`{"id":"` + id + `"}`)}
}

func testWebhooks(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateGetListUpdateDelete", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "labs")
		a, g := webhook(1, "acme", registry.EventProviderPublished, "module.*"), webhook(2, "")
		mustOK(t, x.CreateWebhook(ctx, a), "CreateWebhook")
		mustOK(t, x.CreateWebhook(ctx, g), "CreateWebhook global")
		wantKind(t, x.CreateWebhook(ctx, a), registry.Conflict, "CreateWebhook same ID")
		wantKind(t, x.CreateWebhook(ctx, webhook(3, "nope")), registry.NotFound, "CreateWebhook unknown namespace")
		got, err := x.GetWebhook(ctx, a.ID)
		mustOK(t, err, "GetWebhook")
		if !reflect.DeepEqual(normWebhook(got), normWebhook(a)) {
			t.Errorf("GetWebhook = %+v, want %+v", got, a)
		}
		_, err = x.GetWebhook(ctx, "wh_ffffffffffffffff")
		wantKind(t, err, registry.NotFound, "GetWebhook unknown")
		for ns, want := range map[string][]registry.Webhook{"acme": {a}, "": {g}, "labs": nil, "nope": nil} {
			list, err := x.ListWebhooks(ctx, ns)
			mustOK(t, err, "ListWebhooks")
			if len(list) != len(want) || (len(want) == 1 && list[0].ID != want[0].ID) {
				t.Errorf("ListWebhooks(%q) = %+v, want %+v", ns, list, want)
			}
		}
		a.URL, a.Events, a.Active, a.Description, a.Secret, a.DisabledReason = "https://other.example/x", nil, false, "", "fedcba9876543210", "gone"
		var seen registry.Webhook
		stored, err := x.UpdateWebhook(ctx, a.ID, func(w *registry.Webhook) error {
			seen = *w
			w.URL, w.Events, w.Active, w.Description, w.Secret, w.DisabledReason = a.URL, a.Events, a.Active, a.Description, a.Secret, a.DisabledReason
			w.ID, w.Namespace, w.CreatedBy = "wh_ffffffffffffffff", "labs", "someone" // not changeable
			return nil
		})
		mustOK(t, err, "UpdateWebhook")
		if !reflect.DeepEqual(normWebhook(seen), normWebhook(webhook(1, "acme", registry.EventProviderPublished, "module.*"))) {
			t.Errorf("UpdateWebhook's change saw %+v, want the stored webhook", seen)
		}
		got, _ = x.GetWebhook(ctx, a.ID)
		if !reflect.DeepEqual(normWebhook(got), normWebhook(a)) {
			t.Errorf("after UpdateWebhook = %+v, want %+v", got, a)
		}
		if stored.ID != a.ID || stored.URL != a.URL || stored.Secret != a.Secret {
			t.Errorf("UpdateWebhook returned %+v, want %+v", stored, a)
		}
		_, err = x.UpdateWebhook(ctx, "wh_ffffffffffffffff", func(*registry.Webhook) error { return nil })
		wantKind(t, err, registry.NotFound, "UpdateWebhook unknown")
		_, err = x.UpdateWebhook(ctx, a.ID, func(w *registry.Webhook) error {
			w.URL = "https://refused.example/"
			return registry.Errorf(registry.Invalid, "refused")
		})
		wantKind(t, err, registry.Invalid, "UpdateWebhook with a refusing change")
		if got, _ = x.GetWebhook(ctx, a.ID); got.URL != a.URL {
			t.Errorf("a refused UpdateWebhook stored URL %q", got.URL)
		}
		mustOK(t, x.DeleteWebhook(ctx, a.ID), "DeleteWebhook")
		wantKind(t, x.DeleteWebhook(ctx, a.ID), registry.NotFound, "DeleteWebhook again")
	})

	// Concurrent updates each change what they read in the write's
	// transaction: none is lost, on every backend.
	t.Run("ConcurrentUpdatesLoseNone", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		w := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		const n = 16
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := x.UpdateWebhook(ctx, w.ID, func(w *registry.Webhook) error {
					w.Events = append(w.Events, fmt.Sprintf("event.%d", i))
					return nil
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			mustOK(t, err, "UpdateWebhook")
		}
		got, err := x.GetWebhook(ctx, w.ID)
		mustOK(t, err, "GetWebhook")
		if len(got.Events) != n {
			t.Errorf("after %d concurrent updates each adding one event the webhook has %d: %v", n, len(got.Events), got.Events)
		}
	})

	t.Run("EnqueueMatchesFilterNamespaceAndActive", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "labs")
		pub := webhook(1, "acme", registry.EventProviderPublished)
		mods := webhook(2, "acme", "module.*")
		global := webhook(3, "")
		other := webhook(4, "labs")
		off := webhook(5, "acme")
		off.Active = false
		for _, w := range []registry.Webhook{pub, mods, global, other, off} {
			mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		}
		newID := idSource()
		n, err := x.EnqueueEvent(ctx, event("ev_1", registry.EventProviderPublished, "acme", at(time.Minute)), newID)
		mustOK(t, err, "EnqueueEvent")
		if n != 2 { // pub and global
			t.Errorf("EnqueueEvent provider.published = %d deliveries, want 2", n)
		}
		n, err = x.EnqueueEvent(ctx, event("ev_2", registry.EventModuleRevoked, "acme", at(time.Minute)), newID)
		mustOK(t, err, "EnqueueEvent")
		if n != 2 { // mods and global
			t.Errorf("EnqueueEvent module.revoked = %d deliveries, want 2", n)
		}
		_, err = x.EnqueueEvent(ctx, event("ev_1", registry.EventProviderPublished, "acme", at(time.Minute)), newID)
		wantKind(t, err, registry.Conflict, "EnqueueEvent same ID")
		for w, want := range map[string]int{pub.ID: 1, mods.ID: 1, global.ID: 2, other.ID: 0, off.ID: 0} {
			list, err := x.ListWebhookDeliveries(ctx, w, 10)
			mustOK(t, err, "ListWebhookDeliveries")
			if len(list) != want {
				t.Errorf("webhook %s has %d deliveries, want %d", w, len(list), want)
			}
			for _, d := range list {
				if d.State != registry.DeliveryPending || d.Attempts != 0 || !d.NextAttempt.Equal(at(time.Minute)) {
					t.Errorf("new delivery = %+v, want pending, due at the event's time", d)
				}
			}
		}
		list, _ := x.ListWebhookDeliveries(ctx, global.ID, 10)
		if len(list) == 2 && (list[0].EventType != registry.EventModuleRevoked || list[1].EventType != registry.EventProviderPublished) {
			t.Errorf("global deliveries = %+v, want newest first", list)
		}
		if list, _ := x.ListWebhookDeliveries(ctx, global.ID, 1); len(list) != 1 {
			t.Errorf("ListWebhookDeliveries limit 1 = %d rows", len(list))
		}
	})

	t.Run("ClaimAttemptRetrySucceed", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		w := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		now := at(time.Hour)
		_, err := x.EnqueueEvent(ctx, event("ev_1", registry.EventProviderPublished, "acme", now), idSource())
		mustOK(t, err, "EnqueueEvent")
		if got, err := x.ClaimDeliveries(ctx, "w1", now.Add(-time.Second), time.Minute, 10); err != nil || len(got) != 0 {
			t.Errorf("ClaimDeliveries before due = %v, %v; want none", got, err)
		}
		got, err := x.ClaimDeliveries(ctx, "w1", now, time.Minute, 10)
		mustOK(t, err, "ClaimDeliveries")
		if len(got) != 1 || string(got[0].Payload) != `{"id":"ev_1"}` || got[0].EventType != registry.EventProviderPublished {
			t.Fatalf("ClaimDeliveries = %+v, want the one delivery with its payload", got)
		}
		d := got[0]
		if again, _ := x.ClaimDeliveries(ctx, "w2", now.Add(30*time.Second), time.Minute, 10); len(again) != 0 {
			t.Errorf("a leased delivery was claimed again: %+v", again)
		}
		wantKind(t, x.FinishAttempt(ctx, d.ID, "w2", registry.WebhookAttempt{At: now}, now.Add(time.Minute), "", ""),
			registry.Conflict, "FinishAttempt by another owner")
		mustOK(t, x.FinishAttempt(ctx, d.ID, "w1", registry.WebhookAttempt{At: now, Status: 500, Duration: 1500 * time.Millisecond,
			Error: "HTTP 500", Response: "oops"}, now.Add(time.Minute), "", ""), "FinishAttempt retry")
		if again, _ := x.ClaimDeliveries(ctx, "w2", now.Add(30*time.Second), time.Minute, 10); len(again) != 0 {
			t.Errorf("claimed before its next attempt: %+v", again)
		}
		got, err = x.ClaimDeliveries(ctx, "w2", now.Add(time.Minute), time.Minute, 10)
		mustOK(t, err, "ClaimDeliveries after backoff")
		if len(got) != 1 || got[0].Attempts != 1 {
			t.Fatalf("ClaimDeliveries after backoff = %+v, want the delivery with 1 attempt", got)
		}
		mustOK(t, x.FinishAttempt(ctx, d.ID, "w2", registry.WebhookAttempt{At: now.Add(time.Minute), Status: 204}, time.Time{},
			registry.DeliverySucceeded, ""), "FinishAttempt success")
		wantKind(t, x.FinishAttempt(ctx, d.ID, "w2", registry.WebhookAttempt{At: now}, time.Time{}, registry.DeliverySucceeded, ""),
			registry.Conflict, "FinishAttempt of a finished delivery")
		full, err := x.GetWebhookDelivery(ctx, w.ID, d.ID)
		mustOK(t, err, "GetWebhookDelivery")
		if full.State != registry.DeliverySucceeded || full.Attempts != 2 || len(full.Log) != 2 || !full.NextAttempt.IsZero() {
			t.Fatalf("GetWebhookDelivery = %+v, want succeeded after 2 attempts", full)
		}
		if a := full.Log[0]; a.N != 1 || a.Status != 500 || a.Duration != 1500*time.Millisecond || a.Error != "HTTP 500" || a.Response != "oops" {
			t.Errorf("first attempt = %+v", a)
		}
		if a := full.Log[1]; a.N != 2 || a.Status != 204 {
			t.Errorf("second attempt = %+v", a)
		}
		_, err = x.GetWebhookDelivery(ctx, "wh_ffffffffffffffff", d.ID)
		wantKind(t, err, registry.NotFound, "GetWebhookDelivery of another webhook")
		if got, _ := x.ClaimDeliveries(ctx, "w3", now.Add(time.Hour), time.Minute, 10); len(got) != 0 {
			t.Errorf("a finished delivery was claimed: %+v", got)
		}
	})

	t.Run("ExpiredLeaseIsClaimedAgain", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateWebhook(ctx, webhook(1, "acme")), "CreateWebhook")
		now := at(time.Hour)
		_, err := x.EnqueueEvent(ctx, event("ev_1", registry.EventModulePublished, "acme", now), idSource())
		mustOK(t, err, "EnqueueEvent")
		first, _ := x.ClaimDeliveries(ctx, "crashed", now, time.Minute, 10)
		second, err := x.ClaimDeliveries(ctx, "w2", now.Add(time.Minute), time.Minute, 10)
		mustOK(t, err, "ClaimDeliveries")
		if len(first) != 1 || len(second) != 1 || first[0].ID != second[0].ID {
			t.Fatalf("claims = %+v then %+v, want the same delivery after the lease expired", first, second)
		}
		wantKind(t, x.FinishAttempt(ctx, first[0].ID, "crashed", registry.WebhookAttempt{At: now}, time.Time{}, registry.DeliveryFailed, ""),
			registry.Conflict, "FinishAttempt after losing the lease")
	})

	t.Run("FailedAttemptDisablesWebhook", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		w := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		now := at(time.Hour)
		_, err := x.EnqueueEvent(ctx, event("ev_1", registry.EventModulePublished, "acme", now), idSource())
		mustOK(t, err, "EnqueueEvent")
		got, _ := x.ClaimDeliveries(ctx, "w1", now, time.Minute, 10)
		if len(got) != 1 {
			t.Fatalf("ClaimDeliveries = %+v", got)
		}
		mustOK(t, x.FinishAttempt(ctx, got[0].ID, "w1", registry.WebhookAttempt{At: now, Status: 410}, time.Time{},
			registry.DeliveryFailed, "the target answered 410 Gone"), "FinishAttempt")
		w, _ = x.GetWebhook(ctx, w.ID)
		if w.Active || w.DisabledReason != "the target answered 410 Gone" {
			t.Errorf("webhook after a 410 = %+v, want inactive with the reason", w)
		}
		if n, _ := x.EnqueueEvent(ctx, event("ev_2", registry.EventModulePublished, "acme", now), idSource()); n != 0 {
			t.Errorf("an inactive webhook got %d deliveries", n)
		}
	})

	t.Run("EnqueueDeliveryAndPrune", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		w := webhook(1, "acme", registry.EventProviderPublished)
		w.Active = false
		mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		now := at(time.Hour)
		ping := event("ev_ping", registry.EventPing, "acme", now)
		mustOK(t, x.EnqueueDelivery(ctx, w.ID, "dl_0000000000000001", ping), "EnqueueDelivery to an inactive webhook")
		mustOK(t, x.EnqueueDelivery(ctx, w.ID, "dl_0000000000000002", ping), "EnqueueDelivery of a stored event")
		wantKind(t, x.EnqueueDelivery(ctx, w.ID, "dl_0000000000000002", ping), registry.Conflict, "EnqueueDelivery same ID")
		wantKind(t, x.EnqueueDelivery(ctx, "wh_ffffffffffffffff", "dl_0000000000000003", ping), registry.NotFound, "EnqueueDelivery unknown webhook")
		got, _ := x.ClaimDeliveries(ctx, "w1", now, time.Minute, 1)
		if len(got) != 1 || got[0].ID != "dl_0000000000000001" {
			t.Fatalf("ClaimDeliveries limit 1 = %+v, want the first", got)
		}
		mustOK(t, x.FinishAttempt(ctx, got[0].ID, "w1", registry.WebhookAttempt{At: now}, time.Time{}, registry.DeliverySucceeded, ""), "FinishAttempt")
		n, err := x.PruneWebhookDeliveries(ctx, now)
		mustOK(t, err, "PruneWebhookDeliveries")
		if n != 0 {
			t.Errorf("pruned %d deliveries finished at the cutoff, want 0", n)
		}
		n, err = x.PruneWebhookDeliveries(ctx, now.Add(time.Second))
		mustOK(t, err, "PruneWebhookDeliveries")
		if n != 1 {
			t.Errorf("pruned %d deliveries, want the finished one", n)
		}
		list, _ := x.ListWebhookDeliveries(ctx, w.ID, 10)
		if len(list) != 1 || list[0].ID != "dl_0000000000000002" {
			t.Errorf("after pruning: %+v, want the pending delivery only", list)
		}
		_, err = x.GetWebhookDelivery(ctx, w.ID, "dl_0000000000000001")
		wantKind(t, err, registry.NotFound, "GetWebhookDelivery of a pruned delivery")
	})

	t.Run("DeletingNamespaceDeletesWebhooks", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		w := webhook(1, "acme")
		mustOK(t, x.CreateWebhook(ctx, w), "CreateWebhook")
		_, err := x.EnqueueEvent(ctx, event("ev_1", registry.EventModulePublished, "acme", at(0)), idSource())
		mustOK(t, err, "EnqueueEvent")
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		_, err = x.GetWebhook(ctx, w.ID)
		wantKind(t, err, registry.NotFound, "GetWebhook after its namespace was deleted")
	})

	t.Run("ConcurrentClaimsTakeEachDeliveryOnce", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateWebhook(ctx, webhook(1, "acme")), "CreateWebhook")
		now := at(time.Hour)
		newID := idSource()
		const events = 20
		for i := range events {
			_, err := x.EnqueueEvent(ctx, event(fmt.Sprintf("ev_%d", i), registry.EventModulePublished, "acme", now), newID)
			mustOK(t, err, "EnqueueEvent")
		}
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", w)
				for range 10 {
					got, err := x.ClaimDeliveries(ctx, owner, now, time.Hour, 3)
					if err != nil {
						t.Errorf("ClaimDeliveries: %v", err)
						return
					}
					mu.Lock()
					for _, d := range got {
						if prev, ok := seen[d.ID]; ok {
							t.Errorf("delivery %s claimed by %s and %s", d.ID, prev, owner)
						}
						seen[d.ID] = owner
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != events {
			t.Errorf("%d deliveries claimed, want %d", len(seen), events)
		}
	})
}
