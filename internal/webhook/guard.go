package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"trove.dev/trove/internal/registry"
)

// guardControl is a net.Dialer Control function that refuses connections
// to non-public addresses (registry.PublicAddr): it runs after the name
// was resolved, for every address tried, so a name that resolves (or is
// rebound) to a private address is refused too.
func guardControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook delivery refused: cannot parse address %q", address)
	}
	if !registry.PublicAddr(ap.Addr()) {
		return &GuardError{Addr: ap.Addr()}
	}
	return nil
}

// GuardError is the failure of a delivery refused by the SSRF guard.
type GuardError struct{ Addr netip.Addr }

// Error says which address was refused and how to allow it.
func (e *GuardError) Error() string {
	return fmt.Sprintf("refused to connect to the non-public address %s (serve with --webhook-allow-private to allow it)", e.Addr)
}

// NewDialer returns the dialer of deliveries: with the SSRF guard unless
// allowPrivate.
func NewDialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 10e9}
	if !allowPrivate {
		d.Control = guardControl
	}
	return d
}
