package audit

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

func TestRecordFillsAndStores(t *testing.T) {
	ctx := context.Background()
	idx := sqlitetest.NewIndex(t)
	var logged bytes.Buffer
	rec := New(idx, slog.New(slog.NewTextHandler(&logged, nil)))

	tests := map[string]struct {
		remote    string
		principal auth.Principal
		event     registry.AuditEvent
		actor     string
		source    string
	}{
		"service token": {"192.0.2.7:5555", auth.Principal{Token: registry.Token{ID: "tok_1"}},
			registry.AuditEvent{Action: "token.revoke", Target: "tok_2"}, "token:tok_1", "192.0.2.7"},
		"personal token over IPv6": {"[2001:db8::1]:443", auth.Principal{Token: registry.Token{ID: "tok_3", User: "alice"}},
			registry.AuditEvent{Action: "membership.set"}, "user:alice", "2001:db8::1"},
		"anonymous": {"192.0.2.8:1", auth.Principal{}, registry.AuditEvent{Action: "login.failure"}, "anonymous", "192.0.2.8"},
		"explicit actor kept": {"192.0.2.9:1", auth.Principal{Token: registry.Token{ID: "tok_4"}},
			registry.AuditEvent{Action: "login.failure", Actor: "mallory"}, "mallory", "192.0.2.9"},
	}
	for name, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		r = r.WithContext(auth.WithPrincipal(r.Context(), tt.principal))
		rec.Record(ctx, r, tt.event)
		got, err := idx.ListAudit(ctx, registry.AuditFilter{Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: ListAudit = %+v, %v", name, got, err)
		}
		if e := got[0]; e.Action != tt.event.Action || e.Actor != tt.actor || e.SourceAddr != tt.source || e.Time.IsZero() {
			t.Errorf("%s: stored %+v, want actor %q and source %q", name, e, tt.actor, tt.source)
		}
	}
	if !bytes.Contains(logged.Bytes(), []byte("action=membership.set")) {
		t.Errorf("events are not logged:\n%s", logged.String())
	}
}

func TestAddCommitsWithTheWriteAndDoneLogs(t *testing.T) {
	ctx := context.Background()
	idx := sqlitetest.NewIndex(t)
	var logged bytes.Buffer
	rec := New(idx, slog.New(slog.NewTextHandler(&logged, nil)))
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	r = r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Token: registry.Token{ID: "tok_1"}}))

	// Taken by the write: stored once, with the request's actor and
	// address, and logged by Done.
	fx := rec.Effects(r, registry.AuditEvent{Action: "namespace.create", Target: "acme"})
	if err := idx.CreateNamespace(store.WithEffects(ctx, fx), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if logged.Len() != 0 {
		t.Errorf("logged before Done:\n%s", logged.String())
	}
	rec.Done(ctx, fx)
	got, err := idx.ListAudit(ctx, registry.AuditFilter{Action: "namespace.create"})
	if err != nil || len(got) != 1 || got[0].Actor != "token:tok_1" || got[0].SourceAddr != "192.0.2.7" {
		t.Fatalf("ListAudit = %+v, %v; want the one event of token:tok_1 from 192.0.2.7", got, err)
	}
	if !bytes.Contains(logged.Bytes(), []byte("action=namespace.create")) {
		t.Errorf("Done did not log the event:\n%s", logged.String())
	}

	// Not taken (the write changed nothing): Done appends it on its own.
	fx = rec.Effects(r, registry.AuditEvent{Action: "namespace.update", Target: "acme"})
	rec.Done(store.WithEffects(ctx, fx), fx)
	if got, err := idx.ListAudit(ctx, registry.AuditFilter{Action: "namespace.update"}); err != nil || len(got) != 1 {
		t.Errorf("ListAudit after Done of untaken effects = %+v, %v; want the event once", got, err)
	}
}
