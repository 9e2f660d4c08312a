// Package netguardtest helps test code guarded by netguard: a DNS server
// whose names resolve to the addresses a test chooses (loopback, say).
package netguardtest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// DNS starts a DNS server on loopback (UDP) for the test that answers A
// and AAAA queries from records (names in lower case, without the final
// dot) and returns a resolver (Go's own) that asks it, as it would ask
// the system's DNS server. Names in /etc/hosts are still read there.
func DNS(t testing.TB, records map[string][]netip.Addr) *net.Resolver {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels up to the zero byte, then type and class.
			i, name := 12, []string{}
			for i < len(q) && q[i] != 0 {
				l := int(q[i])
				if i+1+l > len(q) {
					break
				}
				name = append(name, string(q[i+1:i+1+l]))
				i += 1 + l
			}
			end := i + 5
			if end > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i+1:])
			resp := append([]byte{}, q[:end]...)
			resp[2], resp[3] = 0x81, 0x80 // response, recursion available, no error
			var answers [][]byte
			for _, a := range records[strings.ToLower(strings.Join(name, "."))] {
				if (qtype == 1) != a.Is4() {
					continue
				}
				rr := []byte{0xc0, 12, 0, byte(qtype), 0, 1, 0, 0, 0, 60, 0, byte(len(a.AsSlice()))}
				answers = append(answers, append(rr, a.AsSlice()...))
			}
			binary.BigEndian.PutUint16(resp[6:], uint16(len(answers)))
			resp[8], resp[9], resp[10], resp[11] = 0, 0, 0, 0
			for _, a := range answers {
				resp = append(resp, a...)
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}
