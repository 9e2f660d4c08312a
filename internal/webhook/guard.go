package webhook

import (
	"net"
	"time"

	"trove.dev/trove/internal/netguard"
)

// GuardError is the failure of a delivery refused by the SSRF guard
// (netguard): the address it would have reached is not public.
type GuardError = netguard.GuardError

// AllowPrivateFlag is the server flag that lets webhooks reach
// non-public addresses, named in the guard's errors.
const AllowPrivateFlag = "--webhook-allow-private"

// NewDialer returns the dialer of deliveries: with the SSRF guard
// (netguard.Guard: every address dialled, after resolution, must be
// public) unless allowPrivate.
func NewDialer(allowPrivate bool) *net.Dialer {
	return netguard.Guard{AllowPrivate: allowPrivate, Flag: AllowPrivateFlag}.Dialer(10 * time.Second)
}
