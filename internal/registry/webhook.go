package registry

import (
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
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
	// The name as a resolver reads it: case and the root's trailing dots
	// do not change which address it names.
	host := strings.TrimRight(strings.ToLower(strings.Trim(u.Hostname(), "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if !PublicAddr(ip) {
			return Errorf(Invalid, "webhook URL %s names the non-public address %s: this Trove delivers to public addresses only", quote(Elide(raw)), ip)
		}
		return nil
	}
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return Errorf(Invalid, "webhook URL %s names localhost: this Trove delivers to public addresses only", quote(Elide(raw)))
	}
	if numericHost(host) {
		return Errorf(Invalid, "webhook URL %s names the address %s in a non-standard form: write an IP address in dotted decimal (IPv4) or in brackets (IPv6), or use a host name", quote(Elide(raw)), quote(host))
	}
	return nil
}

// numericHost reports whether host could be read as an IPv4 address in one
// of the legacy forms resolvers accept (127.1, 0x7f.1, 2130706433, 0177.0.0.1):
// dot-separated parts of digits or 0x-prefixed hex digits only. Such names
// are refused rather than judged, as their meaning differs between
// resolvers.
func numericHost(host string) bool {
	for part := range strings.SplitSeq(host, ".") {
		digits := part
		if h, ok := strings.CutPrefix(part, "0x"); ok {
			digits = h
			if digits == "" {
				continue
			}
			if strings.Trim(digits, "0123456789abcdef") != "" {
				return false
			}
			continue
		}
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
	}
	return true
}

// nonPublic are the address ranges besides loopback, private, link-local,
// multicast and unspecified ones that PublicAddr refuses.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64, may reach IPv4 private ranges
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002::/16"),      // 6to4, may embed private IPv4
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("192.88.99.0/24"), // 6to4 relay anycast
	netip.MustParsePrefix("255.255.255.255/32"),
}

// PublicAddr reports whether ip is a public unicast address: not
// loopback, private (RFC 1918, fc00::/7), link-local, multicast,
// unspecified, carrier-grade NAT or another special-purpose range. An
// IPv4-mapped IPv6 address is judged as its IPv4 address.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

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
