package registry

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"trove.dev/trove/internal/netguard"
)

// Event types a webhook can subscribe to (docs/webhooks.md). A
// "*.deleted" event with a version is the deletion of that version, one
// without a version that of the whole provider or module.
const (
	EventProviderPublished    = "provider.published"
	EventProviderDeprecated   = "provider.deprecated"
	EventProviderUndeprecated = "provider.undeprecated"
	EventProviderRevoked      = "provider.revoked"
	EventProviderRestored     = "provider.restored"
	EventProviderDeleted      = "provider.deleted"
	EventModulePublished      = "module.published"
	EventModuleDeprecated     = "module.deprecated"
	EventModuleUndeprecated   = "module.undeprecated"
	EventModuleRevoked        = "module.revoked"
	EventModuleRestored       = "module.restored"
	EventModuleDeleted        = "module.deleted"
	// Approvals and denials of mirrored provider versions (global
	// webhooks only: a mirrored provider belongs to no namespace).
	EventMirrorApproved   = "mirror.approved"
	EventMirrorUnapproved = "mirror.unapproved"
	EventMirrorDenied     = "mirror.denied"
	EventMirrorUndenied   = "mirror.undenied"
	// EventPing is sent by `trove webhook test` to one webhook only,
	// whatever its filter.
	EventPing = "ping"
)

// EventTypes are the event types a filter may name, in documentation
// order.
var EventTypes = []string{
	EventProviderPublished, EventProviderDeprecated, EventProviderUndeprecated,
	EventProviderRevoked, EventProviderRestored, EventProviderDeleted,
	EventModulePublished, EventModuleDeprecated, EventModuleUndeprecated,
	EventModuleRevoked, EventModuleRestored, EventModuleDeleted,
	EventMirrorApproved, EventMirrorUnapproved, EventMirrorDenied, EventMirrorUndenied,
}

// Webhook is a subscription to the events of one namespace, or of every
// namespace when Namespace is "" (a global webhook, admins only).
type Webhook struct {
	ID        string
	Namespace string // "" for a global webhook
	URL       string
	// Events are the event types or patterns ("provider.*", "*") it
	// receives; none means every event.
	Events []string
	// Secret keys the HMAC-SHA256 signature of every delivery.
	Secret      string
	Active      bool
	Description string
	CreatedAt   time.Time
	CreatedBy   string
	// DisabledReason says why Trove deactivated it (a 410 Gone answer);
	// "" if it did not.
	DisabledReason string
}

// Wants reports whether the webhook receives events of type typ: it is
// active and its filter matches.
func (w Webhook) Wants(typ string) bool {
	return w.Active && EventFilterMatches(w.Events, typ)
}

// EventFilterMatches reports whether a filter (event types, "kind.*" or
// "*"; none means all) matches the event type typ.
func EventFilterMatches(filter []string, typ string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == "*" || f == typ || (strings.HasSuffix(f, ".*") && strings.HasPrefix(typ, strings.TrimSuffix(f, "*"))) {
			return true
		}
	}
	return false
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt
	DeliverySucceeded = "succeeded" // a 2xx answer
	DeliveryFailed    = "failed"    // attempts exhausted, or the webhook gone
)

// WebhookEvent is one event as stored: its JSON payload, byte for byte
// what every delivery sends.
type WebhookEvent struct {
	ID        string
	Type      string
	Namespace string
	Time      time.Time
	Payload   []byte
}

// WebhookDelivery is the sending of one event to one webhook, tried
// until it succeeds or its attempts are exhausted.
type WebhookDelivery struct {
	ID          string
	WebhookID   string
	EventID     string
	EventType   string
	State       string
	Attempts    int
	NextAttempt time.Time // zero once finished
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Attempts made, oldest first (only from GetWebhookDelivery).
	Log []WebhookAttempt
	// Payload is the event's JSON (only for claimed deliveries).
	Payload []byte
}

// WebhookAttempt records one attempt of a delivery.
type WebhookAttempt struct {
	N        int
	At       time.Time
	Status   int // HTTP status; 0 without an answer
	Duration time.Duration
	Error    string // why it failed; "" for a 2xx
	Response string // the answer's first bytes (MaxWebhookResponseExcerpt)
}

// Limits of webhooks.
const (
	MaxWebhookURLLength       = 2048
	MaxWebhookEvents          = 32
	MaxWebhookSecretLength    = 128
	MinWebhookSecretLength    = 16
	MaxWebhookResponseExcerpt = 1024
	MaxWebhookErrorLength     = 512
	// MaxWebhooksPerNamespace bounds the webhooks of a namespace (and the
	// global ones).
	MaxWebhooksPerNamespace = 20
)

// Limits of the fields of a webhook, for requests.
var (
	WebhookURLLimit    = Limit{"webhook URL", MaxWebhookURLLength}
	WebhookSecretLimit = Limit{"webhook secret", MaxWebhookSecretLength}
	WebhookEventLimit  = Limit{"event type", 32}
	WebhookIDLimit     = Limit{"webhook ID", 32}
	DeliveryIDLimit    = Limit{"delivery ID", 32}
)

var (
	webhookIDPattern  = regexp.MustCompile(`^wh_[0-9a-f]{16}$`)
	deliveryIDPattern = regexp.MustCompile(`^dl_[0-9a-f]{16}$`)
)

// ParseWebhookID checks a webhook ID: "wh_" and 16 lower-case hex digits.
func ParseWebhookID(s string) (string, error) {
	if err := WebhookIDLimit.Check(s); err != nil {
		return "", err
	}
	if !webhookIDPattern.MatchString(s) {
		return "", Errorf(Invalid, "invalid webhook ID %s: want the ID that trove webhook list shows, such as wh_0123456789abcdef", quote(s))
	}
	return s, nil
}

// ParseDeliveryID checks a delivery ID: "dl_" and 16 lower-case hex
// digits.
func ParseDeliveryID(s string) (string, error) {
	if err := DeliveryIDLimit.Check(s); err != nil {
		return "", err
	}
	if !deliveryIDPattern.MatchString(s) {
		return "", Errorf(Invalid, "invalid delivery ID %s: want an ID that trove webhook deliveries shows, such as dl_0123456789abcdef", quote(s))
	}
	return s, nil
}

// CheckEventFilter validates a webhook's event filter: known event types,
// "provider.*", "module.*" or "*", each once.
func CheckEventFilter(events []string) error {
	if len(events) > MaxWebhookEvents {
		return Errorf(Invalid, "a webhook names at most %d event types, not %d", MaxWebhookEvents, len(events))
	}
	for i, e := range events {
		if err := WebhookEventLimit.Check(e); err != nil {
			return err
		}
		if !slices.Contains(EventTypes, e) && e != "*" && e != "provider.*" && e != "module.*" && e != "mirror.*" {
			return Errorf(Invalid, "unknown event type %s: want one of %s, provider.*, module.*, mirror.* or *", quote(e), strings.Join(EventTypes, ", "))
		}
		if slices.Contains(events[:i], e) {
			return Errorf(Invalid, "event type %s is named twice", e)
		}
	}
	return nil
}

// CheckWebhookSecret validates a secret given by the user: 16 to 128
// printable ASCII characters.
func CheckWebhookSecret(s string) error {
	if err := WebhookSecretLimit.Check(s); err != nil {
		return err
	}
	if len(s) < MinWebhookSecretLength {
		return Errorf(Invalid, "a webhook secret has at least %d characters", MinWebhookSecretLength)
	}
	for _, c := range s {
		if c <= ' ' || c > '~' {
			return Errorf(Invalid, "a webhook secret is printable ASCII without spaces")
		}
	}
	return nil
}

// WebhookURLRules say which target URLs a Trove accepts.
type WebhookURLRules struct {
	// AllowHTTP accepts http:// URLs (https:// only otherwise).
	AllowHTTP bool
	// AllowPrivate accepts IP literals of loopback, private, link-local
	// and other non-public addresses. Host names are checked when they
	// are dialed (the delivery's SSRF guard), not here.
	AllowPrivate bool
}

// CheckWebhookURL validates a webhook's target URL: absolute https (http
// only if rules allow it), a host, no user information or fragment, at
// most MaxWebhookURLLength bytes, and no IP literal of a non-public
// address unless rules allow it.
func CheckWebhookURL(raw string, rules WebhookURLRules) error {
	if err := WebhookURLLimit.CheckText(raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Errorf(Invalid, "invalid webhook URL %s: it does not parse", quote(Elide(raw)))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && rules.AllowHTTP:
	case u.Scheme == "http":
		return Errorf(Invalid, "webhook URL %s is not https: deliveries carry signed events over TLS only (this Trove does not allow http)", quote(Elide(raw)))
	default:
		return Errorf(Invalid, "webhook URL %s: want an https:// URL", quote(Elide(raw)))
	}
	if u.User != nil {
		return Errorf(Invalid, "webhook URL must not contain user information: authenticate the delivery by its signature")
	}
	if u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return Errorf(Invalid, "webhook URL %s has no host", quote(Elide(raw)))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return Errorf(Invalid, "webhook URL must not have a fragment")
	}
	if rules.AllowPrivate {
		return nil
	}
	var he *netguard.HostError
	if err := netguard.CheckHost(u.Hostname()); errors.As(err, &he) {
		return Errorf(Invalid, "webhook URL %s %s: this Trove delivers to public addresses only", quote(Elide(raw)), he)
	}
	return nil
}

// PublicAddr reports whether ip is a public unicast address; the rule is
// netguard.Public, Trove's one SSRF guard.
func PublicAddr(ip netip.Addr) bool { return netguard.Public(ip) }

// PublicIP is PublicAddr of a net.IP.
func PublicIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && PublicAddr(a)
}

// Audit actions of webhooks.
const (
	AuditWebhookCreate    = "webhook.create"
	AuditWebhookUpdate    = "webhook.update"
	AuditWebhookDelete    = "webhook.delete"
	AuditWebhookRedeliver = "webhook.redeliver"
	AuditWebhookTest      = "webhook.test"
)

// Truncate returns s cut to at most max bytes, at a UTF-8 boundary, with
// invalid UTF-8 replaced, so that it can be stored as text.
func Truncate(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
