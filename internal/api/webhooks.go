package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
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

// The rules of webhooks are operations.Webhooks, Webhook, CreateWebhook,
// UpdateWebhook, DeleteWebhook, TestWebhook, WebhookDeliveries,
// WebhookDelivery and RedeliverWebhook: these handlers decode, call and
// encode.

func (h *handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := h.Ops.Webhooks(r.Context(), actor(r), r.URL.Query().Get(apispec.WebhookNamespaceParam))
	if err != nil {
		return err
	}
	out := apispec.WebhookList{Webhooks: make([]apispec.Webhook, 0, len(hooks))}
	for _, hk := range hooks {
		out.Webhooks = append(out.Webhooks, webhookDoc(hk))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req apispec.CreateWebhookRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	hk, err := h.Ops.CreateWebhook(r.Context(), actor(r), operations.WebhookRequest{Namespace: req.Namespace, URL: req.URL,
		Events: req.Events, Secret: req.Secret, Active: req.Active, Description: req.Description})
	if err != nil {
		return err
	}
	doc := webhookDoc(hk)
	doc.Secret = hk.Secret // shown once
	return httpjson.Write(w, http.StatusCreated, doc)
}

func (h *handler) getWebhook(w http.ResponseWriter, r *http.Request) error {
	hk, err := h.Ops.Webhook(r.Context(), actor(r), r.PathValue("webhook_id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, webhookDoc(hk))
}

func (h *handler) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (operations.UpdateWebhook checks them
	// again).
	if _, err := h.Ops.Webhook(r.Context(), actor(r), r.PathValue("webhook_id")); err != nil {
		return err
	}
	var req apispec.UpdateWebhookRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	hk, shown, err := h.Ops.UpdateWebhook(r.Context(), actor(r), r.PathValue("webhook_id"), operations.WebhookChange{
		URL: req.URL, Events: req.Events, Description: req.Description, Active: req.Active, Secret: req.Secret, RotateSecret: req.RotateSecret})
	if err != nil {
		return err
	}
	doc := webhookDoc(hk)
	doc.Secret = shown
	return httpjson.Write(w, http.StatusOK, doc)
}

func (h *handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteWebhook(r.Context(), actor(r), r.PathValue("webhook_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testWebhook enqueues a ping event for one webhook (active or not) and
// answers its pending delivery.
func (h *handler) testWebhook(w http.ResponseWriter, r *http.Request) error {
	d, err := h.Ops.TestWebhook(r.Context(), actor(r), r.PathValue("webhook_id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusAccepted, deliveryDoc(d, false))
}

func (h *handler) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the query.
	if _, err := h.Ops.Webhook(r.Context(), actor(r), r.PathValue("webhook_id")); err != nil {
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
	ds, err := h.Ops.WebhookDeliveries(r.Context(), actor(r), r.PathValue("webhook_id"), limit)
	if err != nil {
		return err
	}
	out := apispec.WebhookDeliveryList{Deliveries: make([]apispec.WebhookDelivery, 0, len(ds))}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryDoc(d, false))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) getWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	_, d, err := h.Ops.WebhookDelivery(r.Context(), actor(r), r.PathValue("webhook_id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, deliveryDoc(d, true))
}

// redeliverWebhook enqueues a new delivery of a delivery's event, due at
// once, to an active webhook.
func (h *handler) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	d, err := h.Ops.RedeliverWebhook(r.Context(), actor(r), r.PathValue("webhook_id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusAccepted, deliveryDoc(d, false))
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
