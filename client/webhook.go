package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/apispec"
)

// ListWebhooks returns the webhooks of a namespace, or the global ones
// for namespace "", ordered by creation (the namespace's admins; global
// admins for the global ones).
func (c *Client) ListWebhooks(ctx context.Context, namespace string) ([]apispec.Webhook, error) {
	var q url.Values
	if namespace != "" {
		q = url.Values{apispec.WebhookNamespaceParam: {namespace}}
	}
	var out apispec.WebhookList
	err := c.do(ctx, http.MethodGet, apispec.RouteWebhooks, nil, q, nil, &out)
	return out.Webhooks, err
}

// CreateWebhook creates a webhook and returns it with its secret, which
// is never shown again.
func (c *Client) CreateWebhook(ctx context.Context, req apispec.CreateWebhookRequest) (apispec.Webhook, error) {
	var out apispec.Webhook
	err := c.do(ctx, http.MethodPost, apispec.RouteWebhooks, nil, nil, req, &out)
	return out, err
}

// GetWebhook returns a webhook (without its secret).
func (c *Client) GetWebhook(ctx context.Context, id string) (apispec.Webhook, error) {
	var out apispec.Webhook
	err := c.do(ctx, http.MethodGet, apispec.RouteWebhook, params("webhook_id", id), nil, nil, &out)
	return out, err
}

// UpdateWebhook changes the fields req gives and returns the webhook,
// with its new secret if req set or rotated it.
func (c *Client) UpdateWebhook(ctx context.Context, id string, req apispec.UpdateWebhookRequest) (apispec.Webhook, error) {
	var out apispec.Webhook
	err := c.do(ctx, http.MethodPatch, apispec.RouteWebhook, params("webhook_id", id), nil, req, &out)
	return out, err
}

// DeleteWebhook deletes a webhook with its delivery log.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, apispec.RouteWebhook, params("webhook_id", id), nil, nil, nil)
}

// TestWebhook sends a ping event to a webhook and returns its delivery,
// pending.
func (c *Client) TestWebhook(ctx context.Context, id string) (apispec.WebhookDelivery, error) {
	var out apispec.WebhookDelivery
	err := c.do(ctx, http.MethodPost, apispec.RouteWebhookTest, params("webhook_id", id), nil, nil, &out)
	return out, err
}

// ListWebhookDeliveries returns the newest deliveries of a webhook,
// newest first, at most limit (0: the server's default, 50).
func (c *Client) ListWebhookDeliveries(ctx context.Context, id string, limit int) ([]apispec.WebhookDelivery, error) {
	var q url.Values
	if limit > 0 {
		q = url.Values{apispec.WebhookLimitParam: {strconv.Itoa(limit)}}
	}
	var out apispec.WebhookDeliveryList
	err := c.do(ctx, http.MethodGet, apispec.RouteWebhookDeliveries, params("webhook_id", id), q, nil, &out)
	return out.Deliveries, err
}

// GetWebhookDelivery returns a delivery with its attempts and payload.
func (c *Client) GetWebhookDelivery(ctx context.Context, id, deliveryID string) (apispec.WebhookDelivery, error) {
	var out apispec.WebhookDelivery
	err := c.do(ctx, http.MethodGet, apispec.RouteWebhookDelivery, params("webhook_id", id, "delivery_id", deliveryID), nil, nil, &out)
	return out, err
}

// RedeliverWebhook sends a delivery's event again, as a new delivery,
// which it returns.
func (c *Client) RedeliverWebhook(ctx context.Context, id, deliveryID string) (apispec.WebhookDelivery, error) {
	var out apispec.WebhookDelivery
	err := c.do(ctx, http.MethodPost, apispec.RouteWebhookRedeliver, params("webhook_id", id, "delivery_id", deliveryID), nil, nil, &out)
	return out, err
}
