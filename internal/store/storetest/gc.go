package storetest

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testDeletions checks the deletes of store.Providers and store.Modules:
// DeleteProviderVersion, DeleteProvider and DeleteModule, their NotFound
// cases, the summaries they recompute and what they leave alone.
func testDeletions(t *testing.T, newIndex func(*testing.T) store.Index) {
	setup := func(t *testing.T) store.Index {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		for i, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
			mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", v, testKey("acme", 1), at(time.Duration(i)*time.Minute))), "CreateProviderVersion "+v)
			mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", v, at(time.Duration(i)*time.Minute))), "CreateModuleVersion "+v)
		}
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "dns", "1.0.0", testKey("acme", 1), at(0))), "CreateProviderVersion dns")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("other", "cloud", "1.0.0", testKey("other", 1), at(0))), "CreateProviderVersion other")
		mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "gcp", "1.0.0", at(0))), "CreateModuleVersion gcp")
		mustOK(t, x.AddDownloads(ctx, []registry.DownloadCount{
			{DownloadKey: registry.ProviderDownload("acme", "cloud", "2.0.0", "linux", "amd64"), Count: 3},
		}), "AddDownloads")
		return x
	}
	versions := func(t *testing.T, x store.Index, ns, typ string) []string {
		t.Helper()
		vs, err := x.ListProviderVersions(t.Context(), ns, typ)
		if registry.IsKind(err, registry.NotFound) {
			return nil
		}
		mustOK(t, err, "ListProviderVersions")
		var out []string
		for _, v := range vs {
			out = append(out, v.Version)
		}
		sort.Strings(out)
		return out
	}
	provider := func(t *testing.T, x store.Index, ns, typ string) (registry.Provider, bool) {
		t.Helper()
		ps, err := x.ListProviders(t.Context(), ns)
		mustOK(t, err, "ListProviders")
		for _, p := range ps {
			if p.Type == typ {
				return p, true
			}
		}
		return registry.Provider{}, false
	}

	t.Run("ProviderVersion", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		mustOK(t, x.DeleteProviderVersion(ctx, "acme", "cloud", "2.0.0"), "DeleteProviderVersion")
		wantKind(t, x.DeleteProviderVersion(ctx, "acme", "cloud", "2.0.0"), registry.NotFound, "DeleteProviderVersion again")
		_, err := x.GetProviderVersion(ctx, "acme", "cloud", "2.0.0")
		wantKind(t, err, registry.NotFound, "GetProviderVersion of the deleted version")
		if got := versions(t, x, "acme", "cloud"); len(got) != 2 || got[0] != "1.0.0" || got[1] != "1.1.0" {
			t.Errorf("versions after the delete = %v, want [1.0.0 1.1.0]", got)
		}
		p, ok := provider(t, x, "acme", "cloud")
		if !ok || p.LatestVersion != "1.1.0" || p.VersionCount != 2 {
			t.Errorf("provider summary = %+v (listed %v), want latest 1.1.0 of 2 versions", p, ok)
		}
		counts, err := x.ProviderDownloads(ctx, "acme", "cloud")
		mustOK(t, err, "ProviderDownloads")
		if len(counts) != 0 {
			t.Errorf("download counts of the deleted version survive: %+v", counts)
		}
		// Publishing the number again works, as a new version.
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "2.0.0", testKey("acme", 1), at(time.Hour))), "CreateProviderVersion again")
		if p, _ := provider(t, x, "acme", "cloud"); p.LatestVersion != "2.0.0" || p.VersionCount != 3 {
			t.Errorf("provider summary after publishing again = %+v, want latest 2.0.0 of 3", p)
		}
	})
	t.Run("LastProviderVersion", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		mustOK(t, x.DeleteProviderVersion(ctx, "acme", "dns", "1.0.0"), "DeleteProviderVersion")
		if _, ok := provider(t, x, "acme", "dns"); ok {
			t.Error("a provider without versions is still listed")
		}
		_, err := x.ListProviderVersions(ctx, "acme", "dns")
		wantKind(t, err, registry.NotFound, "ListProviderVersions of a provider without versions")
	})
	t.Run("Provider", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		n, err := x.DeleteProvider(ctx, "acme", "cloud")
		mustOK(t, err, "DeleteProvider")
		if n != 3 {
			t.Errorf("DeleteProvider removed %d versions, want 3", n)
		}
		if got := versions(t, x, "acme", "cloud"); got != nil {
			t.Errorf("versions after deleting the provider: %v", got)
		}
		if _, ok := provider(t, x, "acme", "cloud"); ok {
			t.Error("the deleted provider is still listed")
		}
		_, err = x.DeleteProvider(ctx, "acme", "cloud")
		wantKind(t, err, registry.NotFound, "DeleteProvider again")
		_, err = x.DeleteProvider(ctx, "nobody", "cloud")
		wantKind(t, err, registry.NotFound, "DeleteProvider in a missing namespace")
		// The namesakes elsewhere stay.
		if got := versions(t, x, "other", "cloud"); len(got) != 1 {
			t.Errorf("other/cloud versions = %v, want its one", got)
		}
		if got := versions(t, x, "acme", "dns"); len(got) != 1 {
			t.Errorf("acme/dns versions = %v, want its one", got)
		}
		// Publishing it again starts a new provider.
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "0.1.0", testKey("acme", 1), at(time.Hour))), "CreateProviderVersion after the delete")
		if p, ok := provider(t, x, "acme", "cloud"); !ok || p.VersionCount != 1 || p.LatestVersion != "0.1.0" {
			t.Errorf("provider published again = %+v, want 0.1.0 of 1", p)
		}
	})
	t.Run("Module", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		n, err := x.DeleteModule(ctx, "acme", "network", "aws")
		mustOK(t, err, "DeleteModule")
		if n != 3 {
			t.Errorf("DeleteModule removed %d versions, want 3", n)
		}
		_, err = x.ListModuleVersions(ctx, "acme", "network", "aws")
		wantKind(t, err, registry.NotFound, "ListModuleVersions of the deleted module")
		_, err = x.DeleteModule(ctx, "acme", "network", "aws")
		wantKind(t, err, registry.NotFound, "DeleteModule again")
		mods, total, err := x.ListModules(ctx, registry.ModuleFilter{Namespace: "acme"})
		mustOK(t, err, "ListModules")
		if total != 1 || len(mods) != 1 || mods[0].System != "gcp" {
			t.Errorf("modules after the delete = %+v (total %d), want only network/gcp", mods, total)
		}
	})
	t.Run("NamespaceDeletableAfterward", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		for _, typ := range []string{"cloud", "dns"} {
			if _, err := x.DeleteProvider(ctx, "acme", typ); err != nil {
				t.Fatalf("DeleteProvider %s: %v", typ, err)
			}
		}
		for _, sys := range []string{"aws", "gcp"} {
			if _, err := x.DeleteModule(ctx, "acme", "network", sys); err != nil {
				t.Fatalf("DeleteModule %s: %v", sys, err)
			}
		}
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace of the emptied namespace")
	})
}

// testGarbageCollection checks store.GarbageCollection: every column that
// names a blob is reported by ReferencedBlobs and BlobReferenced, until
// the row goes; and the collector lease.
func testGarbageCollection(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("References", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		pv := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), at(0))
		pv.DocsDigest, pv.DocsSize = digestOf("docs"), 10
		mustOK(t, x.CreateProviderVersion(ctx, pv), "CreateProviderVersion")
		mv := testModuleVersion("acme", "network", "aws", "1.0.0", at(0))
		mustOK(t, x.CreateModuleVersion(ctx, mv), "CreateModuleVersion")
		mirrored := mirroredVersion("upstream.example", "hashicorp", "null", "3.0.0", 1, at(0))
		_, err := x.PutMirroredVersion(ctx, mirrored)
		mustOK(t, err, "PutMirroredVersion")

		want := map[string]string{
			pv.SHASumsDigest: "SHA256SUMS", pv.SHASumsSignatureDigest: "signature", pv.DocsDigest: "docs",
			mv.ArchiveDigest: "module archive", mirrored.SHASumsDigest: "mirrored SHA256SUMS",
			mirrored.SHASumsSignatureDigest: "mirrored signature",
		}
		for _, p := range pv.Platforms {
			want[p.SHA256] = "package " + p.Filename
		}
		for _, p := range mirrored.Platforms {
			want[p.SHA256] = "mirrored package (not held yet) " + p.Filename
		}
		got := map[string]int{}
		mustOK(t, x.ReferencedBlobs(ctx, func(d string) error { got[d]++; return nil }), "ReferencedBlobs")
		for d, what := range want {
			if got[d] != 1 {
				t.Errorf("ReferencedBlobs reported the %s %d times, want once", what, got[d])
			}
			ok, err := x.BlobReferenced(ctx, d)
			mustOK(t, err, "BlobReferenced")
			if !ok {
				t.Errorf("BlobReferenced(%s) = false", what)
			}
			n, err := x.BlobReferences(ctx, d)
			mustOK(t, err, "BlobReferences")
			if n != 1 {
				t.Errorf("BlobReferences(%s) = %d, want 1", what, n)
			}
		}
		if len(got) != len(want) {
			t.Errorf("ReferencedBlobs reported %d digests, want %d", len(got), len(want))
		}
		if ok, err := x.BlobReferenced(ctx, digestOf("nothing")); err != nil || ok {
			t.Errorf("BlobReferenced of an unnamed digest = %v, %v; want false", ok, err)
		}
		// A second version with the same archive: two references.
		mv2 := mv
		mv2.Version = "1.1.0"
		mustOK(t, x.CreateModuleVersion(ctx, mv2), "CreateModuleVersion 1.1.0")
		if n, err := x.BlobReferences(ctx, mv.ArchiveDigest); err != nil || n != 2 {
			t.Errorf("BlobReferences of an archive two versions name = %d, %v; want 2", n, err)
		}
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.1.0"), "DeleteModuleVersion 1.1.0")

		// Deleting the rows drops their references (the mirror's stay).
		mustOK(t, x.DeleteProviderVersion(ctx, "acme", "cloud", "1.0.0"), "DeleteProviderVersion")
		mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion")
		for _, d := range []string{pv.SHASumsDigest, pv.DocsDigest, pv.Platforms[0].SHA256, mv.ArchiveDigest} {
			if ok, err := x.BlobReferenced(ctx, d); err != nil || ok {
				t.Errorf("BlobReferenced(%s) after the delete = %v, %v; want false", d, ok, err)
			}
		}
		got = map[string]int{}
		mustOK(t, x.ReferencedBlobs(ctx, func(d string) error { got[d]++; return nil }), "ReferencedBlobs after the deletes")
		if len(got) != 2+len(mirrored.Platforms) || got[mirrored.SHASumsDigest] != 1 {
			t.Errorf("ReferencedBlobs after the deletes = %v, want only the mirrored version's", got)
		}
	})
	t.Run("GuardAndCollect", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		missing := map[string]bool{}
		var checked []string
		x.GuardBlobs(func(_ context.Context, ds []string) error {
			checked = append(checked[:0], ds...)
			for _, d := range ds {
				if missing[d] {
					return registry.Errorf(registry.Unavailable, "blob %s is missing", d)
				}
			}
			return nil
		})
		sameSet := func(what string, want ...string) {
			t.Helper()
			got := append([]string(nil), checked...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s checked %v, want %v", what, got, want)
			}
		}
		pv := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), at(0))
		pv.DocsDigest, pv.DocsSize = digestOf("docs"), 10
		missing[pv.DocsDigest] = true
		wantKind(t, x.CreateProviderVersion(ctx, pv), registry.Unavailable, "CreateProviderVersion with a missing blob")
		_, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "GetProviderVersion after the refused create")
		want := []string{pv.SHASumsDigest, pv.SHASumsSignatureDigest, pv.DocsDigest}
		for _, p := range pv.Platforms {
			want = append(want, p.SHA256)
		}
		sameSet("CreateProviderVersion", want...)
		pv.DocsDigest, pv.DocsSize = "", 0
		mustOK(t, x.CreateProviderVersion(ctx, pv), "CreateProviderVersion with its blobs")
		_, err = x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", digestOf("docs"), 10)
		wantKind(t, err, registry.Unavailable, "SetProviderDocs of a missing blob")
		sameSet("SetProviderDocs", digestOf("docs"))
		mv := testModuleVersion("acme", "network", "aws", "1.0.0", at(0))
		mustOK(t, x.CreateModuleVersion(ctx, mv), "CreateModuleVersion")
		sameSet("CreateModuleVersion", mv.ArchiveDigest)
		mirrored := mirroredVersion("upstream.example", "hashicorp", "null", "3.0.0", 1, at(0))
		_, err = x.PutMirroredVersion(ctx, mirrored)
		mustOK(t, err, "PutMirroredVersion")
		sameSet("PutMirroredVersion (packages not held yet)", mirrored.SHASumsDigest, mirrored.SHASumsSignatureDigest)

		calls := 0
		var releasedAt time.Time
		collect := func(_ context.Context, released time.Time) (bool, error) {
			calls++
			releasedAt = released
			return true, nil
		}
		referenced, err := x.CollectBlob(ctx, mv.ArchiveDigest, collect)
		if err != nil || !referenced || calls != 0 {
			t.Errorf("CollectBlob of a referenced blob = %v, %v, collect called %d times; want true and no call", referenced, err, calls)
		}
		referenced, err = x.CollectBlob(ctx, digestOf("docs"), collect)
		if err != nil || referenced || calls != 1 || !releasedAt.IsZero() {
			t.Errorf("CollectBlob of a blob never referenced = %v, %v, collect called %d times with release %v; want false and one call with none", referenced, err, calls, releasedAt)
		}
		_, err = x.CollectBlob(ctx, digestOf("docs"), func(context.Context, time.Time) (bool, error) {
			return false, registry.Errorf(registry.Unavailable, "the blob store is down")
		})
		wantKind(t, err, registry.Unavailable, "CollectBlob whose collect fails")
	})
	t.Run("Releases", func(t *testing.T) { testBlobReleases(t, newIndex) })
	t.Run("ReleasedByConcurrentDeletes", func(t *testing.T) {
		// Modules of their own (their deletes lock different rows), one
		// archive: whichever delete commits last drops its last reference,
		// and the release must be recorded whatever each delete saw of
		// the others while it ran.
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		systems := []string{"aws", "azure", "gcp", "hetzner", "oci", "openstack", "vsphere", "ovh"}
		archive := testModuleVersion("acme", "network", "shared", "1.0.0", at(0)).ArchiveDigest
		for _, sys := range systems {
			mv := testModuleVersion("acme", "network", sys, "1.0.0", at(0))
			mv.ArchiveDigest = archive
			mustOK(t, x.CreateModuleVersion(ctx, mv), "CreateModuleVersion "+sys)
		}
		errs := make([]error, len(systems))
		runTogether(len(systems), func(i int) {
			errs[i] = x.DeleteModuleVersion(ctx, "acme", "network", systems[i], "1.0.0")
		})
		for i, err := range errs {
			mustOK(t, err, "DeleteModuleVersion "+systems[i])
		}
		if r, err := x.BlobReleased(ctx, archive); err != nil || r.IsZero() {
			t.Errorf("BlobReleased of an archive whose versions were deleted concurrently = %v, %v; want the time of the last delete", r, err)
		}
	})
	t.Run("Lease", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		now := at(0)
		mustOK(t, x.AcquireGCLease(ctx, "a", now, now.Add(time.Hour)), "AcquireGCLease a")
		wantKind(t, x.AcquireGCLease(ctx, "b", now.Add(time.Minute), now.Add(2*time.Hour)), registry.Conflict, "AcquireGCLease b while a holds it")
		mustOK(t, x.AcquireGCLease(ctx, "a", now.Add(time.Minute), now.Add(2*time.Hour)), "AcquireGCLease a again (renewal)")
		// a's lease now ends at 2h: b still may not take it at 1h30.
		wantKind(t, x.AcquireGCLease(ctx, "b", now.Add(90*time.Minute), now.Add(3*time.Hour)), registry.Conflict, "AcquireGCLease b before the renewed lease ends")
		mustOK(t, x.ReleaseGCLease(ctx, "b"), "ReleaseGCLease by a non-holder")
		wantKind(t, x.AcquireGCLease(ctx, "b", now.Add(90*time.Minute), now.Add(3*time.Hour)), registry.Conflict, "AcquireGCLease b after a non-holder's release")
		mustOK(t, x.ReleaseGCLease(ctx, "a"), "ReleaseGCLease a")
		mustOK(t, x.AcquireGCLease(ctx, "b", now.Add(90*time.Minute), now.Add(3*time.Hour)), "AcquireGCLease b after a released")
		// An expired lease is taken over.
		mustOK(t, x.AcquireGCLease(ctx, "c", now.Add(3*time.Hour), now.Add(4*time.Hour)), "AcquireGCLease c once b's lease ended")
		wantKind(t, x.AcquireGCLease(ctx, "", now, now), registry.Invalid, "AcquireGCLease without a holder")
	})
	t.Run("LeaseOneOfMany", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		now := time.Now()
		won := make([]bool, 8)
		runTogether(len(won), func(i int) {
			won[i] = x.AcquireGCLease(ctx, string(rune('a'+i)), now, now.Add(time.Hour)) == nil
		})
		n := 0
		for _, w := range won {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d of %d concurrent AcquireGCLease calls won, want exactly 1", n, len(won))
		}
	})
}

// testRetentionRules checks store.RetentionRules: put, replace, read,
// list, delete, and the cases that are refused.
func testRetentionRules(t *testing.T, newIndex func(*testing.T) store.Index) {
	x, ctx := newIndex(t), t.Context()
	createNamespaces(t, x, "acme", "beta")
	norm := func(r registry.RetentionRule) registry.RetentionRule { r.UpdatedAt = normTime(r.UpdatedAt); return r }
	acme := registry.RetentionRule{Namespace: "acme", KeepLast: 5, KeepWithin: 30 * 24 * time.Hour,
		Pin: []string{"~> 1.0", "2.3.4"}, UpdatedAt: at(time.Hour).In(east), UpdatedBy: "user:alice"}
	_, err := x.GetRetentionRule(ctx, "acme")
	wantKind(t, err, registry.NotFound, "GetRetentionRule before any")
	mustOK(t, x.PutRetentionRule(ctx, acme), "PutRetentionRule")
	got, err := x.GetRetentionRule(ctx, "acme")
	mustOK(t, err, "GetRetentionRule")
	checkEqual(t, "rule", got, acme, norm)
	// Replaced whole.
	acme = registry.RetentionRule{Namespace: "acme", KeepLast: 2, UpdatedAt: at(2 * time.Hour), UpdatedBy: "token:tok_1"}
	mustOK(t, x.PutRetentionRule(ctx, acme), "PutRetentionRule again")
	got, err = x.GetRetentionRule(ctx, "acme")
	mustOK(t, err, "GetRetentionRule after the replace")
	checkEqual(t, "replaced rule", got, acme, norm)
	beta := registry.RetentionRule{Namespace: "beta", KeepWithin: 48 * time.Hour, UpdatedAt: at(0)}
	mustOK(t, x.PutRetentionRule(ctx, beta), "PutRetentionRule beta")
	list, err := x.ListRetentionRules(ctx)
	mustOK(t, err, "ListRetentionRules")
	checkList(t, "rules", list, []registry.RetentionRule{acme, beta}, norm)

	wantKind(t, x.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "nobody", KeepLast: 1, UpdatedAt: at(0)}), registry.NotFound, "PutRetentionRule of a missing namespace")
	wantKind(t, x.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "acme", UpdatedAt: at(0)}), registry.Invalid, "PutRetentionRule keeping everything")
	wantKind(t, x.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "acme", KeepLast: 1, Pin: []string{"nonsense"}, UpdatedAt: at(0)}), registry.Invalid, "PutRetentionRule with a bad pin")
	got, _ = x.GetRetentionRule(ctx, "acme")
	checkEqual(t, "rule after refused puts", got, acme, norm)

	mustOK(t, x.DeleteRetentionRule(ctx, "acme"), "DeleteRetentionRule")
	wantKind(t, x.DeleteRetentionRule(ctx, "acme"), registry.NotFound, "DeleteRetentionRule again")
	_, err = x.GetRetentionRule(ctx, "acme")
	wantKind(t, err, registry.NotFound, "GetRetentionRule after the delete")
	// A namespace takes its rule with it.
	mustOK(t, x.DeleteNamespace(ctx, "beta"), "DeleteNamespace")
	list, err = x.ListRetentionRules(ctx)
	mustOK(t, err, "ListRetentionRules after deleting the namespace")
	if len(list) != 0 {
		t.Errorf("rules after deleting their namespaces: %+v", list)
	}
}

// testBlobReleases checks the releases of store.GarbageCollection: every
// delete records, for each digest no row names any more, its own time
// (BlobReleased, and the time CollectBlob hands its collect); a digest
// another row still names is not released; a write naming a digest again
// forgets its release; CollectBlob forgets the release of a blob its
// collect deleted, and keeps that of one it kept.
func testBlobReleases(t *testing.T, newIndex func(*testing.T) store.Index) {
	x, ctx := newIndex(t), t.Context()
	createNamespaces(t, x, "acme", "other")
	released := func(d string) time.Time {
		t.Helper()
		r, err := x.BlobReleased(ctx, d)
		mustOK(t, err, "BlobReleased")
		return r
	}
	// check reports an error unless each digest was released between
	// before and after (the index's clock is the wall clock here; it
	// keeps microseconds), or not released if before is zero.
	check := func(what string, before, after time.Time, digests ...string) {
		t.Helper()
		for _, d := range digests {
			got := released(d)
			switch {
			case before.IsZero() && !got.IsZero():
				t.Errorf("%s: BlobReleased(%s) = %v, want no release", what, d, got)
			case !before.IsZero() && (got.Before(before.Truncate(time.Microsecond)) || got.After(after)):
				t.Errorf("%s: BlobReleased(%s) = %v, want the time of the delete, between %v and %v", what, d, got, before, after)
			}
		}
	}
	var never time.Time
	// deleting returns the times before and after calling del.
	deleting := func(what string, del func() error) (time.Time, time.Time) {
		t.Helper()
		before := time.Now()
		mustOK(t, del(), what)
		return before, time.Now()
	}
	packages := func(v registry.ProviderVersion) []string {
		var out []string
		for _, p := range v.Platforms {
			out = append(out, p.SHA256)
		}
		return out
	}

	// acme/cloud and other/cloud 1.0.0 have the same SHA256SUMS and
	// signature digests (the files' names), and packages of their own.
	pv := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), at(0))
	pv.DocsDigest, pv.DocsSize = digestOf("docs of acme/cloud 1.0.0"), 10
	mustOK(t, x.CreateProviderVersion(ctx, pv), "CreateProviderVersion acme")
	twin := testVersion("other", "cloud", "1.0.0", testKey("other", 1), at(0))
	mustOK(t, x.CreateProviderVersion(ctx, twin), "CreateProviderVersion other")
	mv := testModuleVersion("acme", "network", "aws", "1.0.0", at(0))
	mustOK(t, x.CreateModuleVersion(ctx, mv), "CreateModuleVersion 1.0.0")
	mv2 := mv
	mv2.Version = "1.1.0" // the same archive
	mustOK(t, x.CreateModuleVersion(ctx, mv2), "CreateModuleVersion 1.1.0")
	check("before any delete", never, never, append(packages(pv), pv.SHASumsDigest, pv.DocsDigest, mv.ArchiveDigest)...)

	b, a := deleting("DeleteProviderVersion", func() error { return x.DeleteProviderVersion(ctx, "acme", "cloud", "1.0.0") })
	check("a deleted version's own files", b, a, append(packages(pv), pv.DocsDigest)...)
	check("files another version names", never, never, pv.SHASumsDigest, pv.SHASumsSignatureDigest)
	check("the other version's packages", never, never, packages(twin)...)
	b, a = deleting("DeleteProvider", func() error { _, err := x.DeleteProvider(ctx, "other", "cloud"); return err })
	check("the files of a deleted provider", b, a, append(packages(twin), pv.SHASumsDigest, pv.SHASumsSignatureDigest)...)

	deleting("DeleteModuleVersion", func() error { return x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0") })
	check("an archive another version names", never, never, mv.ArchiveDigest)
	b, a = deleting("DeleteModule", func() error { _, err := x.DeleteModule(ctx, "acme", "network", "aws"); return err })
	check("the archive of a deleted module", b, a, mv.ArchiveDigest)

	// Named again: no release; deleted again: released again.
	mustOK(t, x.CreateModuleVersion(ctx, mv), "CreateModuleVersion again")
	check("an archive named again", never, never, mv.ArchiveDigest)
	b, a = deleting("DeleteModuleVersion again", func() error { return x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0") })
	check("an archive deleted again", b, a, mv.ArchiveDigest)
	mirrored := mirroredVersion("upstream.example", "hashicorp", "null", "3.0.0", 1, at(0))
	mirrored.SHASumsDigest = pv.SHASumsDigest
	_, err := x.PutMirroredVersion(ctx, mirrored)
	mustOK(t, err, "PutMirroredVersion naming a released SHA256SUMS")
	check("a SHA256SUMS the mirror names", never, never, pv.SHASumsDigest)

	// CollectBlob hands collect the release, and forgets it only once
	// collect deleted the blob.
	want := released(mv.ArchiveDigest)
	for _, deleted := range []bool{false, true} {
		var got time.Time
		referenced, err := x.CollectBlob(ctx, mv.ArchiveDigest, func(_ context.Context, r time.Time) (bool, error) {
			got = r
			return deleted, nil
		})
		if err != nil || referenced || !got.Equal(want) {
			t.Errorf("CollectBlob (collect deleting: %v) = %v, %v, collect got release %v; want false and %v", deleted, referenced, err, got, want)
		}
	}
	check("a collected blob", never, never, mv.ArchiveDigest)
	if got := released(pv.DocsDigest); got.IsZero() {
		t.Error("collecting one blob forgot the release of another")
	}
}

// CheckMigratedReleases checks an index just migrated to schema version
// 15 (0015_released_blobs) from one holding provider acme/cloud 1.0.0,
// whose SHA256SUMS and signature digests are 64 a's and 64 b's, and
// module acme/network/aws 1.0.0, whose archive digest is 64 c's: no
// digest is released, and deleting the versions releases theirs.
func CheckMigratedReleases(t *testing.T, x store.Index) {
	t.Helper()
	ctx := t.Context()
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	for _, d := range []string{a, b, c} {
		if r, err := x.BlobReleased(ctx, d); err != nil || !r.IsZero() {
			t.Errorf("BlobReleased(%s) after the migration = %v, %v; want no release", d, r, err)
		}
	}
	before := time.Now().Truncate(time.Microsecond)
	mustOK(t, x.DeleteModuleVersion(ctx, "acme", "network", "aws", "1.0.0"), "DeleteModuleVersion")
	mustOK(t, x.DeleteProviderVersion(ctx, "acme", "cloud", "1.0.0"), "DeleteProviderVersion")
	after := time.Now()
	for _, d := range []string{a, b, c} {
		if r, err := x.BlobReleased(ctx, d); err != nil || r.Before(before) || r.After(after) {
			t.Errorf("BlobReleased(%s) after the deletes = %v, %v; want a time between %v and %v", d, r, err, before, after)
		}
	}
}
