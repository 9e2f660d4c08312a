package config

import (
	"flag"
	"time"

	"trove.dev/trove/internal/registry"
)

// Defaults and bounds of the webhook settings.
const (
	DefaultWebhookTimeout   = 10 * time.Second
	DefaultWebhookAttempts  = 10
	DefaultWebhookRetention = 30 * 24 * time.Hour
	MaxWebhookAttempts      = 20
)

// Webhooks configures the delivery of events to webhooks
// (docs/webhooks.md).
type Webhooks struct {
	// AllowPrivate lets webhooks target loopback, private, link-local and
	// other non-public addresses; refused by default (SSRF guard).
	AllowPrivate bool
	// AllowHTTP accepts http:// webhook URLs; https:// only by default.
	AllowHTTP bool
	// Timeout bounds one delivery attempt.
	Timeout time.Duration
	// Attempts is how many times a delivery is tried.
	Attempts int
	// Retention is how long finished deliveries stay in the log.
	Retention time.Duration
}

// webhookFlags defines the webhook flags on fs.
func (c *Config) webhookFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Webhooks.AllowPrivate, "webhook-allow-private", false,
		"let webhooks reach loopback, private and link-local addresses (refused by default: a webhook could otherwise probe the internal network)")
	fs.BoolVar(&c.Webhooks.AllowHTTP, "webhook-allow-http", false, "accept http:// webhook URLs (https:// only by default)")
	fs.DurationVar(&c.Webhooks.Timeout, "webhook-timeout", DefaultWebhookTimeout, "how long one webhook delivery attempt may take")
	fs.IntVar(&c.Webhooks.Attempts, "webhook-attempts", DefaultWebhookAttempts, "how many times a webhook delivery is tried (with exponential backoff, about 21 hours for 10)")
	fs.DurationVar(&c.Webhooks.Retention, "webhook-retention", DefaultWebhookRetention, "how long finished webhook deliveries are kept in the delivery log")
}

// validate checks the webhook settings.
func (w Webhooks) validate() []error {
	var errs []error
	if w.Timeout < time.Second || w.Timeout > 5*time.Minute {
		errs = append(errs, registry.Errorf(registry.Invalid, "--webhook-timeout must be between 1s and 5m, got %s", ShortDuration(w.Timeout)))
	}
	if w.Attempts < 1 || w.Attempts > MaxWebhookAttempts {
		errs = append(errs, registry.Errorf(registry.Invalid, "--webhook-attempts must be between 1 and %d, got %d", MaxWebhookAttempts, w.Attempts))
	}
	if w.Retention < time.Hour {
		errs = append(errs, registry.Errorf(registry.Invalid, "--webhook-retention must be at least 1h, got %s", ShortDuration(w.Retention)))
	}
	return errs
}
