package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testModuleVersion returns a module version whose fields derive from its
// coordinates.
func testModuleVersion(ns, name, system, version string, published time.Time) registry.ModuleVersion {
	id := ns + "/" + name + "/" + system + "/" + version
	return registry.ModuleVersion{
		Namespace:     ns,
		Name:          name,
		System:        system,
		Version:       version,
		ArchiveDigest: digestOf(id),
		ArchiveFormat: "tar.gz",
		ArchiveSize:   int64(4096 + len(id)),
		Metadata:      []byte(`{"readme":"# ` + id + `\n\nünïcode \"quoted\"","inputs":[{"name":"cidr"}]}`),
		Description:   "Module " + id,
		Origin:        "git tag v" + version + " at 0123456789abcdef",
		PublishedAt:   published,
	}
}

func normModuleVersion(v registry.ModuleVersion) registry.ModuleVersion {
	v.PublishedAt = normTime(v.PublishedAt)
	if len(v.Metadata) == 0 {
		v.Metadata = nil
	}
	return v
}

func normModule(m registry.Module) registry.Module {
	m.UpdatedAt = normTime(m.UpdatedAt)
	return m
}

// withoutMetadata returns v as ListModuleVersions returns it.
func withoutMetadata(v registry.ModuleVersion) registry.ModuleVersion {
	v.Metadata = nil
	return v
}

// sortModuleVersions orders versions by their version string.
func sortModuleVersions(vs []registry.ModuleVersion) {
	slices.SortFunc(vs, func(a, b registry.ModuleVersion) int { return strings.Compare(a.Version, b.Version) })
}

func testModules(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("RoundTrip", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "network", "aws", "1.2.3-beta.1+build.7", t0.In(east))
		v.ArchiveFormat = "zip"
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion")
		got, err := x.GetModuleVersion(ctx, "acme", "network", "aws", v.Version)
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "GetModuleVersion", got, v, normModuleVersion)
		list, err := x.ListModuleVersions(ctx, "acme", "network", "aws")
		mustOK(t, err, "ListModuleVersions")
		checkList(t, "ListModuleVersions (without metadata)", list, []registry.ModuleVersion{withoutMetadata(v)}, normModuleVersion)
	})
	t.Run("EmptyOptionalFields", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "my_module-2", "azurerm", "0.0.1", t0)
		v.Metadata, v.Description, v.Origin = nil, "", ""
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion")
		got, err := x.GetModuleVersion(ctx, "acme", "my_module-2", "azurerm", "0.0.1")
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "GetModuleVersion", got, v, normModuleVersion)
	})
	t.Run("DuplicateConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion")
		other := testModuleVersion("acme", "network", "aws", "1.0.0", at(time.Hour))
		other.ArchiveDigest, other.Description = digestOf("other bytes"), "other"
		for name, dup := range map[string]registry.ModuleVersion{"same content": v, "other content": other} {
			wantKind(t, x.CreateModuleVersion(ctx, dup), registry.Conflict, "CreateModuleVersion again with "+name)
		}
		got, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "version after refused creates", got, v, normModuleVersion)
		ms, total, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		if total != 1 || len(ms) != 1 || ms[0].VersionCount != 1 || ms[0].Description != v.Description {
			t.Errorf("ListModules after refused creates = %+v (total %d), want one module with one version", ms, total)
		}
	})
	t.Run("SamePrecedenceConflicts", func(t *testing.T) {
		// Versions equal but for build metadata have one precedence for
		// the clients: only the first of them may be stored.
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		for _, ver := range []string{"1.0.0+build.1", "1.0.0-rc.1", "1.0.0-rc.10", "1.0.1"} {
			mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", ver, t0)), "CreateModuleVersion "+ver)
		}
		for _, ver := range []string{"1.0.0", "1.0.0+build.2", "1.0.0-rc.1+x", "1.0.1+build.1"} {
			wantKind(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", ver, t0)), registry.Conflict,
				"CreateModuleVersion "+ver)
		}
		// Versions that share a prefix with a stored one but not its
		// precedence are not taken.
		for _, ver := range []string{"10.0.0", "1.0.0-rc", "1.0.10", "1.0.0-rc.1.1"} {
			mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", ver, t0)), "CreateModuleVersion "+ver)
		}
		list, err := x.ListModuleVersions(ctx, "acme", "network", "aws")
		mustOK(t, err, "ListModuleVersions")
		if len(list) != 8 {
			t.Errorf("ListModuleVersions after refused creates = %d versions, want 8", len(list))
		}
	})
	t.Run("SameVersionElsewhere", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		vs := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "aws", "1.0.0", t0),
			testModuleVersion("acme", "network", "google", "1.0.0", t0),
			testModuleVersion("acme", "dns", "aws", "1.0.0", t0),
			testModuleVersion("other", "network", "aws", "1.0.0", t0),
		}
		for _, v := range vs {
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+v.Namespace+"/"+v.Name+"/"+v.System)
		}
		for _, v := range vs {
			got, err := x.GetModuleVersion(ctx, v.Namespace, v.Name, v.System, v.Version)
			mustOK(t, err, "GetModuleVersion")
			checkEqual(t, "GetModuleVersion "+v.Namespace+"/"+v.Name+"/"+v.System, got, v, normModuleVersion)
		}
	})
	t.Run("MissingNamespace", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		wantKind(t, x.CreateModuleVersion(ctx, v), registry.NotFound, "CreateModuleVersion in a missing namespace")
		createNamespaces(t, x, "acme")
		_, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		wantKind(t, err, registry.NotFound, "GetModuleVersion of the refused version")
		ms, total, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		if len(ms) != 0 || total != 0 {
			t.Errorf("ListModules = %+v (total %d), want none", ms, total)
		}
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion once the namespace exists")
	})
	t.Run("GetMissing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "empty")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", "1.0.0", t0)), "CreateModuleVersion")
		for _, c := range [][4]string{
			{"nope", "network", "aws", "1.0.0"}, {"empty", "network", "aws", "1.0.0"}, {"acme", "dns", "aws", "1.0.0"},
			{"acme", "network", "google", "1.0.0"}, {"acme", "network", "aws", "1.0.1"},
			{"acme", "network", "aws", "1.0.0-beta"}, {"acme", "network", "aws", "1.0.0+build"},
		} {
			_, err := x.GetModuleVersion(ctx, c[0], c[1], c[2], c[3])
			wantKind(t, err, registry.NotFound, "GetModuleVersion "+strings.Join(c[:], " "))
		}
		for _, c := range [][3]string{{"nope", "network", "aws"}, {"empty", "network", "aws"}, {"acme", "network", "google"}} {
			_, err := x.ListModuleVersions(ctx, c[0], c[1], c[2])
			wantKind(t, err, registry.NotFound, "ListModuleVersions "+strings.Join(c[:], "/"))
		}
	})
	t.Run("ListModuleVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		want := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "aws", "1.0.0", t0),
			testModuleVersion("acme", "network", "aws", "1.10.0", at(time.Hour)),
			testModuleVersion("acme", "network", "aws", "2.0.0-beta.1", at(2*time.Hour).In(east)),
		}
		others := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "google", "1.0.0", t0),
			testModuleVersion("acme", "dns", "aws", "3.0.0", t0),
			testModuleVersion("other", "network", "aws", "9.9.9", t0),
		}
		for _, v := range append(slices.Clone(want), others...) {
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+v.Name+"/"+v.System+" "+v.Version)
		}
		got, err := x.ListModuleVersions(ctx, "acme", "network", "aws")
		mustOK(t, err, "ListModuleVersions")
		sortModuleVersions(got)
		checkList(t, "ListModuleVersions (sorted by version string)", got, normAll(want, withoutMetadata), normModuleVersion)
	})
	t.Run("ListModulesSummary", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other", "empty")
		for _, c := range []struct {
			ns, name, system, version string
			published                 time.Time
		}{
			{"acme", "zeta", "aws", "1.0.0", at(time.Hour)},
			{"acme", "zeta", "aws", "2.0.0-beta", t0}, // a pre-release never replaces a release as the latest
			{"acme", "delta", "aws", "3.0.0-rc.1", at(time.Hour)},
			{"acme", "delta", "aws", "2.0.0", t0}, // a release replaces a higher pre-release
			{"acme", "beta", "aws", "0.1.0-rc.1", at(time.Hour)},
			{"acme", "beta", "aws", "0.2.0-alpha.1", t0}, // no release: the highest pre-release is the latest
			{"acme", "alpha", "aws", "1.9.0", at(3 * time.Hour).In(east)},
			{"acme", "alpha", "aws", "1.10.0", at(time.Hour)}, // 1.10.0 > 1.9.0: not a string comparison
			{"acme", "alpha", "aws", "1.10.0-rc.1", at(2 * time.Hour)},
			{"acme", "alpha", "aws", "0.1.0", t0},
			{"acme", "alpha", "azurerm", "0.0.1", at(time.Minute)},
			{"other", "alpha", "aws", "5.0.0", at(5 * time.Hour)},
		} {
			v := testModuleVersion(c.ns, c.name, c.system, c.version, c.published)
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+c.name+"/"+c.system+" "+c.version)
		}
		all := []registry.Module{
			{Namespace: "acme", Name: "alpha", System: "aws", LatestVersion: "1.10.0", VersionCount: 4,
				Description: "Module acme/alpha/aws/1.10.0", UpdatedAt: at(3 * time.Hour)},
			{Namespace: "acme", Name: "alpha", System: "azurerm", LatestVersion: "0.0.1", VersionCount: 1,
				Description: "Module acme/alpha/azurerm/0.0.1", UpdatedAt: at(time.Minute)},
			{Namespace: "acme", Name: "beta", System: "aws", LatestVersion: "0.2.0-alpha.1", VersionCount: 2,
				Description: "Module acme/beta/aws/0.2.0-alpha.1", UpdatedAt: at(time.Hour)},
			{Namespace: "acme", Name: "delta", System: "aws", LatestVersion: "2.0.0", VersionCount: 2,
				Description: "Module acme/delta/aws/2.0.0", UpdatedAt: at(time.Hour)},
			{Namespace: "acme", Name: "zeta", System: "aws", LatestVersion: "1.0.0", VersionCount: 2,
				Description: "Module acme/zeta/aws/1.0.0", UpdatedAt: at(time.Hour)},
			{Namespace: "other", Name: "alpha", System: "aws", LatestVersion: "5.0.0", VersionCount: 1,
				Description: "Module other/alpha/aws/5.0.0", UpdatedAt: at(5 * time.Hour)},
		}
		got, total, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		checkList(t, "ListModules", got, all, normModule)
		if total != len(all) {
			t.Errorf("ListModules total = %d, want %d", total, len(all))
		}
	})
	t.Run("ListModulesFilters", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other", "empty")
		vs := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "aws", "1.0.0", t0),
			testModuleVersion("acme", "network", "google", "1.0.0", t0),
			testModuleVersion("acme", "dns_zone", "aws", "1.0.0", t0),
			testModuleVersion("other", "vpc", "aws", "1.0.0", t0),
			testModuleVersion("other", "dnsxzone", "aws", "1.0.0", t0),
		}
		vs[3].Description = "Builds a VPC with 100% more subnets"
		for _, v := range vs {
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+v.Namespace+"/"+v.Name+"/"+v.System)
		}
		names := func(ms []registry.Module) []string {
			var out []string
			for _, m := range ms {
				out = append(out, m.Namespace+"/"+m.Name+"/"+m.System)
			}
			return out
		}
		for _, tt := range []struct {
			filter registry.ModuleFilter
			want   []string
			total  int
		}{
			{registry.ModuleFilter{Namespace: "acme"}, []string{"acme/dns_zone/aws", "acme/network/aws", "acme/network/google"}, 3},
			{registry.ModuleFilter{Namespace: "empty"}, nil, 0},
			{registry.ModuleFilter{Namespace: "nope"}, nil, 0},
			{registry.ModuleFilter{System: "google"}, []string{"acme/network/google"}, 1},
			{registry.ModuleFilter{Namespace: "other", System: "aws"}, []string{"other/dnsxzone/aws", "other/vpc/aws"}, 2},
			{registry.ModuleFilter{Query: "NETWORK"}, []string{"acme/network/aws", "acme/network/google"}, 2},
			{registry.ModuleFilter{Query: "oth"}, []string{"other/dnsxzone/aws", "other/vpc/aws"}, 2},
			{registry.ModuleFilter{Query: "subnets"}, []string{"other/vpc/aws"}, 1},
			{registry.ModuleFilter{Query: "_"}, []string{"acme/dns_zone/aws"}, 1}, // '_' is no wildcard
			{registry.ModuleFilter{Query: "100%"}, []string{"other/vpc/aws"}, 1},
			{registry.ModuleFilter{Query: "%"}, []string{"other/vpc/aws"}, 1},
			{registry.ModuleFilter{Query: "dns", System: "aws", Namespace: "acme"}, []string{"acme/dns_zone/aws"}, 1},
			{registry.ModuleFilter{Query: "nothing matches this"}, nil, 0},
			{registry.ModuleFilter{Limit: 2}, []string{"acme/dns_zone/aws", "acme/network/aws"}, 5},
			{registry.ModuleFilter{Offset: 2, Limit: 2}, []string{"acme/network/google", "other/dnsxzone/aws"}, 5},
			{registry.ModuleFilter{Offset: 4, Limit: 2}, []string{"other/vpc/aws"}, 5},
			{registry.ModuleFilter{Offset: 9}, nil, 5},
			{registry.ModuleFilter{Offset: -3, Limit: 1}, []string{"acme/dns_zone/aws"}, 5},
			{registry.ModuleFilter{Query: "aws", Offset: 1, Limit: 1}, []string{"acme/network/aws"}, 3}, // not the system: vpc's description lacks "aws"
		} {
			got, total, err := x.ListModules(ctx, tt.filter)
			what := fmt.Sprintf("ListModules(%+v)", tt.filter)
			mustOK(t, err, what)
			if g := names(got); !slices.Equal(g, tt.want) || total != tt.total {
				t.Errorf("%s = %v (total %d), want %v (total %d)", what, g, total, tt.want, tt.total)
			}
		}
	})
	t.Run("ListModulesDefaultLimit", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const n = 105
		for i := range n {
			mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", fmt.Sprintf("m%03d", i), "aws", "1.0.0", t0)), "CreateModuleVersion")
		}
		got, total, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		if len(got) != 100 || total != n {
			t.Errorf("ListModules without a limit returned %d modules (total %d), want 100 (total %d)", len(got), total, n)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		vs := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "aws", "1.0.0", t0),
			testModuleVersion("acme", "network", "aws", "1.1.0", at(2*time.Hour)),
			testModuleVersion("acme", "network", "aws", "1.2.0", at(time.Hour)),
		}
		for _, v := range vs {
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+v.Version)
		}
		wantKind(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "9.9.9"), registry.NotFound, "DeleteModuleVersion of a missing version")
		wantKind(t, x.DeleteModuleVersion(ctx, "acme", "nope", "aws", "1.0.0"), registry.NotFound, "DeleteModuleVersion of a missing module")

		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.2.0"), "DeleteModuleVersion 1.2.0 (the latest)")
		_, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.2.0")
		wantKind(t, err, registry.NotFound, "GetModuleVersion after delete")
		wantKind(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.2.0"), registry.NotFound, "second DeleteModuleVersion")
		list, err := x.ListModuleVersions(ctx, "acme", "network", "aws")
		mustOK(t, err, "ListModuleVersions")
		sortModuleVersions(list)
		checkList(t, "versions after delete", list, normAll(vs[:2], withoutMetadata), normModuleVersion)
		ms, _, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		checkList(t, "ListModules after deleting the latest version", ms, []registry.Module{{
			Namespace: "acme", Name: "network", System: "aws", LatestVersion: "1.1.0", VersionCount: 2,
			Description: vs[1].Description, UpdatedAt: at(2 * time.Hour),
		}}, normModule)

		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.1.0"), "DeleteModuleVersion 1.1.0")
		ms, _, err = x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		checkList(t, "ListModules after deleting the newest publication", ms, []registry.Module{{
			Namespace: "acme", Name: "network", System: "aws", LatestVersion: "1.0.0", VersionCount: 1,
			Description: vs[0].Description, UpdatedAt: t0,
		}}, normModule)

		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion of the last version")
		_, err = x.ListModuleVersions(ctx, "acme", "network", "aws")
		wantKind(t, err, registry.NotFound, "ListModuleVersions after deleting every version")
		ms, total, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		if len(ms) != 0 || total != 0 {
			t.Errorf("ListModules after deleting every version = %+v (total %d), want none", ms, total)
		}

		again := testModuleVersion("acme", "network", "aws", "1.2.0", at(time.Hour))
		again.ArchiveDigest = digestOf("republished")
		mustOK(t, x.CreateModuleVersion(ctx, again), "CreateModuleVersion of a deleted version")
		got, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.2.0")
		mustOK(t, err, "GetModuleVersion of the republished version")
		checkEqual(t, "republished version", got, again, normModuleVersion)
	})
	t.Run("DeleteRecountsLatestRelease", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		vs := []registry.ModuleVersion{
			testModuleVersion("acme", "network", "aws", "1.0.0", t0),
			testModuleVersion("acme", "network", "aws", "2.0.0-rc.1", at(time.Hour)),
			testModuleVersion("acme", "network", "aws", "1.1.0", at(2*time.Hour)),
		}
		for _, v := range vs {
			mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion "+v.Version)
		}
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.1.0"), "DeleteModuleVersion 1.1.0")
		ms, _, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		checkList(t, "ListModules after deleting the newest release", ms, []registry.Module{{
			Namespace: "acme", Name: "network", System: "aws", LatestVersion: "1.0.0", VersionCount: 2,
			Description: vs[0].Description, UpdatedAt: at(time.Hour),
		}}, normModule)
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion 1.0.0")
		ms, _, err = x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		checkList(t, "ListModules after deleting the last release", ms, []registry.Module{{
			Namespace: "acme", Name: "network", System: "aws", LatestVersion: "2.0.0-rc.1", VersionCount: 1,
			Description: vs[1].Description, UpdatedAt: at(time.Hour),
		}}, normModule)
	})
	t.Run("NamespaceWithModulesCannotBeDeleted", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testModuleVersion("acme", "network", "aws", "1.0.0", t0)
		mustOK(t, x.CreateModuleVersion(ctx, v), "CreateModuleVersion")
		wantKind(t, x.DeleteNamespace(ctx, "acme"), registry.Conflict, "DeleteNamespace with module versions")
		got, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "GetModuleVersion after the refused delete")
		checkEqual(t, "version after the refused namespace delete", got, v, normModuleVersion)
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion")
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace once its modules are gone")
	})
	t.Run("ConcurrentCreateOfOneVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const n = 8
		vs := make([]registry.ModuleVersion, n)
		errs := make([]error, n)
		for i := range vs {
			vs[i] = testModuleVersion("acme", "network", "aws", "1.0.0", at(time.Duration(i)*time.Second))
			vs[i].ArchiveDigest = digestOf(fmt.Sprint(i))
		}
		runTogether(n, func(i int) { errs[i] = x.CreateModuleVersion(ctx, vs[i]) })
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("creates %d and %d both succeeded", winner, i)
			case err == nil:
				winner = i
			default:
				wantKind(t, err, registry.Conflict, fmt.Sprintf("concurrent create %d", i))
			}
		}
		if winner < 0 {
			t.Fatal("no concurrent create succeeded")
		}
		got, err := x.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "GetModuleVersion")
		checkEqual(t, "the stored version is the winner's", got, vs[winner], normModuleVersion)
	})
	t.Run("ConcurrentCreateOfManyVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const n = 8
		errs := make([]error, n)
		runTogether(n, func(i int) {
			errs[i] = x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", fmt.Sprintf("1.%d.0", i), at(time.Duration(i)*time.Second)))
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("concurrent create of version 1.%d.0: %v", i, err)
			}
		}
		ms, _, err := x.ListModules(ctx, registry.ModuleFilter{})
		mustOK(t, err, "ListModules")
		want := []registry.Module{{Namespace: "acme", Name: "network", System: "aws", LatestVersion: "1.7.0", VersionCount: n,
			Description: "Module acme/network/aws/1.7.0", UpdatedAt: at(7 * time.Second)}}
		checkList(t, "ListModules", ms, want, normModule)
	})
}
