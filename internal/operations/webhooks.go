package operations

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Webhooks of a namespace are managed by its admins, global ones
// (namespace "") by global admins; an actor who may not read a
// webhook's namespace gets NotFound (docs/webhooks.md).

// webhookScope checks that a is an admin of namespace ("": a global
// admin) and returns the namespace, validated.
func (o *Operations) webhookScope(ctx context.Context, a Actor, namespace string) (string, error) {
	if namespace == "" {
		return "", o.require(a, registry.ScopeAdmin, "")
	}
	return o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
}

// Webhooks lists the webhooks of namespace ("": the global ones), for
// its admins.
func (o *Operations) Webhooks(ctx context.Context, a Actor, namespace string) ([]registry.Webhook, error) {
	ns, err := o.webhookScope(ctx, a, namespace)
	if err != nil {
		return nil, err
	}
	return o.opt.Index.ListWebhooks(ctx, ns)
}

// Webhook returns the webhook id if a administers its namespace;
// NotFound for one whose namespace a may not read.
func (o *Operations) Webhook(ctx context.Context, a Actor, id string) (registry.Webhook, error) {
	id, err := registry.ParseWebhookID(id)
	if err != nil {
		return registry.Webhook{}, err
	}
	w, err := o.opt.Index.GetWebhook(ctx, id)
	if err != nil {
		return registry.Webhook{}, err
	}
	if w.Namespace != "" && a.Operator == "" {
		if ok, err := o.opt.Access.CanRead(ctx, a.Principal, w.Namespace); err != nil || !ok {
			if err != nil {
				return registry.Webhook{}, err
			}
			return registry.Webhook{}, registry.Errorf(registry.NotFound, "webhook %s not found", id)
		}
	}
	return w, o.require(a, registry.ScopeAdmin, w.Namespace)
}

// WebhookRequest is a webhook to create.
type WebhookRequest struct {
	// Namespace is the namespace whose events it is sent; "" for a
	// global webhook (every namespace's events).
	Namespace string
	URL       string
	// Events filters the event types; empty for every one.
	Events []string
	// Secret signs the deliveries; "" generates one.
	Secret string
	// Active is whether it is sent events; nil means active.
	Active      *bool
	Description string
}

// newWebhookSecret returns a generated secret: "whsec_" and 32 random
// bytes in hex.
func newWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// checkWebhook validates the URL, the filter, the description and the
// secret of w.
func (o *Operations) checkWebhook(w registry.Webhook) error {
	if err := registry.CheckWebhookURL(w.URL, o.opt.WebhookURLs); err != nil {
		return err
	}
	if err := registry.CheckEventFilter(w.Events); err != nil {
		return err
	}
	if err := registry.DescriptionLimit.CheckText(w.Description); err != nil {
		return err
	}
	return registry.CheckWebhookSecret(w.Secret)
}

// webhookOwner names who owns the webhooks of ns, for messages.
func webhookOwner(ns string) string {
	if ns == "" {
		return "this Trove (global webhooks)"
	}
	return "namespace " + ns
}

// describeWebhook is the audit log's account of a webhook.
func describeWebhook(w registry.Webhook) string {
	events := "all events"
	if len(w.Events) > 0 {
		events = "events " + strings.Join(w.Events, " ")
	}
	return "url " + w.URL + ", " + events + ", active " + strconv.FormatBool(w.Active)
}

// CreateWebhook creates the webhook req describes, for the admins of its
// namespace (global admins for a global one); a namespace has at most
// registry.MaxWebhooksPerNamespace. It returns the webhook as stored,
// with its secret (shown once).
func (o *Operations) CreateWebhook(ctx context.Context, a Actor, req WebhookRequest) (registry.Webhook, error) {
	ns, err := o.webhookScope(ctx, a, req.Namespace)
	if err != nil {
		return registry.Webhook{}, err
	}
	w := registry.Webhook{
		ID: webhook.NewID("wh_"), Namespace: ns, URL: req.URL, Events: req.Events, Secret: req.Secret, Active: true,
		Description: req.Description, CreatedAt: o.opt.Now().UTC(), CreatedBy: a.name(),
	}
	if req.Active != nil {
		w.Active = *req.Active
	}
	if w.Secret == "" {
		w.Secret = newWebhookSecret()
	}
	if err := o.checkWebhook(w); err != nil {
		return registry.Webhook{}, err
	}
	existing, err := o.opt.Index.ListWebhooks(ctx, ns)
	if err != nil {
		return registry.Webhook{}, err
	}
	if len(existing) >= registry.MaxWebhooksPerNamespace {
		return registry.Webhook{}, registry.Errorf(registry.Conflict, "%s has %d webhooks, the most it may have: delete one first", webhookOwner(ns), len(existing))
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditWebhookCreate, Namespace: ns, Target: w.ID, Details: describeWebhook(w)}})
	if err := o.opt.Index.CreateWebhook(store.WithEffects(ctx, fx), w); err != nil {
		return registry.Webhook{}, err
	}
	o.done(ctx, fx)
	return w, nil
}

// WebhookChange is a change of a webhook: the fields not nil are set.
type WebhookChange struct {
	URL         *string
	Events      *[]string
	Description *string
	// Active activates the webhook (clearing the reason it was disabled
	// for) or deactivates it.
	Active *bool
	// Secret sets the secret; RotateSecret generates a new one. At most
	// one of them.
	Secret       *string
	RotateSecret bool
}

// UpdateWebhook changes the webhook id, for the admins of its namespace.
// It returns the webhook as stored and its new secret, if c set or
// rotated it ("" otherwise). The change is applied to the webhook as
// stored when it is written, in the write's transaction
// (store.Webhooks.UpdateWebhook): concurrent changes of different fields
// all stay, and a change never undoes a deactivation by a delivery it
// did not see.
func (o *Operations) UpdateWebhook(ctx context.Context, a Actor, id string, c WebhookChange) (registry.Webhook, string, error) {
	// The namespace of a webhook never changes: who may change it is
	// decided before the write.
	w, err := o.Webhook(ctx, a, id)
	if err != nil {
		return registry.Webhook{}, "", err
	}
	if c.Secret != nil && c.RotateSecret {
		return registry.Webhook{}, "", registry.Errorf(registry.Invalid, "give a secret or ask to rotate it, not both")
	}
	secret := ""
	if c.Secret != nil {
		secret = *c.Secret
	}
	if c.RotateSecret {
		secret = newWebhookSecret()
		c.Secret = &secret
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditWebhookUpdate, Namespace: w.Namespace, Target: w.ID}})
	fx.Bind = func(record any) { // in the transaction, with the webhook it stores
		if w, ok := record.(registry.Webhook); ok {
			fx.Audit[0].Details = describeWebhook(w)
			if secret != "" {
				fx.Audit[0].Details += ", new secret"
			}
		}
	}
	w, err = o.opt.Index.UpdateWebhook(store.WithEffects(ctx, fx), w.ID, func(w *registry.Webhook) error {
		c.apply(w)
		return o.checkWebhook(*w)
	})
	if err != nil {
		return registry.Webhook{}, "", err
	}
	o.done(ctx, fx)
	return w, secret, nil
}

// apply sets the fields c changes in w (a rotated secret is in Secret).
func (c WebhookChange) apply(w *registry.Webhook) {
	if c.URL != nil {
		w.URL = *c.URL
	}
	if c.Events != nil {
		w.Events = *c.Events
	}
	if c.Description != nil {
		w.Description = *c.Description
	}
	if c.Active != nil {
		w.Active = *c.Active
		if w.Active {
			w.DisabledReason = ""
		}
	}
	if c.Secret != nil {
		w.Secret = *c.Secret
	}
}

// DeleteWebhook deletes the webhook id with its deliveries, for the
// admins of its namespace.
func (o *Operations) DeleteWebhook(ctx context.Context, a Actor, id string) error {
	w, err := o.Webhook(ctx, a, id)
	if err != nil {
		return err
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditWebhookDelete, Namespace: w.Namespace, Target: w.ID, Details: "url " + w.URL}})
	if err := o.opt.Index.DeleteWebhook(store.WithEffects(ctx, fx), w.ID); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// TestWebhook enqueues a ping event for the webhook id (active or not),
// for the admins of its namespace, and returns its pending delivery.
func (o *Operations) TestWebhook(ctx context.Context, a Actor, id string) (registry.WebhookDelivery, error) {
	w, err := o.Webhook(ctx, a, id)
	if err != nil {
		return registry.WebhookDelivery{}, err
	}
	em := o.opt.Events
	if em == nil {
		em = webhook.NewEmitter(webhook.EmitterOptions{PublicURL: o.opt.PublicURL})
	}
	p := em.Payload(webhook.Event{Type: registry.EventPing, Namespace: w.Namespace, Actor: a.name()}, webhook.NewID("ev_"), o.opt.Now())
	body, err := json.Marshal(p)
	if err != nil {
		return registry.WebhookDelivery{}, err
	}
	did := webhook.NewID("dl_")
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditWebhookTest, Namespace: w.Namespace, Target: w.ID, Details: "delivery " + did}})
	e := registry.WebhookEvent{ID: p.ID, Type: p.Type, Namespace: w.Namespace, Time: p.Time, Payload: body}
	if err := o.opt.Index.EnqueueDelivery(store.WithEffects(ctx, fx), w.ID, did, e); err != nil {
		return registry.WebhookDelivery{}, err
	}
	o.opt.Events.Wake()
	o.done(ctx, fx)
	return o.opt.Index.GetWebhookDelivery(ctx, w.ID, did)
}

// WebhookDeliveries returns the newest deliveries of the webhook id,
// newest first, at most limit, for the admins of its namespace.
func (o *Operations) WebhookDeliveries(ctx context.Context, a Actor, id string, limit int) ([]registry.WebhookDelivery, error) {
	w, err := o.Webhook(ctx, a, id)
	if err != nil {
		return nil, err
	}
	return o.opt.Index.ListWebhookDeliveries(ctx, w.ID, limit)
}

// WebhookDelivery returns the webhook id and its delivery deliveryID, with
// its attempts and payload, for the admins of the webhook's namespace.
func (o *Operations) WebhookDelivery(ctx context.Context, a Actor, id, deliveryID string) (registry.Webhook, registry.WebhookDelivery, error) {
	w, err := o.Webhook(ctx, a, id)
	if err != nil {
		return registry.Webhook{}, registry.WebhookDelivery{}, err
	}
	if deliveryID, err = registry.ParseDeliveryID(deliveryID); err != nil {
		return registry.Webhook{}, registry.WebhookDelivery{}, err
	}
	d, err := o.opt.Index.GetWebhookDelivery(ctx, w.ID, deliveryID)
	return w, d, err
}

// RedeliverWebhook enqueues a new delivery of the event of the delivery
// deliveryID, due at once, to the webhook id, which must be active; for
// the admins of its namespace. It returns the new delivery.
func (o *Operations) RedeliverWebhook(ctx context.Context, a Actor, id, deliveryID string) (registry.WebhookDelivery, error) {
	w, d, err := o.WebhookDelivery(ctx, a, id, deliveryID)
	if err != nil {
		return registry.WebhookDelivery{}, err
	}
	if !w.Active {
		return registry.WebhookDelivery{}, registry.Errorf(registry.Conflict, "webhook %s is inactive: activate it first (trove webhook update --active=true)", w.ID)
	}
	did := webhook.NewID("dl_")
	e := registry.WebhookEvent{ID: d.EventID, Type: d.EventType, Namespace: w.Namespace, Time: o.opt.Now(), Payload: d.Payload}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditWebhookRedeliver, Namespace: w.Namespace, Target: w.ID,
		Details: "delivery " + d.ID + " as " + did + ", event " + d.EventID}})
	if err := o.opt.Index.EnqueueDelivery(store.WithEffects(ctx, fx), w.ID, did, e); err != nil {
		return registry.WebhookDelivery{}, err
	}
	o.opt.Events.Wake()
	o.done(ctx, fx)
	return o.opt.Index.GetWebhookDelivery(ctx, w.ID, did)
}
