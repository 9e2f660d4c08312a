package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// withSums returns files with SHA256SUMS replaced by sums, signed by e's key.
func (e *env) withSums(files []releasetest.File, sums string) []releasetest.File {
	out := append([]releasetest.File(nil), files...)
	out[0].Data = []byte(sums)
	out[1].Data = e.key.Sign([]byte(sums))
	return out
}

func TestPublishWithDocs(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	docs := testarchive.TarGz(t, map[string]string{"docs/index.md": "# Example\n", "docs/resources/thing.md": "# thing\n"})
	rel := releasetest.Build(t, e.key, releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: linuxDarwin, Protocols: []string{"5.0"}, Docs: docs})
	res, err := e.publish(t, "1.0.0", rel.Files)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Version.DocsDigest != sha(docs) || res.Version.DocsSize != int64(len(docs)) {
		t.Fatalf("publish with docs = %+v", res)
	}
	got, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil || got.DocsDigest != sha(docs) {
		t.Fatalf("stored version = %+v, %v", got, err)
	}
	if n, err := e.blobs.Stat(ctx, sha(docs)); err != nil || n != int64(len(docs)) {
		t.Errorf("docs blob: %d bytes, %v", n, err)
	}
	// A retry changes nothing; the docs route then sees the same archive.
	if res, err := e.publish(t, "1.0.0", rel.Files); err != nil || res.Created {
		t.Errorf("retry = %+v, %v", res, err)
	}
	if res, err := e.pub.PublishDocs(ctx, "acme", "example", "1.0.0", bytes.NewReader(docs)); err != nil || res.Created || len(res.Docs.Pages) != 2 {
		t.Errorf("PublishDocs of the published docs = %+v, %v; want created false", res, err)
	}
	other := testarchive.TarGz(t, map[string]string{"docs/index.md": "# Other\n"})
	if _, err := e.pub.PublishDocs(ctx, "acme", "example", "1.0.0", bytes.NewReader(other)); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("PublishDocs of other docs = %v, want Conflict", err)
	}
}

func TestPublishRefusesBadDocs(t *testing.T) {
	key := newEnv(t, nil).key
	good := testarchive.TarGz(t, map[string]string{"docs/index.md": "# Example\n"})
	bad := testarchive.TarGz(t, map[string]string{"docs/resources/Thing.md": "# thing\n"})
	base := releasetest.Build(t, key, releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: linuxDarwin, Protocols: []string{"5.0"}})
	docsName := base.Prefix() + "_docs.tar.gz"
	withDocs := releasetest.Build(t, key, releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: linuxDarwin, Protocols: []string{"5.0"}, Docs: good})
	withBad := releasetest.Build(t, key, releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: linuxDarwin, Protocols: []string{"5.0"}, Docs: bad})
	sums := string(base.Files[0].Data)
	insert := func(files []releasetest.File, f releasetest.File) []releasetest.File {
		out := append([]releasetest.File(nil), files[:3]...)
		return append(append(out, f), files[3:]...)
	}
	for name, c := range map[string]struct {
		files func(e *env) []releasetest.File
		msg   string
	}{
		"not listed": {func(e *env) []releasetest.File {
			return insert(base.Files, releasetest.File{Name: docsName, Data: good})
		}, "not listed in SHA256SUMS, so the signature does not cover it"},
		"listed, not uploaded": {func(e *env) []releasetest.File {
			files := append([]releasetest.File(nil), withDocs.Files[:3]...)
			return append(files, withDocs.Files[4:]...)
		}, "lists " + docsName + " but it was not uploaded"},
		"other bytes": {func(e *env) []releasetest.File {
			files := append([]releasetest.File(nil), withDocs.Files...)
			files[3] = releasetest.File{Name: docsName, Data: testarchive.TarGz(t, map[string]string{"docs/index.md": "# changed\n"})}
			return files
		}, "SHA256SUMS lists"},
		"bad archive": {func(e *env) []releasetest.File { return withBad.Files }, docsName + `: documentation page "docs/resources/Thing.md"`},
		"another version's docs": {func(e *env) []releasetest.File {
			other := "terraform-provider-example_2.0.0_docs.tar.gz"
			return e.withSums(base.Files, sums+fmt.Sprintf("%s  %s\n", sha(good), other))
		}, "is not the documentation of example 1.0.0"},
		"two docs archives": {func(e *env) []releasetest.File {
			return e.withSums(base.Files, sums+fmt.Sprintf("%s  %s\n%s  %s\n", sha(good), docsName, sha(good), strings.Replace(docsName, ".tar.gz", ".zip", 1)))
		}, "two documentation archives"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnvWithKey(t, key)
			_, err := e.publish(t, "1.0.0", c.files(e))
			if !registry.IsKind(err, registry.Invalid) || !strings.Contains(registry.Message(err), c.msg) {
				t.Fatalf("publish = %v, want Invalid containing %q", err, c.msg)
			}
			e.assertNothingStored(t, "1.0.0")
		})
	}
}
