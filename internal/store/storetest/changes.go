package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TestChangeFeed checks a store.ChangeFeed. open returns an empty index
// to write to and the feed to watch: the same index for a backend that
// feeds its own changes, another index on the same database for one that
// several processes share. The feed must report ChangeAll when it starts,
// then each committed namespace, provider or module change in commit
// order, nothing for a refused write, and end with Unavailable when the
// index closes. An index that is a store.ChangeHook must hand the same
// changes to OnCommit before each write returns.
func TestChangeFeed(t *testing.T, open func(t *testing.T) (writer store.Index, feed store.ChangeFeed)) {
	t.Run("CommittedChangesInOrder", func(t *testing.T) {
		writer, feed := open(t)
		ctx := t.Context()
		ch := watch(t, feed)
		if c := next(t, ch); c.Kind != store.ChangeAll {
			t.Fatalf("first change = %+v, want ChangeAll when watching starts", c)
		}
		// What the writer's own hook reports, before each write returns.
		var hooked []store.Change
		if h, ok := writer.(store.ChangeHook); ok {
			stop := h.OnCommit(func(c store.Change) { hooked = append(hooked, c) })
			defer stop()
		}
		now := time.Now()
		mustOK(t, writer.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}), "CreateNamespace")
		v := registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: "1.0.0", Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "ABCDEF0123456789", CreatedAt: now}, PublishedAt: now}
		mustOK(t, writer.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		// A refused create commits nothing and reports nothing.
		wantKind(t, writer.CreateProviderVersion(ctx, v), registry.Conflict, "CreateProviderVersion again")
		m := registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "0.1.0",
			ArchiveDigest: strings.Repeat("a", 64), ArchiveFormat: "tar.gz", PublishedAt: now}
		mustOK(t, writer.CreateModuleVersion(ctx, m), "CreateModuleVersion")
		// Lifecycle changes drop the documents that show the versions.
		mustOK(t, writer.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", &registry.Deprecation{Reason: "old", At: now}), "SetProviderDeprecation")
		mustOK(t, writer.SetModuleRevocation(ctx, "acme", "network", "aws", "0.1.0", &registry.Revocation{Reason: "broken", At: now}), "SetModuleRevocation")
		wantKind(t, writer.SetProviderRevocation(ctx, "acme", "cloud", "9.0.0", nil), registry.NotFound, "SetProviderRevocation of a missing version")
		mustOK(t, writer.DeleteModuleVersion(ctx, "acme", "network", "aws", "0.1.0"), "DeleteModuleVersion")
		// Deletes of whole providers and modules, and of provider
		// versions, drop their documents too.
		mustOK(t, writer.CreateModuleVersion(ctx, m), "CreateModuleVersion again")
		v2 := v
		v2.Version = "2.0.0"
		mustOK(t, writer.CreateProviderVersion(ctx, v2), "CreateProviderVersion 2.0.0")
		mustOK(t, writer.DeleteProviderVersion(ctx, "acme", "cloud", "2.0.0"), "DeleteProviderVersion")
		wantKind(t, writer.DeleteProviderVersion(ctx, "acme", "cloud", "2.0.0"), registry.NotFound, "DeleteProviderVersion again")
		if _, err := writer.DeleteProvider(ctx, "acme", "cloud"); err != nil {
			t.Fatalf("DeleteProvider: %v", err)
		}
		if _, err := writer.DeleteModule(ctx, "acme", "network", "aws"); err != nil {
			t.Fatalf("DeleteModule: %v", err)
		}
		want := []store.Change{
			{Kind: store.ChangeNamespace, Namespace: "acme"},
			{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
			{Kind: store.ChangeModule, Namespace: "acme", Name: "network", System: "aws"},
			{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
			{Kind: store.ChangeModule, Namespace: "acme", Name: "network", System: "aws"},
			{Kind: store.ChangeModule, Namespace: "acme", Name: "network", System: "aws"},
			{Kind: store.ChangeModule, Namespace: "acme", Name: "network", System: "aws"},
			{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
			{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
			{Kind: store.ChangeProvider, Namespace: "acme", Name: "cloud"},
			{Kind: store.ChangeModule, Namespace: "acme", Name: "network", System: "aws"},
		}
		for i, w := range want {
			if c := next(t, ch); c != w {
				t.Errorf("change %d = %+v, want %+v", i, c, w)
			}
		}
		if _, ok := writer.(store.ChangeHook); ok && !slices.Equal(hooked, want) {
			t.Errorf("OnCommit got %+v, want %+v", hooked, want)
		}
		select {
		case c := <-ch:
			t.Errorf("unexpected change %+v", c)
		case <-time.After(200 * time.Millisecond):
		}
	})

	t.Run("StopsWhenIndexCloses", func(t *testing.T) {
		_, feed := open(t)
		listening := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- feed.WatchChanges(context.Background(), func(store.Change) {
				select {
				case listening <- struct{}{}:
				default:
				}
			})
		}()
		select {
		case <-listening:
		case err := <-done:
			t.Fatalf("WatchChanges returned %v before the index closed", err)
		case <-time.After(10 * time.Second):
			t.Fatal("WatchChanges reported nothing within 10s")
		}
		if err := feed.(store.Index).Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case err := <-done:
			wantKind(t, err, registry.Unavailable, "WatchChanges after Close")
		case <-time.After(10 * time.Second):
			t.Fatal("WatchChanges did not return after Close")
		}
	})
}

// watch starts watching feed until the test ends; WatchChanges must then
// return context.Canceled.
func watch(t *testing.T, feed store.ChangeFeed) <-chan store.Change {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan store.Change, 100)
	done := make(chan error, 1)
	go func() { done <- feed.WatchChanges(ctx, func(c store.Change) { ch <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("WatchChanges returned %v after its context ended, want context.Canceled", err)
		}
	})
	return ch
}

// next returns the next change, failing the test if none comes in time.
func next(t *testing.T, ch <-chan store.Change) store.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported within 10s")
		return store.Change{}
	}
}
