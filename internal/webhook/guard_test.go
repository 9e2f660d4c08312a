package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestGuardRefusesLoopbackDial dials a real loopback server through the
// guarded dialer: refused, and allowed with AllowPrivate.
func TestGuardRefusesLoopbackDial(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, err := NewDialer(false).DialContext(context.Background(), "tcp", srv.Listener.Addr().String())
	var g *GuardError
	if !errors.As(err, &g) || g.Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("guarded dial of %s = %v, want a GuardError", srv.URL, err)
	}
	// A name that resolves to loopback is refused too: the check runs
	// after resolution.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if _, err := NewDialer(false).DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port)); !errors.As(err, &g) {
		t.Errorf("guarded dial of localhost = %v, want a GuardError", err)
	}
	c, err := NewDialer(true).DialContext(context.Background(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("dial with AllowPrivate: %v", err)
	}
	c.Close()
}

func TestCheckWebhookURL(t *testing.T) {
	strict := registry.WebhookURLRules{}
	loose := registry.WebhookURLRules{AllowHTTP: true, AllowPrivate: true}
	long := "https://hooks.example/" + string(make([]byte, 3000))
	tests := map[string]struct {
		url           string
		strict, loose bool // accepted
	}{
		"https":             {"https://hooks.example/trove?x=1", true, true},
		"http":              {"http://hooks.example/trove", false, true},
		"file":              {"file:///etc/passwd", false, false},
		"ftp":               {"ftp://hooks.example/x", false, false},
		"javascript":        {"javascript:alert(1)", false, false},
		"userinfo":          {"https://user:pass@hooks.example/", false, false},
		"no host":           {"https:///x", false, false},
		"relative":          {"/hooks", false, false},
		"fragment":          {"https://hooks.example/#x", false, false},
		"loopback IP":       {"https://127.0.0.1/x", false, true},
		"IPv6 loopback":     {"https://[::1]:8443/x", false, true},
		"metadata":          {"http://169.254.169.254/latest", false, true},
		"private":           {"https://10.0.0.1/", false, true},
		"localhost":         {"https://localhost/", false, true},
		"localhost root":    {"https://localhost.:8443/", false, true},
		"localhost roots":   {"https://localhost../", false, true},
		"localhost case":    {"https://LocalHost/", false, true},
		"sub.localhost":     {"https://trove.localhost/", false, true},
		"sub.localhost.":    {"https://a.b.localhost./x", false, true},
		"short IPv4":        {"https://127.1/", false, true},
		"decimal IPv4":      {"https://2130706433/", false, true},
		"hex IPv4":          {"https://0x7f.0.0.1/", false, true},
		"octal IPv4":        {"https://0177.0.0.1/", false, true},
		"mapped IPv6":       {"https://[::ffff:127.0.0.1]/", false, true},
		"unspecified":       {"https://0.0.0.0/", false, true},
		"public root":       {"https://hooks.example./x", true, true},
		"digit label":       {"https://1password.example/", true, true},
		"hex-like name":     {"https://cafe.example/", true, true},
		"public IP":         {"https://93.184.215.14/", true, true},
		"too long":          {long, false, false},
		"control character": {"https://hooks.example/\n", false, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if err := registry.CheckWebhookURL(tt.url, strict); (err == nil) != tt.strict {
				t.Errorf("strict: %v, want accepted %v", err, tt.strict)
			}
			if err := registry.CheckWebhookURL(tt.url, loose); (err == nil) != tt.loose {
				t.Errorf("loose: %v, want accepted %v", err, tt.loose)
			}
		})
	}
}
