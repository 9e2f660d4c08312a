package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// sortCounts orders counts by version, os and arch, for comparison (the
// contract does not order them).
func sortCounts(cs []registry.DownloadCount) []registry.DownloadCount {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b registry.DownloadCount) int {
		return cmp.Or(strings.Compare(a.Version, b.Version), strings.Compare(a.OS, b.OS), strings.Compare(a.Arch, b.Arch))
	})
	return cs
}

func checkCounts(t *testing.T, what string, got []registry.DownloadCount, err error, want ...registry.DownloadCount) {
	t.Helper()
	mustOK(t, err, what)
	checkList(t, what, sortCounts(got), sortCounts(want), func(c registry.DownloadCount) registry.DownloadCount { return c })
}

func pcount(ns, typ, version, os, arch string, n int64) registry.DownloadCount {
	return registry.DownloadCount{DownloadKey: registry.ProviderDownload(ns, typ, version, os, arch), Count: n}
}

func mcount(ns, name, system, version string, n int64) registry.DownloadCount {
	return registry.DownloadCount{DownloadKey: registry.ModuleDownload(ns, name, system, version), Count: n}
}

// downloadsIndex returns an index holding provider acme/widget 1.0.0 and
// 2.0.0 (platforms linux_amd64, darwin_arm64, windows_386) and module
// acme/net/aws 1.0.0 and 1.1.0.
func downloadsIndex(t *testing.T, newIndex func(*testing.T) store.Index) store.Index {
	x := newIndex(t)
	ctx := t.Context()
	createNamespaces(t, x, "acme")
	key := testKey("acme", 1)
	mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
	for _, v := range []string{"1.0.0", "2.0.0"} {
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "widget", v, key, at(time.Hour))), "CreateProviderVersion "+v)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "net", "aws", v, at(time.Hour))), "CreateModuleVersion "+v)
	}
	return x
}

func testDownloads(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("NoneYet", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		got, err := x.ProviderDownloads(t.Context(), "acme", "widget")
		checkCounts(t, "ProviderDownloads", got, err)
		got, err = x.ModuleDownloads(t.Context(), "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads", got, err)
		got, err = x.ProviderDownloads(t.Context(), "nobody", "nothing")
		checkCounts(t, "ProviderDownloads of a missing provider", got, err)
		got, err = x.ModuleDownloads(t.Context(), "nobody", "nothing", "aws")
		checkCounts(t, "ModuleDownloads of a missing module", got, err)
	})
	t.Run("AddIsAdditiveAndMergesKeys", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 3),
			mcount("acme", "net", "aws", "1.0.0", 2),
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 4), // same key twice in one call
			pcount("acme", "widget", "2.0.0", "darwin", "arm64", 1),
		}), "AddDownloads")
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 10),
			mcount("acme", "net", "aws", "1.0.0", 5),
			mcount("acme", "net", "aws", "1.1.0", 1),
		}), "AddDownloads again")
		got, err := x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads", got, err,
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 17), pcount("acme", "widget", "2.0.0", "darwin", "arm64", 1))
		got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads", got, err, mcount("acme", "net", "aws", "1.0.0", 7), mcount("acme", "net", "aws", "1.1.0", 1))
		mustOK(t, x.AddDownloads(ctx, nil), "AddDownloads of nothing")
	})
	t.Run("UnknownVersionsAreDropped", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 1),
			pcount("acme", "widget", "3.0.0", "linux", "amd64", 1),   // no such version
			pcount("acme", "widget", "1.0.0", "linux", "arm64", 1),   // no such platform
			pcount("acme", "gadget", "1.0.0", "linux", "amd64", 1),   // no such provider
			pcount("nobody", "widget", "1.0.0", "linux", "amd64", 1), // no such namespace
			mcount("acme", "net", "aws", "9.9.9", 1),
			mcount("acme", "net", "azurerm", "1.0.0", 1),
		}), "AddDownloads")
		got, err := x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads", got, err, pcount("acme", "widget", "1.0.0", "linux", "amd64", 1))
		got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads", got, err)
		got, err = x.ModuleDownloads(ctx, "acme", "net", "azurerm")
		checkCounts(t, "ModuleDownloads azurerm", got, err)
	})
	t.Run("InvalidDeltasStoreNothing", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		for name, bad := range map[string]registry.DownloadCount{
			"zero":         pcount("acme", "widget", "1.0.0", "linux", "amd64", 0),
			"negative":     mcount("acme", "net", "aws", "1.0.0", -5),
			"unknown kind": {DownloadKey: registry.DownloadKey{Namespace: "acme", Name: "widget", Version: "1.0.0"}, Count: 1},
		} {
			err := x.AddDownloads(ctx, []registry.DownloadCount{pcount("acme", "widget", "1.0.0", "linux", "amd64", 1), bad})
			wantKind(t, err, registry.Invalid, "AddDownloads with a delta "+name)
		}
		got, err := x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads after refused deltas", got, err)
	})
	t.Run("DeletedModuleVersionLosesItsCount", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{mcount("acme", "net", "aws", "1.0.0", 4), mcount("acme", "net", "aws", "1.1.0", 2)}), "AddDownloads")
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"), "DeleteModuleVersion")
		got, err := x.ModuleDownloads(ctx, "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads after the delete", got, err, mcount("acme", "net", "aws", "1.1.0", 2))
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "net", "aws", "1.0.0", at(2*time.Hour))), "CreateModuleVersion again")
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{mcount("acme", "net", "aws", "1.0.0", 1)}), "AddDownloads after the republish")
		got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads after the republish", got, err, mcount("acme", "net", "aws", "1.0.0", 1), mcount("acme", "net", "aws", "1.1.0", 2))
	})
	t.Run("ConcurrentAddsSumExactly", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		const writers, rounds = 6, 5
		errs := make([]error, writers)
		runTogether(writers, func(i int) {
			for range rounds {
				// Each writer names the shared keys in another order.
				deltas := []registry.DownloadCount{
					pcount("acme", "widget", "1.0.0", "linux", "amd64", 1),
					pcount("acme", "widget", "2.0.0", "windows", "386", 2),
					mcount("acme", "net", "aws", "1.1.0", 3),
				}
				if i%2 == 1 {
					slices.Reverse(deltas)
				}
				if err := x.AddDownloads(ctx, deltas); err != nil {
					errs[i] = err
				}
			}
		})
		for i, err := range errs {
			mustOK(t, err, fmt.Sprintf("AddDownloads of writer %d", i))
		}
		got, err := x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads", got, err,
			pcount("acme", "widget", "1.0.0", "linux", "amd64", writers*rounds), pcount("acme", "widget", "2.0.0", "windows", "386", 2*writers*rounds))
		got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
		checkCounts(t, "ModuleDownloads", got, err, mcount("acme", "net", "aws", "1.1.0", 3*writers*rounds))
	})
}

// SeedDownloadsMigration stores, through x, what CheckMigratedDownloads
// expects to find after migration 0009 (download counts): provider
// acme/widget 1.0.0 and 2.0.0 and module acme/net/aws 1.0.0 and 1.1.0. A
// backend's migration test seeds, takes its schema back to version 8
// (without the download tables), opens it again and checks.
func SeedDownloadsMigration(t *testing.T, x store.Index) {
	t.Helper()
	downloadsIndex(t, func(*testing.T) store.Index { return x })
}

// CheckMigratedDownloads checks an index that SeedDownloadsMigration
// seeded before migration 0009 ran: every version counts 0 downloads,
// and deltas add up from there.
func CheckMigratedDownloads(t *testing.T, x store.Index) {
	t.Helper()
	ctx := t.Context()
	got, err := x.ProviderDownloads(ctx, "acme", "widget")
	checkCounts(t, "ProviderDownloads after the migration", got, err)
	got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
	checkCounts(t, "ModuleDownloads after the migration", got, err)
	mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
		pcount("acme", "widget", "2.0.0", "windows", "386", 2), mcount("acme", "net", "aws", "1.1.0", 1),
	}), "AddDownloads after the migration")
	got, err = x.ProviderDownloads(ctx, "acme", "widget")
	checkCounts(t, "ProviderDownloads after adding", got, err, pcount("acme", "widget", "2.0.0", "windows", "386", 2))
	got, err = x.ModuleDownloads(ctx, "acme", "net", "aws")
	checkCounts(t, "ModuleDownloads after adding", got, err, mcount("acme", "net", "aws", "1.1.0", 1))
}

// consumed is a delta of a provider download by consumer with client on
// day.
func consumed(d registry.DownloadCount, day, consumer, client, clientVersion string) registry.DownloadCount {
	d.Day, d.Consumer, d.Client, d.ClientVersion = day, consumer, client, clientVersion
	return d
}

func sortConsumers(cs []registry.ConsumerCount) []registry.ConsumerCount {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b registry.ConsumerCount) int {
		return cmp.Or(strings.Compare(a.Version, b.Version), strings.Compare(a.Day, b.Day), strings.Compare(a.Consumer, b.Consumer),
			strings.Compare(a.Client, b.Client), strings.Compare(a.ClientVersion, b.ClientVersion))
	})
	return cs
}

func checkConsumers(t *testing.T, what string, got []registry.ConsumerCount, err error, want ...registry.ConsumerCount) {
	t.Helper()
	mustOK(t, err, what)
	checkList(t, what, sortConsumers(got), sortConsumers(want), func(c registry.ConsumerCount) registry.ConsumerCount { return c })
}

// testConsumers checks the consumer records AddDownloads writes with the
// totals and ConsumerDownloads reads.
func testConsumers(t *testing.T, newIndex func(*testing.T) store.Index) {
	tf, ot := registry.ClientTerraform, registry.ClientOpenTofu
	widget := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: "acme", Name: "widget", Since: "2026-11-01"}
	net := registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: "acme", Name: "net", System: "aws", Since: "2026-11-01"}
	t.Run("RecordedWithTotals", func(t *testing.T) {
		x := downloadsIndex(t, newIndex)
		ctx := t.Context()
		ci := registry.CIClaims{Issuer: "https://ci.example.test", Repository: "acme/infra", Workflow: "deploy.yml"}
		keyless := testToken("keyless1", "acme", t0)
		keyless.CI = &ci
		mustOK(t, x.CreateToken(ctx, keyless), "CreateToken with CI claims")
		mustOK(t, x.CreateToken(ctx, testToken("svc1", "acme", t0)), "CreateToken")
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			consumed(pcount("acme", "widget", "1.0.0", "linux", "amd64", 2), "2026-11-27", "user:alice", tf, "1.9.5"),
			consumed(pcount("acme", "widget", "1.0.0", "darwin", "arm64", 1), "2026-11-27", "user:alice", tf, "1.9.5"), // another platform: one record
			consumed(pcount("acme", "widget", "2.0.0", "linux", "amd64", 1), "2026-11-28", "token:keyless1", ot, "1.12.6"),
			consumed(pcount("acme", "widget", "2.0.0", "linux", "amd64", 4), "2026-11-28", "token:svc1", ot, "1.12.6"),
			consumed(pcount("acme", "widget", "2.0.0", "linux", "amd64", 1), "2026-10-01", "anonymous", registry.ClientOther, ""),
			pcount("acme", "widget", "1.0.0", "linux", "amd64", 5), // a total only
			consumed(mcount("acme", "net", "aws", "1.1.0", 3), "2026-11-28", "user:bob", tf, "1.10.0"),
			consumed(pcount("acme", "widget", "9.9.9", "linux", "amd64", 1), "2026-11-28", "user:alice", tf, "1.9.5"), // no such version
		}), "AddDownloads with consumers")
		got, err := x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads", got, err, pcount("acme", "widget", "1.0.0", "linux", "amd64", 7),
			pcount("acme", "widget", "1.0.0", "darwin", "arm64", 1), pcount("acme", "widget", "2.0.0", "linux", "amd64", 6))
		cs, err := x.ConsumerDownloads(ctx, widget)
		checkConsumers(t, "ConsumerDownloads of the provider", cs, err,
			registry.ConsumerCount{Version: "1.0.0", Day: "2026-11-27", Consumer: "user:alice", Client: tf, ClientVersion: "1.9.5", Count: 3},
			registry.ConsumerCount{Version: "2.0.0", Day: "2026-11-28", Consumer: "ci:acme/infra (deploy.yml)", Client: ot, ClientVersion: "1.12.6", Count: 1},
			registry.ConsumerCount{Version: "2.0.0", Day: "2026-11-28", Consumer: "token:svc1", Client: ot, ClientVersion: "1.12.6", Count: 4})
		cs, err = x.ConsumerDownloads(ctx, net)
		checkConsumers(t, "ConsumerDownloads of the module", cs, err,
			registry.ConsumerCount{Version: "1.1.0", Day: "2026-11-28", Consumer: "user:bob", Client: tf, ClientVersion: "1.10.0", Count: 3})
		old := widget
		old.Since = "2026-09-01"
		cs, err = x.ConsumerDownloads(ctx, old)
		mustOK(t, err, "ConsumerDownloads since September")
		if len(cs) != 4 {
			t.Errorf("ConsumerDownloads since September = %+v, want the October record too", cs)
		}
		missing := widget
		missing.Name = "gadget"
		cs, err = x.ConsumerDownloads(ctx, missing)
		checkConsumers(t, "ConsumerDownloads of a missing provider", cs, err)
		_, err = x.ConsumerDownloads(ctx, registry.ConsumerQuery{Namespace: "acme", Name: "widget"})
		wantKind(t, err, registry.Invalid, "ConsumerDownloads of an unknown kind")

		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			consumed(pcount("acme", "widget", "1.0.0", "linux", "amd64", 1), "2026-11-27", "user:alice", tf, "1.9.5"),
		}), "AddDownloads again")
		n, err := x.PruneConsumerDownloads(ctx, "2026-11-28")
		mustOK(t, err, "PruneConsumerDownloads")
		if n != 2 { // alice's on the 27th and the anonymous one of October; none of the module
			t.Errorf("PruneConsumerDownloads removed %d records, want 2", n)
		}
		cs, err = x.ConsumerDownloads(ctx, old)
		checkConsumers(t, "ConsumerDownloads after pruning", cs, err,
			registry.ConsumerCount{Version: "2.0.0", Day: "2026-11-28", Consumer: "ci:acme/infra (deploy.yml)", Client: ot, ClientVersion: "1.12.6", Count: 1},
			registry.ConsumerCount{Version: "2.0.0", Day: "2026-11-28", Consumer: "token:svc1", Client: ot, ClientVersion: "1.12.6", Count: 4})
		got, err = x.ProviderDownloads(ctx, "acme", "widget")
		checkCounts(t, "ProviderDownloads after pruning (totals stay)", got, err, pcount("acme", "widget", "1.0.0", "linux", "amd64", 8),
			pcount("acme", "widget", "1.0.0", "darwin", "arm64", 1), pcount("acme", "widget", "2.0.0", "linux", "amd64", 6))

		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.1.0"), "DeleteModuleVersion")
		cs, err = x.ConsumerDownloads(ctx, net)
		checkConsumers(t, "ConsumerDownloads after the version's delete", cs, err)
	})
}
