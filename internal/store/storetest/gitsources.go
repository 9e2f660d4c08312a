package storetest

import (
	"bytes"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

func gitSource(ns, name string) registry.GitSource {
	return registry.GitSource{Namespace: ns, Name: name, System: "aws", URL: "https://git.example.com/" + name + ".git",
		Subdir: "modules/" + name, TagPrefix: "", Auth: registry.GitAuthBasic, Username: "ci", KnownHosts: "",
		SealedSecrets: []byte{0, 1, 2, 0xff}, PollInterval: 10 * time.Minute, CreatedAt: at(0), CreatedBy: "alice", NextSyncAt: at(0)}
}

// testGitSources checks the GitSources contract.
func testGitSources(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateGetListDelete", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "labs")
		b, a, c := gitSource("acme", "net"), gitSource("acme", "dns"), gitSource("labs", "net")
		c.PollInterval, c.Auth = -1, registry.GitAuthNone
		for _, s := range []registry.GitSource{b, a, c} {
			mustOK(t, x.CreateGitSource(ctx, s), "CreateGitSource "+s.Name)
		}
		wantKind(t, x.CreateGitSource(ctx, b), registry.Conflict, "CreateGitSource twice")
		wantKind(t, x.CreateGitSource(ctx, gitSource("nowhere", "net")), registry.NotFound, "CreateGitSource without namespace")
		got, err := x.GetGitSource(ctx, "acme", "net", "aws")
		mustOK(t, err, "GetGitSource")
		if got.URL != b.URL || got.Subdir != b.Subdir || !bytes.Equal(got.SealedSecrets, b.SealedSecrets) || got.PollInterval != b.PollInterval ||
			!got.CreatedAt.Equal(b.CreatedAt) || !got.NextSyncAt.Equal(b.NextSyncAt) || !got.LastSyncAt.IsZero() {
			t.Fatalf("GetGitSource = %+v, want %+v", got, b)
		}
		all, err := x.ListGitSources(ctx, "")
		mustOK(t, err, "ListGitSources")
		if len(all) != 3 || all[0].Name != "dns" || all[1].Name != "net" || all[2].Namespace != "labs" || all[2].PollInterval != -1 {
			t.Fatalf("ListGitSources = %+v", all)
		}
		acme, err := x.ListGitSources(ctx, "acme")
		if err != nil || len(acme) != 2 {
			t.Fatalf("ListGitSources(acme) = %v, %v", acme, err)
		}
		mustOK(t, x.DeleteGitSource(ctx, "acme", "net", "aws"), "DeleteGitSource")
		wantKind(t, x.DeleteGitSource(ctx, "acme", "net", "aws"), registry.NotFound, "DeleteGitSource twice")
		_, err = x.GetGitSource(ctx, "acme", "net", "aws")
		wantKind(t, err, registry.NotFound, "GetGitSource after delete")
	})
	t.Run("LeaseAndTags", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		mustOK(t, x.CreateGitSource(ctx, gitSource("acme", "net")), "CreateGitSource")
		wantKind(t, x.ClaimGitSource(ctx, "acme", "nope", "aws", "h1", at(0), at(time.Minute)), registry.NotFound, "ClaimGitSource without source")
		mustOK(t, x.ClaimGitSource(ctx, "acme", "net", "aws", "h1", at(0), at(time.Minute)), "ClaimGitSource")
		mustOK(t, x.ClaimGitSource(ctx, "acme", "net", "aws", "h1", at(time.Second), at(2*time.Minute)), "ClaimGitSource again by its holder")
		wantKind(t, x.ClaimGitSource(ctx, "acme", "net", "aws", "h2", at(time.Minute), at(3*time.Minute)), registry.Conflict, "ClaimGitSource while held")
		wantKind(t, x.FinishGitSourceSync(ctx, "acme", "net", "aws", "h2", at(time.Minute), "", time.Time{}), registry.Conflict, "FinishGitSourceSync by another")
		mustOK(t, x.ClaimGitSource(ctx, "acme", "net", "aws", "h2", at(3*time.Minute), at(4*time.Minute)), "ClaimGitSource after expiry")
		mustOK(t, x.FinishGitSourceSync(ctx, "acme", "net", "aws", "h2", at(3*time.Minute), "boom", at(13*time.Minute)), "FinishGitSourceSync")
		mustOK(t, x.ClaimGitSource(ctx, "acme", "net", "aws", "h3", at(3*time.Minute), at(4*time.Minute)), "ClaimGitSource after finish")
		g, err := x.GetGitSource(ctx, "acme", "net", "aws")
		if err != nil || g.LastError != "boom" || !g.LastSyncAt.Equal(at(3*time.Minute)) || !g.NextSyncAt.Equal(at(13*time.Minute)) {
			t.Fatalf("after a sync: %+v, %v", g, err)
		}

		tag := registry.GitTag{Tag: "v1.0.0", Version: "1.0.0", Commit: "aaaa", SeenAt: at(0)}
		mustOK(t, x.RecordGitTag(ctx, "acme", "net", "aws", tag), "RecordGitTag")
		mustOK(t, x.RecordGitTag(ctx, "acme", "net", "aws", tag), "RecordGitTag again")
		moved := tag
		moved.Commit = "bbbb"
		wantKind(t, x.RecordGitTag(ctx, "acme", "net", "aws", moved), registry.Conflict, "RecordGitTag moved")
		wantKind(t, x.RecordGitTag(ctx, "acme", "nope", "aws", tag), registry.NotFound, "RecordGitTag without source")
		wantKind(t, x.MarkGitTagPublished(ctx, "acme", "net", "aws", "v9.0.0", at(time.Second)), registry.NotFound, "MarkGitTagPublished unknown")
		mustOK(t, x.MarkGitTagPublished(ctx, "acme", "net", "aws", "v1.0.0", at(time.Second)), "MarkGitTagPublished")
		tags, err := x.GitTags(ctx, "acme", "net", "aws")
		if err != nil || len(tags) != 1 || tags[0].Commit != "aaaa" || !tags[0].PublishedAt.Equal(at(time.Second)) {
			t.Fatalf("GitTags = %+v, %v", tags, err)
		}
		// Deleting the source deletes its tags; deleting the namespace its sources.
		mustOK(t, x.DeleteGitSource(ctx, "acme", "net", "aws"), "DeleteGitSource")
		mustOK(t, x.CreateGitSource(ctx, gitSource("acme", "net")), "CreateGitSource again")
		if tags, err := x.GitTags(ctx, "acme", "net", "aws"); err != nil || len(tags) != 0 {
			t.Fatalf("tags of a new source: %v, %v", tags, err)
		}
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		if all, err := x.ListGitSources(ctx, ""); err != nil || len(all) != 0 {
			t.Fatalf("sources after the namespace's delete: %v, %v", all, err)
		}
	})
}
