package operations_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/webhook"
)

// TestWebhooksRefused: only the admins of a webhook's namespace (global
// admins for a global one) create, change, test, redeliver and delete
// it; hostile URLs, filters, secrets, descriptions and IDs are refused;
// nothing is stored (no webhook, delivery, audit entry or event).
func TestWebhooksRefused(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, pat, bob, eve, root := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve"), e.user(t, "root")
	otherAdmin := e.service(t, registry.ScopeAdmin, "open")
	hook, err := e.ops.CreateWebhook(ctx, alice, operations.WebhookRequest{Namespace: "acme", URL: "https://hooks.example.com/acme"})
	adminOK(t, err)
	off := false
	inactive, err := e.ops.CreateWebhook(ctx, alice, operations.WebhookRequest{Namespace: "acme", URL: "https://hooks.example.com/off", Active: &off})
	adminOK(t, err)
	global, err := e.ops.CreateWebhook(ctx, root, operations.WebhookRequest{URL: "https://hooks.example.com/all"})
	adminOK(t, err)
	d, err := e.ops.TestWebhook(ctx, alice, hook.ID)
	adminOK(t, err)
	// other has the most webhooks it may have.
	for i := range registry.MaxWebhooksPerNamespace {
		_, err := e.ops.CreateWebhook(ctx, root, operations.WebhookRequest{Namespace: "other", URL: fmt.Sprintf("https://hooks.example.com/%d", i)})
		adminOK(t, err)
	}
	str := func(s string) *string { return &s }
	many := make([]string, registry.MaxWebhookEvents+1)
	for i := range many {
		many[i] = "ping"
	}

	for _, tc := range []struct {
		name  string
		actor operations.Actor
		req   operations.WebhookRequest
		want  registry.Kind
	}{
		{"by a publisher", pat, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/"}, registry.Forbidden},
		{"by a reader", bob, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/"}, registry.Forbidden},
		{"by an outsider", eve, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/"}, registry.NotFound},
		{"by an admin of another namespace", otherAdmin, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/"}, registry.NotFound},
		{"global by a namespace admin", alice, operations.WebhookRequest{URL: "https://x.example.com/"}, registry.Forbidden},
		{"absent namespace", root, operations.WebhookRequest{Namespace: "nope", URL: "https://x.example.com/"}, registry.NotFound},
		{"namespace path", root, operations.WebhookRequest{Namespace: "../acme", URL: "https://x.example.com/"}, registry.Invalid},
		{"plain http", alice, operations.WebhookRequest{Namespace: "acme", URL: "http://x.example.com/"}, registry.Invalid},
		{"loopback address", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://127.0.0.1/hook"}, registry.Invalid},
		{"metadata address", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://169.254.169.254/latest"}, registry.Invalid},
		{"file URL", alice, operations.WebhookRequest{Namespace: "acme", URL: "file:///etc/passwd"}, registry.Invalid},
		{"URL with a newline", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/\nX-Evil: 1"}, registry.Invalid},
		{"URL too long", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/" + strings.Repeat("a", 3000)}, registry.Invalid},
		{"empty URL", alice, operations.WebhookRequest{Namespace: "acme"}, registry.Invalid},
		{"unknown event", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Events: []string{"provider.exploded"}}, registry.Invalid},
		{"event twice", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Events: []string{"ping", "ping"}}, registry.Invalid},
		{"too many events", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Events: many}, registry.Invalid},
		{"short secret", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Secret: "short"}, registry.Invalid},
		{"secret with a space", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Secret: "0123456789 abcdef"}, registry.Invalid},
		{"description with an escape", alice, operations.WebhookRequest{Namespace: "acme", URL: "https://x.example.com/", Description: "a\x1b[31mb"}, registry.Invalid},
		{"one webhook too many", root, operations.WebhookRequest{Namespace: "other", URL: "https://x.example.com/"}, registry.Conflict},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.CreateWebhook(ctx, tc.actor, tc.req)
				return err
			})
		})
	}

	for _, tc := range []struct {
		name   string
		actor  operations.Actor
		id     string
		change operations.WebhookChange
		want   registry.Kind
	}{
		{"by a publisher", pat, hook.ID, operations.WebhookChange{URL: str("https://y.example.com/")}, registry.Forbidden},
		{"by an outsider", eve, hook.ID, operations.WebhookChange{URL: str("https://y.example.com/")}, registry.NotFound},
		{"global by a namespace admin", alice, global.ID, operations.WebhookChange{URL: str("https://y.example.com/")}, registry.Forbidden},
		{"absent webhook", alice, "wh_0123456789abcdef", operations.WebhookChange{}, registry.NotFound},
		{"ID path", alice, "../wh_test", operations.WebhookChange{}, registry.Invalid},
		{"ID too long", alice, strings.Repeat("w", 100), operations.WebhookChange{}, registry.Invalid},
		{"private URL", alice, hook.ID, operations.WebhookChange{URL: str("https://10.0.0.1/")}, registry.Invalid},
		{"unknown event", alice, hook.ID, operations.WebhookChange{Events: &[]string{"*", "nope"}}, registry.Invalid},
		{"secret and rotation", alice, hook.ID, operations.WebhookChange{Secret: str("0123456789abcdefXYZ"), RotateSecret: true}, registry.Invalid},
		{"short secret", alice, hook.ID, operations.WebhookChange{Secret: str("x")}, registry.Invalid},
		{"description with a newline", alice, hook.ID, operations.WebhookChange{Description: str("a\nb")}, registry.Invalid},
	} {
		t.Run("update/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, _, err := e.ops.UpdateWebhook(ctx, tc.actor, tc.id, tc.change)
				return err
			})
		})
	}

	for _, tc := range []struct {
		name  string
		actor operations.Actor
		id    string
		want  registry.Kind
	}{
		{"by a publisher", pat, hook.ID, registry.Forbidden},
		{"by a reader", bob, hook.ID, registry.Forbidden},
		{"by an outsider", eve, hook.ID, registry.NotFound},
		{"global by a namespace admin", alice, global.ID, registry.Forbidden},
		{"absent webhook", root, "wh_0123456789abcdef", registry.NotFound},
		{"ID with NUL", root, "wh_\x00", registry.Invalid},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteWebhook(ctx, tc.actor, tc.id) })
		})
		t.Run("test/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.TestWebhook(ctx, tc.actor, tc.id)
				return err
			})
		})
		t.Run("redeliver/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.RedeliverWebhook(ctx, tc.actor, tc.id, d.ID)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name, id, delivery string
		want               registry.Kind
	}{
		{"inactive webhook", inactive.ID, d.ID, registry.NotFound}, // the delivery is hook's
		{"absent delivery", hook.ID, "dl_0123456789abcdef", registry.NotFound},
		{"delivery path", hook.ID, "../" + d.ID, registry.Invalid},
		{"delivery too long", hook.ID, strings.Repeat("d", 100), registry.Invalid},
	} {
		t.Run("redeliver/"+tc.name, func(t *testing.T) {
			e.refusedAdmin(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.RedeliverWebhook(ctx, alice, tc.id, tc.delivery)
				return err
			})
		})
	}
	// A delivery of an inactive webhook is not redelivered.
	di, err := e.ops.TestWebhook(ctx, alice, inactive.ID)
	adminOK(t, err)
	t.Run("redeliver/to an inactive webhook", func(t *testing.T) {
		e.refusedAdmin(t, registry.Conflict, func(ctx context.Context) error {
			_, err := e.ops.RedeliverWebhook(ctx, alice, inactive.ID, di.ID)
			return err
		})
	})
	if _, err := e.ops.Webhooks(ctx, pat, "acme"); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a publisher lists the webhooks: %v; want Forbidden", err)
	}
	if _, err := e.ops.Webhooks(ctx, alice, ""); !registry.IsKind(err, registry.Forbidden) {
		t.Errorf("a namespace admin lists the global webhooks: %v; want Forbidden", err)
	}
	if _, err := e.ops.WebhookDeliveries(ctx, eve, hook.ID, 10); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("an outsider lists the deliveries: %v; want NotFound", err)
	}
}

// TestWebhooks: an admin creates, tests, redelivers, changes and deletes
// a webhook; each write is audited with its actor and address, a test
// and a redelivery enqueue a delivery.
func TestWebhooks(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	w, err := e.ops.CreateWebhook(ctx, alice, operations.WebhookRequest{Namespace: "ACME", URL: "https://hooks.example.com/acme",
		Events: []string{"provider.*"}, Description: "ci"})
	if err != nil || w.Namespace != "acme" || !w.Active || !strings.HasPrefix(w.Secret, "whsec_") || w.CreatedBy != "user:alice" {
		t.Fatalf("create: %v %+v", err, w)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditWebhookCreate || a.Namespace != "acme" || a.Target != w.ID ||
		a.Details != "url https://hooks.example.com/acme, events provider.*, active true" || a.Actor != "user:alice" || a.SourceAddr != "192.0.2.7" {
		t.Errorf("create audited as %+v", a)
	}
	d, err := e.ops.TestWebhook(ctx, alice, w.ID)
	if err != nil || d.EventType != registry.EventPing || d.WebhookID != w.ID || d.State != "pending" {
		t.Fatalf("test: %v %+v", err, d)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditWebhookTest || a.Details != "delivery "+d.ID {
		t.Errorf("test audited as %+v", a)
	}
	full, err := e.ops.WebhookDeliveries(ctx, alice, w.ID, 10)
	if err != nil || len(full) != 1 {
		t.Fatalf("deliveries: %v %+v", err, full)
	}
	_, got, err := e.ops.WebhookDelivery(ctx, alice, w.ID, d.ID)
	if err != nil || !strings.Contains(string(got.Payload), `"actor":"user:alice"`) {
		t.Errorf("the ping's payload: %v %s", err, got.Payload)
	}
	nd, err := e.ops.RedeliverWebhook(ctx, alice, w.ID, d.ID)
	if err != nil || nd.ID == d.ID || nd.EventID != d.EventID {
		t.Fatalf("redeliver: %v %+v", err, nd)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditWebhookRedeliver || a.Details != "delivery "+d.ID+" as "+nd.ID+", event "+d.EventID {
		t.Errorf("redelivery audited as %+v", a)
	}
	off := false
	w2, secret, err := e.ops.UpdateWebhook(ctx, alice, w.ID, operations.WebhookChange{Active: &off, RotateSecret: true})
	if err != nil || w2.Active || secret == "" || secret == w.Secret || w2.Secret != secret {
		t.Fatalf("update: %v %+v %q", err, w2, secret)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditWebhookUpdate || !strings.HasSuffix(a.Details, "active false, new secret") {
		t.Errorf("update audited as %+v", a)
	}
	if err := e.ops.DeleteWebhook(ctx, alice, w.ID); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditWebhookDelete || a.Target != w.ID {
		t.Errorf("delete audited as %+v", a)
	}
	if hooks, err := e.ops.Webhooks(ctx, alice, "acme"); err != nil || slices.ContainsFunc(hooks, func(h registry.Webhook) bool { return h.ID == w.ID }) {
		t.Errorf("after the delete: %v %+v", err, hooks)
	}
}

// barrierIndex holds every GetWebhook until n of them have arrived: the
// changes of a webhook all read it before any of them writes.
type barrierIndex struct {
	*sqlite.Index
	arrived *sync.WaitGroup
}

func (b barrierIndex) GetWebhook(ctx context.Context, id string) (registry.Webhook, error) {
	b.arrived.Done()
	b.arrived.Wait()
	return b.Index.GetWebhook(ctx, id)
}

// TestWebhookConcurrentChangesLoseNone: changes of different fields of a
// webhook made at once, each having read the webhook before any writes,
// all stay (the change is applied to the webhook as the write's
// transaction reads it), each audited.
func TestWebhookConcurrentChangesLoseNone(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	w, err := e.ops.CreateWebhook(ctx, alice, operations.WebhookRequest{Namespace: "acme", URL: "https://hooks.example.com/acme", Description: "old"})
	if err != nil {
		t.Fatal(err)
	}
	url, desc, events, off := "https://hooks.example.com/new", "new", []string{registry.EventProviderPublished}, false
	changes := []operations.WebhookChange{{URL: &url}, {Description: &desc}, {Events: &events}, {Active: &off}}
	var arrived sync.WaitGroup
	arrived.Add(len(changes))
	access := auth.NewAccess(e.authn, e.idx)
	ops := operations.New(operations.Options{
		Index: barrierIndex{e.idx, &arrived}, Access: access, Audit: audit.New(e.idx, nil),
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}), Now: func() time.Time { return e.now },
	})
	errs := make(chan error, len(changes))
	for _, c := range changes {
		go func() {
			_, _, err := ops.UpdateWebhook(ctx, alice, w.ID, c)
			errs <- err
		}()
	}
	for range changes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.idx.GetWebhook(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != url || got.Description != desc || !slices.Equal(got.Events, events) || got.Active {
		t.Errorf("after concurrent changes of URL, description, events and active: %+v", got)
	}
	log, err := e.idx.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditWebhookUpdate})
	if err != nil || len(log) != len(changes) {
		t.Errorf("audit entries of the changes: %v %+v", err, log)
	}
}
