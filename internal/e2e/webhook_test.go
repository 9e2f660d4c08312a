package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/webhook"
)

// TestWebhookEvents runs a real trove serve (allowed to reach loopback
// receivers), subscribes a local receiver with the CLI, publishes a
// provider version and a module version, deprecates and revokes the
// provider version: the receiver gets the four events in order, each
// signed with the webhook's secret, and the CLI's delivery log shows
// them delivered.
func TestWebhookEvents(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"), "--webhook-allow-private", "--webhook-allow-http")
	key, publishToken := setupNamespace(t, srv)

	type request struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var got []request
	arrived := make(chan struct{}, 16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Header.Clone(), body})
		mu.Unlock()
		arrived <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()

	const secret = "e2e-webhook-secret-0123456789"
	secretFile := writeFile(t, t.TempDir(), "secret", []byte(secret+"\n"))
	out := srv.mustCLI(t, srv.AdminToken, "webhook", "create", namespace, "--url", recv.URL+"/trove",
		"--events", "provider.*,module.published", "--secret-file", secretFile, "--description", "e2e")
	if !strings.HasPrefix(out, "Created webhook wh_") || strings.Contains(out, secret) {
		t.Fatalf("trove webhook create printed %q", out)
	}
	hookID := strings.Fields(out)[2]

	publish(t, srv, publishToken, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	srv.mustCLI(t, publishToken, "module", "publish", namespace+"/"+moduleName+"/"+moduleSystem, "1.0.0", writeModuleDir(t, moduleName, "1.0.0", ""))
	srv.mustCLI(t, publishToken, "provider", "deprecate", namespace+"/"+providerType, "1.0.0", "--reason", "use 2.x")
	srv.mustCLI(t, srv.AdminToken, "provider", "revoke", namespace+"/"+providerType, "1.0.0", "--reason", "broken build")

	deadline := time.After(2 * time.Minute) // a stuck delivery fails the test rather than hanging it
	for i := 0; i < 4; i++ {
		select {
		case <-arrived:
		case <-deadline:
			t.Fatalf("the receiver got %d of 4 events", i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	type want struct{ typ, kind, name, version, reason string }
	wants := []want{
		{"provider.published", "provider", providerType, "1.0.0", ""},
		{"module.published", "module", moduleName, "1.0.0", ""},
		{"provider.deprecated", "provider", providerType, "1.0.0", "use 2.x"},
		{"provider.revoked", "provider", providerType, "1.0.0", "broken build"},
	}
	for i, w := range wants {
		r := got[i]
		if err := webhook.Verify(secret, r.header.Get(apispec.HeaderSignature), r.body, time.Now(), 10*time.Minute); err != nil {
			t.Errorf("event %d: signature %q: %v", i, r.header.Get(apispec.HeaderSignature), err)
		}
		var p apispec.WebhookPayload
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatalf("event %d: %v\n%s", i, err, r.body)
		}
		if p.Type != w.typ || p.Subject.Kind != w.kind || p.Subject.Name != w.name || p.Version != w.version || p.Reason != w.reason ||
			p.Namespace != namespace || p.ID != r.header.Get(apispec.HeaderEvent) || r.header.Get(apispec.HeaderEventType) != w.typ ||
			!strings.HasPrefix(p.Subject.Address, moduleHost+"/"+namespace+"/") || !strings.HasPrefix(p.URLs.UI, srv.Addr) || p.Actor == "" {
			t.Errorf("event %d = %s, want %+v", i, r.body, w)
		}
	}
	if len(got) != 4 {
		t.Errorf("the receiver got %d requests, want 4", len(got))
	}
	// The receiver answered the last one; its attempt is recorded just
	// after.
	var log string
	for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		log = srv.mustCLI(t, srv.AdminToken, "webhook", "deliveries", hookID)
		if !strings.Contains(log, "pending") || time.Now().After(end) {
			break
		}
	}
	if n := strings.Count(log, "succeeded"); n != 4 {
		t.Errorf("trove webhook deliveries shows %d succeeded deliveries, want 4:\n%s", n, log)
	}
}
