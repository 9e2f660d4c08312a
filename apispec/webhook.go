package apispec

import (
	"time"

	"trove.dev/trove/internal/registry"
)

// Routes of webhooks (docs/webhooks.md). A namespace's webhooks are
// managed by its admins, the global ones (no namespace) by global admins.
const (
	RouteWebhooks          = "/api/v1/webhooks"                                                 // GET list (?namespace=), POST create
	RouteWebhook           = "/api/v1/webhooks/{webhook_id}"                                    // GET, PATCH, DELETE
	RouteWebhookTest       = "/api/v1/webhooks/{webhook_id}/test"                               // POST: send a ping event
	RouteWebhookDeliveries = "/api/v1/webhooks/{webhook_id}/deliveries"                         // GET: newest first
	RouteWebhookDelivery   = "/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}"           // GET, with its attempts
	RouteWebhookRedeliver  = "/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver" // POST: a new delivery of its event
	WebhookNamespaceParam  = "namespace"                                                        // query of GET RouteWebhooks
	WebhookLimitParam      = "limit"                                                            // query of GET RouteWebhookDeliveries
)

// Headers of a webhook delivery.
const (
	// HeaderSignature is "t=<unix seconds>,v1=<hex HMAC-SHA256 of
	// "<t>.<body>" keyed with the webhook's secret>".
	HeaderSignature = "Trove-Signature"
	// HeaderEvent is the event's ID, the same in every delivery of it.
	HeaderEvent = "Trove-Event"
	// HeaderEventType is the event's type, such as provider.published.
	HeaderEventType = "Trove-Event-Type"
	// HeaderDelivery is the delivery's ID (a redelivery has a new one).
	HeaderDelivery = "Trove-Delivery"
)

// Webhook is a subscription of a URL to events.
type Webhook struct {
	ID string `json:"id"`
	// Namespace is "" for a global webhook (every namespace's events).
	Namespace string `json:"namespace"`
	URL       string `json:"url"`
	// Events are the event types (or "provider.*", "module.*", "*") it
	// receives; empty means every event.
	Events      []string  `json:"events"`
	Active      bool      `json:"active"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
	// DisabledReason says why Trove deactivated it (its URL answered 410
	// Gone).
	DisabledReason string `json:"disabled_reason,omitempty"`
	// Secret is shown once, in the answer of the create request or of an
	// update that rotates it.
	Secret string `json:"secret,omitempty"`
}

// CreateWebhookRequest is the body of POST RouteWebhooks. Secret is
// generated when empty; Active defaults to true.
type CreateWebhookRequest struct {
	Namespace   string   `json:"namespace,omitempty"`
	URL         string   `json:"url"`
	Events      []string `json:"events,omitempty"`
	Secret      string   `json:"secret,omitempty"`
	Active      *bool    `json:"active,omitempty"`
	Description string   `json:"description,omitempty"`
}

// UpdateWebhookRequest is the body of PATCH RouteWebhook: the fields
// given replace the webhook's. RotateSecret generates a new secret,
// shown in the answer; activating a webhook clears its DisabledReason.
type UpdateWebhookRequest struct {
	URL          *string   `json:"url,omitempty"`
	Events       *[]string `json:"events,omitempty"`
	Secret       *string   `json:"secret,omitempty"`
	RotateSecret bool      `json:"rotate_secret,omitempty"`
	Active       *bool     `json:"active,omitempty"`
	Description  *string   `json:"description,omitempty"`
}

// WebhookList is the answer of GET RouteWebhooks, ordered by creation.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookDelivery is one event sent to one webhook.
type WebhookDelivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	// State is "pending", "succeeded" or "failed".
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAttempt *time.Time `json:"next_attempt_at,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// Log and Payload are in the answer of GET RouteWebhookDelivery only.
	Log     []WebhookAttempt `json:"log,omitempty"`
	Payload *WebhookPayload  `json:"payload,omitempty"`
}

// WebhookAttempt is one attempt of a delivery.
type WebhookAttempt struct {
	N          int       `json:"n"`
	At         time.Time `json:"at"`
	Status     int       `json:"status"` // 0: no answer
	DurationMS int64     `json:"duration_ms"`
	Error      string    `json:"error,omitempty"`
	Response   string    `json:"response,omitempty"` // the first KiB of the answer
}

// WebhookDeliveryList is the answer of GET RouteWebhookDeliveries.
type WebhookDeliveryList struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
}

// WebhookPayload is the JSON body of every webhook delivery: the stable,
// documented schema of an event (docs/webhooks.md). Fields are only ever
// added.
type WebhookPayload struct {
	// ID identifies the event; redeliveries carry the same ID.
	ID string `json:"id"`
	// Type is one of registry.EventTypes, or "ping".
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Namespace is the namespace of the subject.
	Namespace string              `json:"namespace"`
	Subject   WebhookEventSubject `json:"subject"`
	// Version is the version concerned; "" for an event of a whole
	// provider or module (a deletion of all its versions).
	Version string `json:"version,omitempty"`
	// Actor is who did it: "user:NAME", "token:ID" or "system".
	Actor string `json:"actor"`
	// Reason and Link are those of a deprecation or revocation.
	Reason string `json:"reason,omitempty"`
	Link   string `json:"link,omitempty"`
	// URLs point at the subject in the web UI and the API.
	URLs WebhookEventURLs `json:"urls"`
}

// WebhookEventSubject is what an event is about.
type WebhookEventSubject struct {
	// Kind is "provider", "module" or "mirrored_provider" (a mirror.* event) ("" for a ping).
	Kind string `json:"kind"`
	// Address is the provider's source address (HOST/NS/TYPE) or the
	// module's (HOST/NS/NAME/SYSTEM).
	Address string `json:"address"`
	// Name is the provider type or module name.
	Name   string `json:"name"`
	System string `json:"system,omitempty"`
}

// WebhookEventURLs are links to an event's subject.
type WebhookEventURLs struct {
	UI  string `json:"ui,omitempty"`
	API string `json:"api,omitempty"`
}

// Validate checks the limits of the request's fields; the server checks
// their meaning (URL rules, event types, secret).
func (r CreateWebhookRequest) Validate() error {
	if len(r.Events) > registry.MaxWebhookEvents {
		return registry.Errorf(registry.Invalid, "a webhook names at most %d event types, not %d", registry.MaxWebhookEvents, len(r.Events))
	}
	for _, e := range r.Events {
		if err := registry.WebhookEventLimit.Check(e); err != nil {
			return err
		}
	}
	if r.Namespace != "" {
		if err := registry.NamespaceLimit.Check(r.Namespace); err != nil {
			return err
		}
	}
	return firstError(registry.WebhookURLLimit.CheckText(r.URL), registry.WebhookSecretLimit.Check(r.Secret),
		registry.DescriptionLimit.CheckText(r.Description))
}

// Validate checks the limits of the fields given.
func (r UpdateWebhookRequest) Validate() error {
	c := CreateWebhookRequest{}
	if r.URL != nil {
		c.URL = *r.URL
	}
	if r.Events != nil {
		c.Events = *r.Events
	}
	if r.Secret != nil {
		c.Secret = *r.Secret
	}
	if r.Description != nil {
		c.Description = *r.Description
	}
	return c.Validate()
}
