package web

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
)

// listedIndex is a storeIndex that counts its reads of version lists.
type listedIndex struct {
	storeIndex
	lists, moduleLists atomic.Int64
}

func (x *listedIndex) ListModuleVersions(ctx context.Context, namespace, name, system string) ([]registry.ModuleVersion, error) {
	x.moduleLists.Add(1)
	return x.storeIndex.ListModuleVersions(ctx, namespace, name, system)
}

func (x *listedIndex) ListProviderVersions(ctx context.Context, namespace, typ string) ([]registry.ProviderVersion, error) {
	x.lists.Add(1)
	return x.storeIndex.ListProviderVersions(ctx, namespace, typ)
}

// settledListService returns a Service on a listedIndex holding the
// provider acme/widget and the module acme/network/aws (1.0.0 each), its
// version lists on the clock it returns, told by the returned flag
// (set) whether the index is settled.
func settledListService(t *testing.T) (*Service, *listedIndex, *clock, *atomic.Bool) {
	t.Helper()
	x := &listedIndex{}
	var logged strings.Builder
	s := storeService(t, &x.storeIndex, &logged)
	s.opt.Index = x
	c := &clock{t: time.Now()}
	s.opt.Now = c.now
	s.lists = newListCache(c.now, s.isSettled)
	settled := new(atomic.Bool)
	settled.Store(true)
	s.UseSettled(settled.Load)
	publishWidgetAndNetwork(t, s, &x.storeIndex, `{}`)
	return s, x, c, settled
}

// TestVersionListsLastWhileSettled reads a provider's version list
// through the cache on a clock: while the index is settled (UseSettled)
// the list outlives the pages' maximum age without an index read, an
// invalidation (a publish) is seen at once, and the list is read again
// on the maximum age once the index is no longer settled, and after the
// settled age when it is.
func TestVersionListsLastWhileSettled(t *testing.T) {
	s, x, c, settled := settledListService(t)

	read := func(wantReads int64, wantVersions ...string) {
		t.Helper()
		l, err := s.providerVersions(t.Context(), "acme", "widget")
		if err != nil {
			t.Fatal(err)
		}
		if got := x.lists.Load(); got != wantReads {
			t.Errorf("%d reads of the version list, want %d", got, wantReads)
		}
		if !slices.Equal(l.names, wantVersions) {
			t.Errorf("versions %v, want %v", l.names, wantVersions)
		}
	}
	read(1, "1.0.0")
	c.add(pageCacheMaxAge + time.Second)
	read(1, "1.0.0") // settled: no read on the pages' age

	pv := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.1.0", Protocols: []string{"5.0"},
		SHASumsDigest: testDigest("a"), SHASumsSignatureDigest: testDigest("b"), SigningKey: testKey("acme"), PublishedAt: c.now(),
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.1.0_linux_amd64.zip", SHA256: testDigest("c"), Size: 1234}}}
	if err := x.CreateProviderVersion(t.Context(), pv); err != nil {
		t.Fatal(err)
	}
	s.Invalidate() // as the server's change hook does
	read(2, "1.1.0", "1.0.0")

	settled.Store(false)
	c.add(pageCacheMaxAge + time.Second)
	read(3, "1.1.0", "1.0.0") // not settled: read again on the pages' age

	settled.Store(true)
	read(3, "1.1.0", "1.0.0")
	c.add(respcache.DefaultSettledAge + time.Second)
	read(4, "1.1.0", "1.0.0") // settled, but past the settled age
}

// TestModuleVersionListsLastWhileSettled is TestVersionListsLastWhileSettled
// for a module's version list, through the module page's data.
func TestModuleVersionListsLastWhileSettled(t *testing.T) {
	s, x, c, settled := settledListService(t)

	read := func(wantReads int64, wantLatest string, wantCount int) {
		t.Helper()
		d, err := s.moduleData(t.Context(), "acme", "network", "aws", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := x.moduleLists.Load(); got != wantReads {
			t.Errorf("%d reads of the version list, want %d", got, wantReads)
		}
		if d.Version != wantLatest || d.VersionCount != wantCount || len(d.Versions) != wantCount {
			t.Errorf("version %s of %d (%d listed), want %s of %d", d.Version, d.VersionCount, len(d.Versions), wantLatest, wantCount)
		}
	}
	read(1, "1.0.0", 1)
	c.add(pageCacheMaxAge + time.Second)
	read(1, "1.0.0", 1) // settled: no read on the pages' age

	mv := registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.1.0", ArchiveDigest: testDigest("e"),
		ArchiveFormat: "tar.gz", ArchiveSize: 4096, Metadata: []byte(`{}`), PublishedAt: c.now()}
	if err := x.CreateModuleVersion(t.Context(), mv); err != nil {
		t.Fatal(err)
	}
	s.Invalidate() // as the server's change hook does
	read(2, "1.1.0", 2)

	settled.Store(false)
	c.add(pageCacheMaxAge + time.Second)
	read(3, "1.1.0", 2) // not settled: read again on the pages' age
	if _, err := s.moduleData(t.Context(), "acme", "network", "aws", "9.9.9"); err != errNotFound {
		t.Errorf("an unknown version: %v, want errNotFound", err)
	}
}
