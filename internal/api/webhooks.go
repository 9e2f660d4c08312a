package api

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Bounds of the delivery log's pages.
const (
	defaultDeliveryPage = 50
	maxDeliveryPage     = 200
)

// registerWebhooks mounts the webhook routes (docs/webhooks.md). A
// namespace's webhooks are managed by its admins, global ones by global
// admins; callers who may not read a webhook's namespace get NotFound.
func (h *handler) registerWebhooks(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteWebhooks, h.listWebhooks)
	route("POST "+apispec.RouteWebhooks, h.createWebhook)
	route("GET "+apispec.RouteWebhook, h.getWebhook)
	route("PATCH "+apispec.RouteWebhook, h.updateWebhook)
	route("DELETE "+apispec.RouteWebhook, h.deleteWebhook)
	route("POST "+apispec.RouteWebhookTest, h.testWebhook)
	route("GET "+apispec.RouteWebhookDeliveries, h.listWebhookDeliveries)
	route("GET "+apispec.RouteWebhookDelivery, h.getWebhookDelivery)
	route("POST "+apispec.RouteWebhookRedeliver, h.redeliverWebhook)
}

// webhookScope checks that the caller is an admin of namespace ("": a
// global admin); NotFound for a namespace the caller may not read.
func (h *handler) webhookScope(r *http.Request, namespace string) (string, error) {
	if namespace == "" {
		return "", h.require(r, registry.ScopeAdmin, "")
	}
	ns, err := registry.ParseNamespace(namespace)
	if err != nil {
		return "", err
	}
	if ok, err := h.Access.CanRead(r.Context(), auth.FromContext(r.Context()), ns); err != nil || !ok {
		if err != nil {
			return "", err
		}
		return "", registry.Errorf(registry.NotFound, "namespace %q not found", ns)
	}
	return ns, h.require(r, registry.ScopeAdmin, ns)
}

// webhookParam returns the webhook of the {webhook_id} path value if the
// caller administers its namespace; NotFound for one it may not read.
func (h *handler) webhookParam(r *http.Request) (registry.Webhook, error) {
	id, err := registry.ParseWebhookID(r.PathValue("webhook_id"))
	if err != nil {
		return registry.Webhook{}, err
	}
	w, err := h.Index.GetWebhook(r.Context(), id)
	if err != nil {
		return registry.Webhook{}, err
	}
	if w.Namespace != "" {
		if ok, err := h.Access.CanRead(r.Context(), auth.FromContext(r.Context()), w.Namespace); err != nil || !ok {
			if err != nil {
				return registry.Webhook{}, err
			}
			return registry.Webhook{}, registry.Errorf(registry.NotFound, "webhook %s not found", id)
		}
	}
	return w, h.require(r, registry.ScopeAdmin, w.Namespace)
}

func (h *handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	ns, err := h.webhookScope(r, r.URL.Query().Get(apispec.WebhookNamespaceParam))
	if err != nil {
		return err
	}
	hooks, err := h.Index.ListWebhooks(r.Context(), ns)
	if err != nil {
		return err
	}
	out := apispec.WebhookList{Webhooks: make([]apispec.Webhook, 0, len(hooks))}
	for _, hk := range hooks {
		out.Webhooks = append(out.Webhooks, webhookDoc(hk))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// newWebhookSecret returns a generated secret: "whsec_" and 32 random
// bytes in hex.
func newWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// checkWebhook validates the URL, the filter and the secret of hk.
func (h *handler) checkWebhook(hk registry.Webhook) error {
	if err := registry.CheckWebhookURL(hk.URL, h.WebhookURLs); err != nil {
		return err
	}
	if err := registry.CheckEventFilter(hk.Events); err != nil {
		return err
	}
	if err := registry.DescriptionLimit.CheckText(hk.Description); err != nil {
		return err
	}
	return registry.CheckWebhookSecret(hk.Secret)
}

func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req apispec.CreateWebhookRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	ns, err := h.webhookScope(r, req.Namespace)
	if err != nil {
		return err
	}
	hk := registry.Webhook{
		ID: webhook.NewID("wh_"), Namespace: ns, URL: req.URL, Events: req.Events, Secret: req.Secret, Active: true,
		Description: req.Description, CreatedAt: h.Now().UTC(), CreatedBy: auth.FromContext(r.Context()).Actor(),
	}
	if req.Active != nil {
		hk.Active = *req.Active
	}
	if hk.Secret == "" {
		hk.Secret = newWebhookSecret()
	}
	if err := h.checkWebhook(hk); err != nil {
		return err
	}
	existing, err := h.Index.ListWebhooks(r.Context(), ns)
	if err != nil {
		return err
	}
	if len(existing) >= registry.MaxWebhooksPerNamespace {
		return registry.Errorf(registry.Conflict, "%s has %d webhooks, the most it may have: delete one first", webhookOwner(ns), len(existing))
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditWebhookCreate, Namespace: ns, Target: hk.ID, Details: describeWebhook(hk)})
	if err := h.Index.CreateWebhook(store.WithEffects(r.Context(), fx), hk); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	doc := webhookDoc(hk)
	doc.Secret = hk.Secret // shown once
	return httpjson.Write(w, http.StatusCreated, doc)
}

func (h *handler) getWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.webhookParam(r)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, webhookDoc(hk))
}

func (h *handler) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.webhookParam(r)
	if err != nil {
		return err
	}
	var req apispec.UpdateWebhookRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Secret != nil && req.RotateSecret {
		return registry.Errorf(registry.Invalid, "give a secret or ask to rotate it, not both")
	}
	shown := ""
	if req.URL != nil {
		hk.URL = *req.URL
	}
	if req.Events != nil {
		hk.Events = *req.Events
	}
	if req.Description != nil {
		hk.Description = *req.Description
	}
	if req.Active != nil {
		hk.Active = *req.Active
		if hk.Active {
			hk.DisabledReason = ""
		}
	}
	if req.Secret != nil {
		hk.Secret, shown = *req.Secret, *req.Secret
	}
	if req.RotateSecret {
		hk.Secret = newWebhookSecret()
		shown = hk.Secret
	}
	if err := h.checkWebhook(hk); err != nil {
		return err
	}
	details := describeWebhook(hk)
	if shown != "" {
		details += ", new secret"
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditWebhookUpdate, Namespace: hk.Namespace, Target: hk.ID, Details: details})
	if err := h.Index.UpdateWebhook(store.WithEffects(r.Context(), fx), hk); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	doc := webhookDoc(hk)
	doc.Secret = shown
	return httpjson.Write(w, http.StatusOK, doc)
}

func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.webhookParam(r)
	if err != nil {
		return err
	}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditWebhookDelete, Namespace: hk.Namespace, Target: hk.ID, Details: "url " + hk.URL})
	if err := h.Index.DeleteWebhook(store.WithEffects(r.Context(), fx), hk.ID); err != nil {
		return err
	}
	h.done(r.Context(), fx)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testWebhook enqueues a ping event for one webhook (active or not) and
// answers its pending delivery.
func (h *handler) testWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.webhookParam(r)
	if err != nil {
		return err
	}
	now := h.Now()
	em := h.Events
	if em == nil {
		em = webhook.NewEmitter(webhook.EmitterOptions{PublicURL: h.PublicURL})
	}
	p := em.Payload(webhook.Event{Type: registry.EventPing, Namespace: hk.Namespace, Actor: auth.FromContext(r.Context()).Actor()}, webhook.NewID("ev_"), now)
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	id := webhook.NewID("dl_")
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditWebhookTest, Namespace: hk.Namespace, Target: hk.ID, Details: "delivery " + id})
	if err := h.Index.EnqueueDelivery(store.WithEffects(r.Context(), fx), hk.ID, id, registry.WebhookEvent{ID: p.ID, Type: p.Type, Namespace: hk.Namespace, Time: p.Time, Payload: body}); err != nil {
		return err
	}
	h.Events.Wake()
	h.done(r.Context(), fx)
	d, err := h.Index.GetWebhookDelivery(r.Context(), hk.ID, id)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusAccepted, deliveryDoc(d, false))
}

func (h *handler) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.webhookParam(r)
	if err != nil {
		return err
	}
	limit := defaultDeliveryPage
	if s := r.URL.Query().Get(apispec.WebhookLimitParam); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxDeliveryPage {
			return registry.Errorf(registry.Invalid, "limit must be a number from 1 to %d, not %q", maxDeliveryPage, registry.Elide(s))
		}
		limit = n
	}
	ds, err := h.Index.ListWebhookDeliveries(r.Context(), hk.ID, limit)
	if err != nil {
		return err
	}
	out := apispec.WebhookDeliveryList{Deliveries: make([]apispec.WebhookDelivery, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryDoc(d, false))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

// deliveryParam returns the delivery of the path of a webhook the caller
// administers.
func (h *handler) deliveryParam(r *http.Request) (registry.Webhook, registry.WebhookDelivery, error) {
	hk, err := h.webhookParam(r)
	if err != nil {
		return hk, registry.WebhookDelivery{}, err
	}
	id, err := registry.ParseDeliveryID(r.PathValue("delivery_id"))
	if err != nil {
		return hk, registry.WebhookDelivery{}, err
	}
	d, err := h.Index.GetWebhookDelivery(r.Context(), hk.ID, id)
	return hk, d, err
}

func (h *handler) getWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	_, d, err := h.deliveryParam(r)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, deliveryDoc(d, true))
}

// redeliverWebhook enqueues a new delivery of a delivery's event, due at
// once, to an active webhook.
func (h *handler) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, d, err := h.deliveryParam(r)
	if err != nil {
		return err
	}
	if !hk.Active {
		return registry.Errorf(registry.Conflict, "webhook %s is inactive: activate it first (trove webhook update --active=true)", hk.ID)
	}
	id := webhook.NewID("dl_")
	e := registry.WebhookEvent{ID: d.EventID, Type: d.EventType, Namespace: hk.Namespace, Time: h.Now(), Payload: d.Payload}
	fx := h.effects(r, registry.AuditEvent{Action: registry.AuditWebhookRedeliver, Namespace: hk.Namespace, Target: hk.ID,
		Details: "delivery " + d.ID + " as " + id + ", event " + d.EventID})
	if err := h.Index.EnqueueDelivery(store.WithEffects(r.Context(), fx), hk.ID, id, e); err != nil {
		return err
	}
	h.Events.Wake()
	h.done(r.Context(), fx)
	nd, err := h.Index.GetWebhookDelivery(r.Context(), hk.ID, id)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusAccepted, deliveryDoc(nd, false))
}

// webhookDoc is the API document of a webhook, without its secret.
func webhookDoc(w registry.Webhook) apispec.Webhook {
	events := w.Events
	if events == nil {
		events = []string{}
	}
	return apispec.Webhook{ID: w.ID, Namespace: w.Namespace, URL: w.URL, Events: events, Active: w.Active, Description: w.Description,
		CreatedAt: w.CreatedAt, CreatedBy: w.CreatedBy, DisabledReason: w.DisabledReason}
}

// deliveryDoc is the API document of a delivery; full adds its attempts
// and payload.
func deliveryDoc(d registry.WebhookDelivery, full bool) apispec.WebhookDelivery {
	doc := apispec.WebhookDelivery{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, EventType: d.EventType, State: d.State,
		Attempts: d.Attempts, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt}
	if !d.NextAttempt.IsZero() {
		next := d.NextAttempt
		doc.NextAttempt = &next
	}
	if !full {
		return doc
	}
	doc.Log = []apispec.WebhookAttempt{}
	for _, a := range d.Log {
		doc.Log = append(doc.Log, apispec.WebhookAttempt{N: a.N, At: a.At, Status: a.Status, DurationMS: a.Duration.Milliseconds(),
			Error: a.Error, Response: a.Response})
	}
	var p apispec.WebhookPayload
	if json.Unmarshal(d.Payload, &p) == nil {
		doc.Payload = &p
	}
	return doc
}

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
