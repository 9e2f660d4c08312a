package storetest

import (
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testProviderDocs checks the documentation of provider versions:
// SetProviderDocs and the DocsDigest and DocsSize that
// CreateProviderVersion keeps and the reads return.
func testProviderDocs(t *testing.T, newIndex func(*testing.T) store.Index) {
	docs, other := digestOf("docs"), digestOf("other docs")
	// read returns the version from both reads, checking they agree.
	read := func(t *testing.T, x store.Index, ns, typ, version string) registry.ProviderVersion {
		t.Helper()
		got, err := x.GetProviderVersion(t.Context(), ns, typ, version)
		mustOK(t, err, "GetProviderVersion")
		list, err := x.ListProviderVersions(t.Context(), ns, typ)
		mustOK(t, err, "ListProviderVersions")
		for _, v := range list {
			if v.Version == version && (v.DocsDigest != got.DocsDigest || v.DocsSize != got.DocsSize) {
				t.Errorf("ListProviderVersions has docs %q (%d bytes), GetProviderVersion %q (%d bytes)", v.DocsDigest, v.DocsSize, got.DocsDigest, got.DocsSize)
			}
		}
		return got
	}
	// set is SetProviderDocs for the calls whose created flag is not
	// the question.
	set := func(x store.Index, ns, typ, version, digest string, size int64) error {
		_, err := x.SetProviderDocs(t.Context(), ns, typ, version, digest, size)
		return err
	}
	t.Run("NoneByDefault", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		if got := read(t, x, "acme", "cloud", "1.0.0"); got.DocsDigest != "" || got.DocsSize != 0 {
			t.Errorf("a version created without docs has docs %q (%d bytes)", got.DocsDigest, got.DocsSize)
		}
	})
	t.Run("CreateKeepsDocs", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.DocsDigest, v.DocsSize = docs, 1234
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion with docs")
		got := read(t, x, "acme", "cloud", "1.0.0")
		checkEqual(t, "GetProviderVersion", got, v, normVersion)
		bad := testVersion("acme", "cloud", "2.0.0", testKey("acme", 1), t0)
		bad.DocsDigest, bad.DocsSize = "NOT-A-DIGEST", 1
		wantKind(t, x.CreateProviderVersion(ctx, bad), registry.Invalid, "CreateProviderVersion with an invalid docs digest")
		_, err := x.GetProviderVersion(ctx, "acme", "cloud", "2.0.0")
		wantKind(t, err, registry.NotFound, "GetProviderVersion of the refused version")
	})
	t.Run("SetOnceIdempotentThenConflict", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.1.0", testKey("acme", 1), at(time.Hour))), "CreateProviderVersion 1.1.0")
		created, err := x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", docs, 1234)
		mustOK(t, err, "SetProviderDocs")
		if !created {
			t.Error("the first SetProviderDocs reported created false")
		}
		created, err = x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", docs, 1234)
		mustOK(t, err, "SetProviderDocs again with the same digest")
		if created {
			t.Error("SetProviderDocs again with the same digest reported created true")
		}
		wantKind(t, set(x, "acme", "cloud", "1.0.0", other, 99), registry.Conflict, "SetProviderDocs with another digest")
		got := read(t, x, "acme", "cloud", "1.0.0")
		v.DocsDigest, v.DocsSize = docs, 1234
		checkEqual(t, "version after SetProviderDocs", got, v, normVersion)
		if got := read(t, x, "acme", "cloud", "1.1.0"); got.DocsDigest != "" {
			t.Errorf("SetProviderDocs of 1.0.0 gave 1.1.0 docs %q", got.DocsDigest)
		}
	})
	t.Run("ConflictOnCreatedDocs", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.DocsDigest, v.DocsSize = docs, 10
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion with docs")
		created, err := x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", docs, 10)
		mustOK(t, err, "SetProviderDocs with the created digest")
		if created {
			t.Error("SetProviderDocs with the digest the version was created with reported created true")
		}
		wantKind(t, set(x, "acme", "cloud", "1.0.0", other, 10), registry.Conflict, "SetProviderDocs with another digest")
	})
	t.Run("Missing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "empty")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		for _, c := range [][3]string{
			{"nope", "cloud", "1.0.0"}, {"empty", "cloud", "1.0.0"}, {"acme", "dns", "1.0.0"},
			{"acme", "cloud", "1.0.1"}, {"acme", "cloud", "1.0.0+build"},
		} {
			wantKind(t, set(x, c[0], c[1], c[2], docs, 10), registry.NotFound, "SetProviderDocs "+c[0]+"/"+c[1]+" "+c[2])
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		for name, c := range map[string]struct {
			digest string
			size   int64
		}{
			"empty digest":      {"", 10},
			"upper-case digest": {"ABCDEF" + docs[6:], 10},
			"short digest":      {docs[:63], 10},
			"zero size":         {docs, 0},
			"negative size":     {docs, -1},
		} {
			wantKind(t, set(x, "acme", "cloud", "1.0.0", c.digest, c.size), registry.Invalid, "SetProviderDocs with "+name)
		}
		if got := read(t, x, "acme", "cloud", "1.0.0"); got.DocsDigest != "" {
			t.Errorf("refused SetProviderDocs calls left docs %q", got.DocsDigest)
		}
	})
	t.Run("ConcurrentSetsOneWins", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		const n = 6
		errs := make([]error, n)
		runTogether(n, func(i int) {
			errs[i] = set(x, "acme", "cloud", "1.0.0", digestOf("docs "+string(rune('a'+i))), int64(10+i))
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Errorf("SetProviderDocs %d and %d both succeeded", winner, i)
			default:
				wantKind(t, err, registry.Conflict, "SetProviderDocs that lost")
			}
		}
		if winner < 0 {
			t.Fatal("no SetProviderDocs succeeded")
		}
		if got := read(t, x, "acme", "cloud", "1.0.0"); got.DocsDigest != digestOf("docs "+string(rune('a'+winner))) || got.DocsSize != int64(10+winner) {
			t.Errorf("docs = %q (%d bytes), want those of the winner %d", got.DocsDigest, got.DocsSize, winner)
		}
	})
	t.Run("ConcurrentSameDigestOneCreated", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		const n = 6
		created := make([]bool, n)
		errs := make([]error, n)
		runTogether(n, func(i int) {
			created[i], errs[i] = x.SetProviderDocs(ctx, "acme", "cloud", "1.0.0", docs, 10)
		})
		count := 0
		for i := range n {
			mustOK(t, errs[i], "SetProviderDocs of the same digest")
			if created[i] {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d of %d concurrent SetProviderDocs of one digest reported created, want exactly 1", count, n)
		}
		if got := read(t, x, "acme", "cloud", "1.0.0"); got.DocsDigest != docs || got.DocsSize != 10 {
			t.Errorf("docs = %q (%d bytes), want %q (10 bytes)", got.DocsDigest, got.DocsSize, docs)
		}
	})
}
