package webhook

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

func TestPayload(t *testing.T) {
	public, _ := url.Parse("https://registry.example:8443/")
	e := NewEmitter(EmitterOptions{PublicURL: public})
	when := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	tests := map[string]struct {
		ev      Event
		subject apispec.WebhookEventSubject
		urls    apispec.WebhookEventURLs
	}{
		"module version": {Event{Type: registry.EventModuleRevoked, Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Reason: "broken"},
			apispec.WebhookEventSubject{Kind: "module", Address: "registry.example:8443/acme/net/aws", Name: "net", System: "aws"},
			apispec.WebhookEventURLs{UI: "https://registry.example:8443/modules/acme/net/aws/1.0.0",
				API: "https://registry.example:8443/api/v1/namespaces/acme/modules/net/aws/versions/1.0.0"}},
		"whole provider deleted": {Event{Type: registry.EventProviderDeleted, Namespace: "acme", Name: "cloud"},
			apispec.WebhookEventSubject{Kind: "provider", Address: "registry.example:8443/acme/cloud", Name: "cloud"}, apispec.WebhookEventURLs{}},
		"ping": {Event{Type: registry.EventPing, Namespace: "acme"}, apispec.WebhookEventSubject{}, apispec.WebhookEventURLs{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := e.Payload(tt.ev, "ev_1", when)
			if p.Subject != tt.subject || p.URLs != tt.urls || p.Type != tt.ev.Type || p.Version != tt.ev.Version || p.Reason != tt.ev.Reason ||
				p.Time != time.Date(2026, 1, 2, 2, 4, 5, 123456000, time.UTC) {
				t.Errorf("Payload = %+v", p)
			}
		})
	}
}

// failing is an Enqueuer that fails.
type failing struct{ calls int }

func (f *failing) EnqueueEvent(context.Context, registry.WebhookEvent, func() string) (int, error) {
	f.calls++
	return 0, errors.New("index down")
}

// recording records the events enqueued.
type recording struct{ got []registry.WebhookEvent }

func (r *recording) EnqueueEvent(_ context.Context, e registry.WebhookEvent, _ func() string) (int, error) {
	r.got = append(r.got, e)
	return 1, nil
}

func TestEmit(t *testing.T) {
	var nilEmitter *Emitter
	nilEmitter.Emit(t.Context(), nil, Event{Type: registry.EventProviderPublished}) // no panic
	f := &failing{}
	NewEmitter(EmitterOptions{Store: f}).Emit(t.Context(), nil, Event{Type: registry.EventProviderPublished})
	if f.calls != 1 {
		t.Errorf("Emit called EnqueueEvent %d times, want 1 (and no error surfaced)", f.calls)
	}
	rec := &recording{}
	woken := 0
	e := NewEmitter(EmitterOptions{Store: rec, Wake: func() { woken++ }})
	r := httptest.NewRequest("DELETE", "/", nil)
	r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Token: registry.Token{ID: "tok_1", User: "alice"}}))
	e.Emit(t.Context(), r, Event{Type: registry.EventModuleDeleted, Namespace: "acme", Name: "n", System: "s", Version: "1.0.0"})
	e.Emit(t.Context(), nil, Event{Type: registry.EventModuleDeleted, Namespace: "acme", Name: "n", System: "s"})
	if len(rec.got) != 2 || woken != 2 {
		t.Fatalf("enqueued %d, woke %d; want 2 and 2", len(rec.got), woken)
	}
	for i, want := range []string{`"actor":"user:alice"`, `"actor":"system"`} {
		if !contains(rec.got[i].Payload, want) || rec.got[i].Namespace != "acme" || rec.got[i].Type != registry.EventModuleDeleted {
			t.Errorf("event %d = %s, want %s", i, rec.got[i].Payload, want)
		}
	}
	if rec.got[0].ID == rec.got[1].ID {
		t.Errorf("two events share the ID %s", rec.got[0].ID)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

func TestAddAndDone(t *testing.T) {
	rec := &recording{}
	woken := 0
	e := NewEmitter(EmitterOptions{Store: rec, Wake: func() { woken++ }})
	r := httptest.NewRequest("DELETE", "/", nil)
	r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Token: registry.Token{ID: "tok_1", User: "alice"}}))

	// Add fixes the event before the write and enqueues nothing.
	fx := &store.Effects{}
	e.Add(t.Context(), fx, r, Event{Type: registry.EventProviderDeleted, Namespace: "acme", Name: "cloud", Version: "1.0.0"})
	if len(fx.Events) != 1 || fx.NewID == nil || !contains(fx.Events[0].Payload, `"actor":"user:alice"`) ||
		!strings.HasPrefix(fx.Events[0].ID, "ev_") || fx.Events[0].Time.IsZero() || len(rec.got) != 0 {
		t.Fatalf("after Add: effects %+v, enqueued %d; want one complete event, nothing enqueued", fx.Events, len(rec.got))
	}
	// Taken by a write that enqueued a delivery: Done only wakes.
	fx.Claim()
	fx.Commit(1)
	e.Done(t.Context(), fx)
	if len(rec.got) != 0 || woken != 1 {
		t.Errorf("Done of taken effects: enqueued %d, woke %d; want 0 and 1", len(rec.got), woken)
	}
	// Not taken (an index without effects): Done enqueues the same event.
	fx2 := &store.Effects{}
	e.Add(t.Context(), fx2, nil, Event{Type: registry.EventModuleDeleted, Namespace: "acme", Name: "n", System: "s"})
	e.Done(t.Context(), fx2)
	if len(rec.got) != 1 || rec.got[0].ID != fx2.Events[0].ID || woken != 2 {
		t.Errorf("Done of untaken effects: enqueued %+v, woke %d; want %s and 2", rec.got, woken, fx2.Events[0].ID)
	}
}
