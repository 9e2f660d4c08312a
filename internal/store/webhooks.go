package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
)

// Webhooks stores webhook subscriptions (registry.Webhook), the events
// they are sent and the outbox of their deliveries, shared by every
// replica (docs/webhooks.md). The store keeps what it is given: the
// caller validates URLs, filters and secrets.
//
// Deleting a webhook deletes its deliveries and their attempts; deleting
// a namespace deletes its webhooks.
type Webhooks interface {
	// CreateWebhook stores w. NotFound if its namespace (not "") does not
	// exist; Conflict if its ID is taken.
	CreateWebhook(ctx context.Context, w registry.Webhook) error
	// GetWebhook returns the webhook id, or NotFound.
	GetWebhook(ctx context.Context, id string) (registry.Webhook, error)
	// ListWebhooks returns the webhooks of namespace ("" for the global
	// ones) ordered by CreatedAt then ID. An unknown namespace has none.
	ListWebhooks(ctx context.Context, namespace string) ([]registry.Webhook, error)
	// UpdateWebhook changes the webhook id atomically: in one write
	// transaction it reads the webhook, locked against every other write
	// of it (a concurrent update, a delivery deactivating it), calls
	// change with it, stores the URL, Events, Active, Description, Secret
	// and DisabledReason change left in it and returns the webhook as
	// stored. Concurrent updates of different fields therefore lose
	// none. change must not block; it may be called again if the
	// transaction is retried. An error of change is returned with nothing
	// stored. NotFound if the webhook does not exist. The effects the
	// context carries are bound (Effects.Bind), in the transaction, to
	// the registry.Webhook about to be stored.
	UpdateWebhook(ctx context.Context, id string, change func(*registry.Webhook) error) (registry.Webhook, error)
	// DeleteWebhook removes the webhook id with its deliveries. NotFound
	// if it does not exist.
	DeleteWebhook(ctx context.Context, id string) error

	// EnqueueEvent stores e and, in the same transaction, one pending
	// delivery (due at e.Time) for every active webhook of e.Namespace
	// and every active global webhook whose filter matches e.Type
	// (registry.Webhook.Wants), with IDs from newID. It returns the
	// number of deliveries; with none the event is not stored, and no
	// write transaction is taken (the common case costs one read).
	// Conflict if e.ID is taken by a stored event.
	EnqueueEvent(ctx context.Context, e registry.WebhookEvent, newID func() string) (int, error)
	// EnqueueDelivery stores e (unless its ID is stored already) and one
	// pending delivery of it to the webhook webhookID with the ID id, due
	// at e.Time, whatever the webhook's filter and active flag (a test
	// event, a redelivery). NotFound if the webhook does not exist.
	EnqueueDelivery(ctx context.Context, webhookID, id string, e registry.WebhookEvent) error

	// ClaimDeliveries leases to owner, until now+lease, at most limit
	// pending deliveries that are due (NextAttempt <= now) and not leased
	// to anyone until after now, oldest due first, and returns them with
	// their Payload. Of concurrent calls (on every replica) each delivery
	// goes to one owner only: a delivery is attempted by one worker at a
	// time as long as an attempt lasts less than its lease.
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]registry.WebhookDelivery, error)
	// FinishAttempt records attempt a of delivery id, which owner must
	// still lease (Conflict otherwise: the lease expired and another
	// worker may have taken it), and releases it: pending again at next
	// if next is not zero, otherwise finished in state (succeeded or
	// failed). a.N is set to the delivery's attempt count plus one.
	// disable, if not "", also deactivates the delivery's webhook with
	// that reason.
	FinishAttempt(ctx context.Context, id, owner string, a registry.WebhookAttempt, next time.Time, state, disable string) error
	// ListWebhookDeliveries returns the newest deliveries of a webhook,
	// newest first, at most limit, without Log and Payload.
	ListWebhookDeliveries(ctx context.Context, webhookID string, limit int) ([]registry.WebhookDelivery, error)
	// GetWebhookDelivery returns a delivery of a webhook with its Log and
	// Payload, or NotFound (also for a delivery of another webhook).
	GetWebhookDelivery(ctx context.Context, webhookID, id string) (registry.WebhookDelivery, error)
	// PruneWebhookDeliveries removes the finished deliveries last updated
	// before before, with their attempts, and the events left without a
	// delivery; it returns how many deliveries it removed.
	PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error)
}
