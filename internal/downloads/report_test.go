package downloads

import (
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

func TestReport(t *testing.T) {
	rec := func(version, day, consumer, client, cv string, n int64) registry.ConsumerCount {
		return registry.ConsumerCount{Version: version, Day: day, Consumer: consumer, Client: client, ClientVersion: cv, Count: n}
	}
	records := []registry.ConsumerCount{
		rec("1.0.0", "2026-11-27", "user:alice", "terraform", "1.9.5", 2),
		rec("1.2.0", "2026-11-28", "user:alice", "opentofu", "1.12.6", 1),
		rec("2.0.0", "2026-11-28", "ci:acme/infra (deploy.yml)", "opentofu", "1.12.6", 5),
		rec("1.0.0", "2026-10-01", "user:old", "terraform", "1.5.0", 9), // before the window
		rec("1.10.0", "2026-11-28", "anonymous", "other", "", 1),
	}
	r, err := Report(records, "2026-11-01", "2026-11-28", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Downloads != 9 || len(r.Consumers) != 3 {
		t.Fatalf("report %+v; want 9 downloads by 3 consumers", r)
	}
	if c := r.Consumers[0]; c.Consumer != "ci:acme/infra (deploy.yml)" || c.Downloads != 5 {
		t.Errorf("first consumer %+v, want the pipeline (most downloads)", c)
	}
	if c := r.Consumers[1]; c.Consumer != "user:alice" || c.LastSeen != "2026-11-28" || len(c.Versions) != 2 || c.Versions[0] != "1.2.0" ||
		len(c.Clients) != 2 || c.Clients[0] != "opentofu 1.12.6" || c.Clients[1] != "terraform 1.9.5" {
		t.Errorf("alice %+v", c)
	}
	if c := r.Clients[0]; c.Client != "opentofu" || c.Version != "1.12.6" || c.Downloads != 6 {
		t.Errorf("client mix %+v; want opentofu 1.12.6 first with 6", r.Clients)
	}
	if len(r.Daily) != 4 || r.Daily[0].Day != "2026-11-27" || r.Daily[1].Version != "1.2.0" || r.Daily[2].Version != "1.10.0" {
		t.Errorf("daily %+v; want by day, then by version (1.2.0 before 1.10.0)", r.Daily)
	}

	r, err = Report(records, "2026-11-01", "2026-11-28", "< 2.0")
	if err != nil || r.Downloads != 4 || len(r.Consumers) != 2 {
		t.Errorf("report of < 2.0: %+v, %v; want 4 downloads by alice and anonymous", r, err)
	}
	if _, err := Report(records, "2026-11-01", "2026-11-28", "nonsense"); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Report with a bad constraint: %v, want Invalid", err)
	}
	if r, err := Report(nil, "2026-11-01", "2026-11-28", ""); err != nil || r.Consumers == nil || r.Clients == nil || r.Daily == nil {
		t.Errorf("empty report %+v, %v; want empty lists, not null", r, err)
	}
}

func TestConsumerWindow(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	since, until, err := ConsumerWindow(now, 30)
	if err != nil || since != "2026-10-30" || until != "2026-11-28" {
		t.Errorf("ConsumerWindow(30) = %s, %s, %v; want 2026-10-30 to 2026-11-28", since, until, err)
	}
	if since, _, _ := ConsumerWindow(now, 1); since != "2026-11-28" {
		t.Errorf("a window of 1 day starts %s, want today", since)
	}
	for _, bad := range []int{0, -1, registry.MaxConsumerDays + 1} {
		if _, _, err := ConsumerWindow(now, bad); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("ConsumerWindow(%d): %v, want Invalid", bad, err)
		}
	}
}
