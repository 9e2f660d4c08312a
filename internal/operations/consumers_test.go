package operations_test

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestConsumerReport reads the consumers of a provider and a module as a
// publisher, then holds the report to its refusals: the rights first
// (whatever the days and versions asked for, so that a reader learns
// nothing from the answer), bad input after them.
func TestConsumerReport(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	today := registry.DayOf(e.now)
	provider := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	provider.Day, provider.Consumer, provider.Client, provider.ClientVersion = today, "ci:acme/infra (deploy.yml)", registry.ClientOpenTofu, "1.12.6"
	module := registry.ModuleDownload("acme", "net", "aws", "1.0.0")
	module.Day, module.Consumer, module.Client, module.ClientVersion = today, "user:bob", registry.ClientTerraform, "1.9.5"
	old := module
	old.Day = registry.DayOf(e.now.AddDate(0, 0, -40))
	if err := e.idx.AddDownloads(ctx, []registry.DownloadCount{{DownloadKey: provider, Count: 2}, {DownloadKey: module, Count: 1}, {DownloadKey: old, Count: 5}}); err != nil {
		t.Fatal(err)
	}
	providers := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "acme", Name: "widget"}
	modules := registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: "acme", Name: "net", System: "aws"}
	public := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "open", Name: "widget"}
	pat := e.user(t, "pat")
	r, err := e.ops.ConsumerReport(ctx, pat, providers, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Downloads != 2 || len(r.Consumers) != 1 || r.Consumers[0].Consumer != "ci:acme/infra (deploy.yml)" ||
		len(r.Clients) != 1 || r.Clients[0].Client != "opentofu" || r.Clients[0].Version != "1.12.6" || r.Until != today {
		t.Errorf("provider report %+v; want 2 downloads by the pipeline with opentofu 1.12.6 until today", r)
	}
	if r, err := e.ops.ConsumerReport(ctx, pat, modules, "", "~> 1.0"); err != nil || r.Downloads != 1 {
		t.Errorf("module report of the last 30 days: %+v, %v; want the one download of today", r, err)
	}
	if r, err := e.ops.ConsumerReport(ctx, pat, modules, "366", ""); err != nil || r.Downloads != 6 {
		t.Errorf("module report of the last 366 days: %+v, %v; want 6 downloads", r, err)
	}
	if r, err := e.ops.ConsumerReport(ctx, pat, modules, "", ">= 2.0"); err != nil || r.Downloads != 0 || len(r.Consumers) != 0 {
		t.Errorf("module report of >= 2.0: %+v, %v; want none", r, err)
	}

	bob, eve := e.user(t, "bob"), e.user(t, "eve")
	reader := e.service(t, registry.ScopeRead, "acme")
	for _, c := range []struct {
		name         string
		actor        operations.Actor
		q            registry.ConsumerQuery
		days, ranges string
		want         registry.Kind
	}{
		{"anonymous, private namespace", operations.Actor{}, providers, "", "", registry.NotFound},
		{"anonymous, public namespace", operations.Actor{}, public, "", "", registry.Unauthenticated},
		{"anonymous, bad days", operations.Actor{}, public, "-1", "<script>", registry.Unauthenticated},
		{"no member, public namespace", eve, public, "-1", "", registry.Forbidden},
		{"a reader", bob, providers, "", "", registry.Forbidden},
		{"a reader, bad days", bob, providers, "99999999999999999999", "", registry.Forbidden},
		{"a reader, bad versions", bob, modules, "", "not a constraint", registry.Forbidden},
		{"a read token", reader, providers, "0", "", registry.Forbidden},
		{"no member, private namespace", eve, providers, "abc", "", registry.NotFound},
		{"days 0", pat, providers, "0", "", registry.Invalid},
		{"days 367", pat, providers, "367", "", registry.Invalid},
		{"days negative", pat, providers, "-5", "", registry.Invalid},
		{"days huge", pat, providers, "99999999999999999999", "", registry.Invalid},
		{"days with a unit", pat, providers, "30d", "", registry.Invalid},
		{"days html", pat, providers, "<b>7</b>", "", registry.Invalid},
		{"versions garbage", pat, providers, "", "not a constraint", registry.Invalid},
		{"versions html", pat, providers, "", "<script>alert(1)</script>", registry.Invalid},
		{"versions too long", pat, providers, "", strings.Repeat("1", 5000), registry.Invalid},
		{"bad provider type", pat, registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "acme", Name: "Bad_Type!"}, "", "", registry.Invalid},
		{"bad module system", pat, registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: "acme", Name: "net", System: "AWS X"}, "", "", registry.Invalid},
		{"no kind", pat, registry.ConsumerQuery{Namespace: "acme", Name: "widget"}, "", "", registry.Invalid},
		{"bad namespace", pat, registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "../acme", Name: "widget"}, "", "", registry.Invalid},
	} {
		_, err := e.ops.ConsumerReport(ctx, c.actor, c.q, c.days, c.ranges)
		if !registry.IsKind(err, c.want) {
			t.Errorf("%s: %v (%s), want %s", c.name, err, registry.KindOf(err), c.want)
		}
	}
}
