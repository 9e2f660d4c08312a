package audit

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
)

func TestRecordFillsAndStores(t *testing.T) {
	ctx := context.Background()
	idx, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
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
