package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// failingConsumers is a consumer-records reader that fails with err, as
// an unreachable index does.
type failingConsumers struct{ err error }

func (f failingConsumers) ConsumerDownloads(context.Context, registry.ConsumerQuery) ([]registry.ConsumerCount, error) {
	return nil, f.err
}

// TestConsumersReportFailure makes the consumer report fail after the
// rights were checked (on a real SQLite index): a publisher gets the
// section saying the report is unavailable, and the failure is logged
// once at warn; a reader gets no section and nothing is logged.
func TestConsumersReportFailure(t *testing.T) {
	idx := sqlitetest.NewIndex(t)
	if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	publisher := auth.Principal{Token: registry.Token{ID: "p", Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopePublish}}}
	reader := auth.Principal{Token: registry.Token{ID: "r", Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopeRead}}}
	q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "acme", Name: "widget"}
	for name, cause := range map[string]error{
		"unavailable":  registry.Errorf(registry.Unavailable, "the index is not reachable"),
		"unclassified": errors.New("disk I/O error"),
	} {
		t.Run(name, func(t *testing.T) {
			var logged strings.Builder
			s := &Service{
				opt: Options{Operations: operations.New(operations.Options{Index: idx, Consumers: failingConsumers{cause}})},
				log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug})),
			}
			r := httptest.NewRequest("GET", "/providers/acme/widget?days=7", nil)
			d, err := s.consumers(r, &visit{p: publisher, sessionID: "s"}, q)
			if err != nil || d == nil {
				t.Fatalf("publisher: %+v, %v; want the section", d, err)
			}
			if d.Error != consumersUnavailable || len(d.Report.Consumers) != 0 || d.Command != "trove consumers acme/widget" || d.Days != "7" {
				t.Errorf("publisher: section %+v; want it to say the report is unavailable", d)
			}
			if n := strings.Count(logged.String(), "level=WARN"); n != 1 || strings.Count(logged.String(), "\n") != 1 || !strings.Contains(logged.String(), cause.Error()) {
				t.Errorf("logged %q; want the cause once at warn", logged.String())
			}

			logged.Reset()
			d, err = s.consumers(r, &visit{p: reader, sessionID: "s"}, q)
			if err != nil || d != nil || logged.Len() != 0 {
				t.Errorf("reader: %+v, %v, logged %q; want no section and nothing logged", d, err, logged.String())
			}
		})
	}
}
