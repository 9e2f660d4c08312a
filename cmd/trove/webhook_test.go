package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/trovetest"
)

// TestWebhookCommandsAgainstTrove creates, lists, shows, updates, tests
// and deletes a webhook with the CLI, follows the ping through the
// delivery log and redelivers it.
func TestWebhookCommandsAgainstTrove(t *testing.T) {
	s := trovetest.Start(t, trovetest.Options{WebhookReceivers: true})
	pings := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		pings <- r.Header.Get("Trove-Delivery")
	}))
	defer srv.Close()
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ok := func(args ...string) string {
		t.Helper()
		r := runTrove(t, admin, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	recv := func() string {
		t.Helper()
		select {
		case id := <-pings:
			return id
		case <-time.After(time.Minute): // a stuck delivery fails rather than hangs
			t.Fatal("no delivery reached the receiver")
			return ""
		}
	}
	ok("namespace", "create", "acme")
	out := ok("webhook", "create", "acme", "--url", srv.URL+"/hook", "--events", "provider.published,module.*", "--description", "chat")
	id := regexp.MustCompile(`wh_[0-9a-f]{16}`).FindString(out)
	if id == "" || !strings.Contains(out, "Signing secret (shown once") || !strings.Contains(out, "whsec_") {
		t.Fatalf("create printed %q", out)
	}
	if out := ok("webhook", "list", "acme"); !strings.Contains(out, id) || !strings.Contains(out, "provider.published,module.*") || strings.Contains(out, "whsec_") {
		t.Errorf("list printed %q", out)
	}
	if out := ok("webhook", "show", id); !strings.Contains(out, "namespace acme") || !strings.Contains(out, "chat") || strings.Contains(out, "whsec_") {
		t.Errorf("show printed %q", out)
	}
	out = ok("webhook", "test", id)
	dl := regexp.MustCompile(`dl_[0-9a-f]{16}`).FindString(out)
	if got := recv(); got != dl {
		t.Errorf("the receiver got delivery %q, want %q", got, dl)
	}
	out = ok("webhook", "redeliver", id, dl)
	if again := recv(); !strings.Contains(out, again) || again == dl {
		t.Errorf("redeliver printed %q, the receiver got %q", out, again)
	}
	if out := ok("webhook", "deliveries", id); strings.Count(out, "ping") != 2 {
		t.Errorf("deliveries printed %q, want two pings", out)
	}
	ok("webhook", "deliveries", id, dl) // its log, whatever its state now
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("a-secret-of-our-own-0123\n"), 0o600)
	if out := ok("webhook", "create", "--url", srv.URL, "--secret-file", secret); strings.Contains(out, "a-secret-of-our-own") || !strings.Contains(out, "every namespace") {
		t.Errorf("create with a secret file printed %q", out)
	}
	if out := ok("webhook", "update", id, "--active=false", "--rotate-secret"); !strings.Contains(out, "active: no") || !strings.Contains(out, "New signing secret") {
		t.Errorf("update printed %q", out)
	}
	ok("webhook", "delete", id)
	for _, args := range [][]string{
		{"webhook", "create", "acme"},
		{"webhook", "show", "wh_nope"},
		{"webhook", "deliveries", id, "dl_nope"},
		{"webhook", "deliveries", id, "--limit", "0"},
		{"webhook", "update", id, "--active", "maybe"},
		{"webhook", "create", "acme", "--url", "https://hooks.example", "--secret-file", secret + ".missing"},
	} {
		if r := runTrove(t, admin, "", args...); r.code == exitOK || r.stderr == "" {
			t.Errorf("trove %s: exit %d, stderr %q; want a failure", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := runTrove(t, admin, "", "webhook", "create", "acme", "--url", "file:///etc/passwd"); r.code == exitOK || !strings.Contains(r.stderr, "https") {
		t.Errorf("create with a file URL: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runTrove(t, admin, "", "webhook", "show", id); r.code == exitOK {
		t.Errorf("show after delete succeeded")
	}
}
