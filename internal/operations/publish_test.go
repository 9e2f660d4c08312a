package operations_test

import (
	"archive/tar"
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest/testarchive"
	"trove.dev/trove/internal/webhook"
)

// publishEnv is env with the publishers on a real blob store, and a
// signing key of acme.
type publishEnv struct {
	*env
	blobs store.Blobs
	key   *signingtest.Key
}

func newPublishEnv(t *testing.T) *publishEnv {
	t.Helper()
	e := newEnv(t)
	dir, blobs := e.st.Dir, e.st.Blobs
	key := signingtest.NewKey(t, "acme")
	k, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	k.Namespace = "acme"
	if err := e.idx.AddSigningKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	e.ops = operations.New(operations.Options{
		Index: e.idx, Access: auth.NewAccess(e.authn, e.idx), Audit: audit.New(e.idx, nil),
		Events:    webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}),
		Publisher: publish.New(publish.Options{Index: e.idx, Blobs: blobs, TempDir: tmp}),
		Modules:   modules.NewPublisher(modules.Options{Index: e.idx, Blobs: blobs, TempDir: tmp}),
		Blobs:     blobs,
		Now:       func() time.Time { return e.now },
	})
	return &publishEnv{env: e, blobs: blobs, key: key}
}

// blobCount counts the stored blobs.
func (e *publishEnv) blobCount(t *testing.T) int {
	t.Helper()
	n := 0
	if err := e.blobs.Walk(t.Context(), func(string, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// refusedNoBlobs is refused, and checks that no blob was stored either.
func (e *publishEnv) refusedNoBlobs(t *testing.T, want registry.Kind, op func(ctx context.Context) error) {
	t.Helper()
	n := e.blobCount(t)
	e.refused(t, want, op)
	if got := e.blobCount(t); got != n {
		t.Errorf("a refused publish stored %d blobs", got-n)
	}
	if d := e.deliveries(t); len(d) != 0 {
		t.Errorf("a refused publish enqueued events %v", d)
	}
}

func (e *publishEnv) release(t *testing.T, version, payload string) releasetest.Release {
	return releasetest.Build(t, e.key, releasetest.Spec{Type: "example", Version: version,
		Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}, Payload: payload})
}

// TestPublishProviderRefused: a publish refused for rights or input
// stores nothing: no version, no blob, no audit entry, no event, no cache
// drop.
func TestPublishProviderRefused(t *testing.T) {
	e := newPublishEnv(t)
	pat := e.user(t, "pat")
	good := e.release(t, "2.0.0", "")
	tampered := e.release(t, "2.0.0", "")
	tampered.Files[2].Data = append(bytes.Clone(tampered.Files[2].Data), 0)
	other := signingtest.NewKey(t, "evil")
	foreign := releasetest.Build(t, other, releasetest.Spec{Type: "example", Version: "2.0.0", Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}})
	zipSlip := e.release(t, "2.0.0", "")
	for _, c := range []struct {
		name      string
		actor     operations.Actor
		ns, typ   string
		version   string
		files     []releasetest.File
		want      registry.Kind
		fixSource func([]releasetest.File) []releasetest.File
	}{
		{"reader", e.user(t, "bob"), "acme", "example", "2.0.0", good.Files, registry.Forbidden, nil},
		{"stranger", e.user(t, "eve"), "acme", "example", "2.0.0", good.Files, registry.NotFound, nil},
		{"token of another namespace", e.service(t, registry.ScopePublish, "other"), "acme", "example", "2.0.0", good.Files, registry.NotFound, nil},
		{"read token", e.service(t, registry.ScopeRead, "acme"), "acme", "example", "2.0.0", good.Files, registry.Forbidden, nil},
		{"invalid namespace", pat, "../acme", "example", "2.0.0", good.Files, registry.Invalid, nil},
		{"unknown namespace", e.user(t, "root"), "nosuch", "example", "2.0.0", good.Files, registry.NotFound, nil},
		{"invalid type", pat, "acme", "ex\x00ample", "2.0.0", good.Files, registry.Invalid, nil},
		{"invalid version", pat, "acme", "example", "2.0.0\n", good.Files, registry.Invalid, nil},
		{"empty release", pat, "acme", "example", "2.0.0", nil, registry.Invalid, nil},
		{"version of another release", pat, "acme", "example", "2.0.1", good.Files, registry.Invalid, nil},
		{"tampered zip", pat, "acme", "example", "2.0.0", tampered.Files, registry.Invalid, nil},
		{"signed by a foreign key", pat, "acme", "example", "2.0.0", foreign.Files, registry.Invalid, nil},
		{"zip not listed", pat, "acme", "example", "2.0.0", append(bytes2(zipSlip.Files), releasetest.File{Name: "terraform-provider-example_2.0.0_linux_arm64.zip", Data: []byte("PK")}), registry.Invalid, nil},
		{"stray file", pat, "acme", "example", "2.0.0", append(bytes2(good.Files), releasetest.File{Name: "../../etc/passwd", Data: []byte("x")}), registry.Invalid, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.refusedNoBlobs(t, c.want, func(ctx context.Context) error {
				_, err := e.ops.PublishProvider(ctx, c.actor, c.ns, c.typ, c.version, releasetest.NewSource(c.files))
				return err
			})
		})
	}
}

// bytes2 copies a release's files, so that appending leaves it alone.
func bytes2(files []releasetest.File) []releasetest.File {
	return append([]releasetest.File(nil), files...)
}

// TestPublishProvider publishes a release: one transaction with its audit
// entry, event and provenance-carrying origin; an identical retry is
// Created false and records nothing; other content is a Conflict.
func TestPublishProvider(t *testing.T) {
	e := newPublishEnv(t)
	pat := e.user(t, "pat")
	rel := e.release(t, "2.0.0", "")
	res, err := e.ops.PublishProvider(t.Context(), pat, "acme", "example", "2.0.0", rel.Source())
	if err != nil || !res.Created {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditProviderPublish || a.Actor != "user:pat" || a.Target != "acme/example 2.0.0" || a.SourceAddr != "192.0.2.7" ||
		!strings.HasPrefix(a.Details, "signed by key ") {
		t.Errorf("audit entry %+v", a)
	}
	if d := e.deliveries(t); len(d) != 1 || d[0] != registry.EventProviderPublished {
		t.Errorf("events %v", d)
	}
	before := e.state(t)
	blobs := e.blobCount(t)
	res, err = e.ops.PublishProvider(t.Context(), pat, "acme", "example", "2.0.0", rel.Source())
	if err != nil || res.Created {
		t.Fatalf("identical retry = %+v, %v; want created false", res, err)
	}
	if after := e.state(t); len(after.Audit) != len(before.Audit) || e.blobCount(t) != blobs {
		t.Error("an identical retry recorded or stored something")
	}
	e.refusedNoBlobs(t, registry.Conflict, func(ctx context.Context) error {
		_, err := e.ops.PublishProvider(ctx, pat, "acme", "example", "2.0.0", e.release(t, "2.0.0", "other").Source())
		return err
	})
}

// TestConcurrentIdenticalProviderPublishes: concurrent publishes of the
// same release all succeed, exactly one creates it, one audit entry.
func TestConcurrentIdenticalProviderPublishes(t *testing.T) {
	e := newPublishEnv(t)
	pat := e.user(t, "pat")
	rel := e.release(t, "3.0.0", "")
	before := len(e.state(t).Audit)
	const n = 8
	var wg sync.WaitGroup
	results := make([]publish.Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.ops.PublishProvider(context.Background(), pat, "acme", "example", "3.0.0", rel.Source())
		}()
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("publish %d: %v", i, errs[i])
		}
		if results[i].Created {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d publishes created the version; want 1", created)
	}
	if got := len(e.state(t).Audit) - before; got != 1 {
		t.Errorf("%d audit entries; want 1", got)
	}
}

// TestPublishProviderDocs uploads documentation: refusals store nothing,
// the upload commits with its audit entry, the same archive again is
// Created false.
func TestPublishProviderDocs(t *testing.T) {
	e := newPublishEnv(t)
	pat := e.user(t, "pat")
	if _, err := e.ops.PublishProvider(t.Context(), pat, "acme", "example", "2.0.0", e.release(t, "2.0.0", "").Source()); err != nil {
		t.Fatal(err)
	}
	e.deliveries(t)
	docs := testarchive.TarGz(t, map[string]string{"docs/index.md": "# Example\n", "docs/resources/thing.md": "# thing\n"})
	for _, c := range []struct {
		name    string
		actor   operations.Actor
		ns      string
		version string
		archive []byte
		want    registry.Kind
	}{
		{"reader", e.user(t, "bob"), "acme", "2.0.0", docs, registry.Forbidden},
		{"stranger", e.user(t, "eve"), "acme", "2.0.0", docs, registry.NotFound},
		{"unknown version", pat, "acme", "9.9.9", docs, registry.NotFound},
		{"invalid version", pat, "acme", "2.0.0/../1", docs, registry.Invalid},
		{"not an archive", pat, "acme", "2.0.0", []byte("<html>not docs</html>"), registry.Invalid},
		{"empty", pat, "acme", "2.0.0", nil, registry.Invalid},
		{"path traversal", pat, "acme", "2.0.0", testarchive.TarGzOf(t, testarchive.Entry{Name: "docs/index.md", Body: "# x\n"}, testarchive.Entry{Name: "../../etc/passwd.md", Body: "# x\n"}), registry.Invalid},
		{"symlink", pat, "acme", "2.0.0", testarchive.TarGzOf(t, testarchive.Entry{Name: "docs/index.md", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), registry.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.refusedNoBlobs(t, c.want, func(ctx context.Context) error {
				_, err := e.ops.PublishProviderDocs(ctx, c.actor, c.ns, "example", c.version, bytes.NewReader(c.archive))
				return err
			})
		})
	}
	res, err := e.ops.PublishProviderDocs(t.Context(), pat, "acme", "example", "2.0.0", bytes.NewReader(docs))
	if err != nil || !res.Created || len(res.Docs.Pages) != 2 {
		t.Fatalf("docs upload = %+v, %v", res, err)
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditProviderDocs || a.Actor != "user:pat" || a.Details != "documentation "+releasetest.Digest(docs) {
		t.Errorf("audit entry %+v", a)
	}
	n := len(e.state(t).Audit)
	if res, err := e.ops.PublishProviderDocs(t.Context(), pat, "acme", "example", "2.0.0", bytes.NewReader(docs)); err != nil || res.Created {
		t.Fatalf("same docs again = %+v, %v; want created false", res, err)
	}
	if len(e.state(t).Audit) != n {
		t.Error("the same docs again were audited")
	}
	e.refusedNoBlobs(t, registry.Conflict, func(ctx context.Context) error {
		_, err := e.ops.PublishProviderDocs(ctx, pat, "acme", "example", "2.0.0", bytes.NewReader(testarchive.TarGz(t, map[string]string{"docs/index.md": "# Other\n"})))
		return err
	})
}

// TestPublishModule publishes module versions: every hostile archive and
// free text is refused with nothing stored; a good one commits with its
// audit entry and event; an identical retry is Created false.
func TestPublishModule(t *testing.T) {
	e := newPublishEnv(t)
	pat := e.user(t, "pat")
	good := testarchive.TarGz(t, map[string]string{"main.tf": "variable \"x\" {}\n", "README.md": "# net\n"})
	up := func(version, origin string, archive []byte) modules.Upload {
		return modules.Upload{Namespace: "acme", Name: "net", System: "aws", Version: version, Origin: origin, Archive: bytes.NewReader(archive)}
	}
	for _, c := range []struct {
		name  string
		actor operations.Actor
		up    modules.Upload
		want  registry.Kind
	}{
		{"reader", e.user(t, "bob"), up("2.0.0", "", good), registry.Forbidden},
		{"stranger", e.user(t, "eve"), up("2.0.0", "", good), registry.NotFound},
		{"dot-dot entry", pat, up("2.0.0", "", testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "../evil.tf", Body: "x"})), registry.Invalid},
		{"symlink to /etc/passwd", pat, up("2.0.0", "", testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})), registry.Invalid},
		{"not an archive", pat, up("2.0.0", "", []byte("just some text, not an archive")), registry.Invalid},
		{"origin with control characters", pat, up("2.0.0", "https://example.com/\x1b[31m", good), registry.Invalid},
		{"origin with a newline", pat, up("2.0.0", "a\nb", good), registry.Invalid},
		{"origin over its limit", pat, up("2.0.0", "https://example.com/"+strings.Repeat("a", 600), good), registry.Invalid},
		{"invalid name", pat, modules.Upload{Namespace: "acme", Name: "../net", System: "aws", Version: "2.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		{"existing version, other bytes", pat, up("1.0.0", "", good), registry.Conflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.refusedNoBlobs(t, c.want, func(ctx context.Context) error {
				_, err := e.ops.PublishModule(ctx, c.actor, c.up)
				return err
			})
		})
	}
	res, err := e.ops.PublishModule(t.Context(), pat, up("2.0.0", "https://git.example.com/net", good))
	if err != nil || !res.Created {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditModulePublish || a.Actor != "user:pat" || a.Target != "acme/net/aws 2.0.0" || a.SourceAddr != "192.0.2.7" {
		t.Errorf("audit entry %+v", a)
	}
	if d := e.deliveries(t); len(d) != 1 || d[0] != registry.EventModulePublished {
		t.Errorf("events %v", d)
	}
	n := len(e.state(t).Audit)
	if res, err := e.ops.PublishModule(t.Context(), pat, up("2.0.0", "https://git.example.com/net", good)); err != nil || res.Created {
		t.Fatalf("identical retry = %+v, %v", res, err)
	}
	if len(e.state(t).Audit) != n {
		t.Error("an identical retry was audited")
	}
}

// TestPublishMirroredModule: the module mirror's publishes pass the
// checks of every module publish (a hostile archive stores nothing) and
// are audited as the mirror, with the version's origin.
func TestPublishMirroredModule(t *testing.T) {
	e := newPublishEnv(t)
	up := func(archive []byte) modules.Upload {
		return modules.Upload{Namespace: "open", Name: "vpc", System: "aws", Version: "1.0.0",
			Origin: "mirrored from upstream.example/vpc/aws 1.0.0", Archive: bytes.NewReader(archive)}
	}
	for name, archive := range map[string][]byte{
		"dot-dot entry":          testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "../evil.tf", Body: "x"}),
		"symlink to /etc/passwd": testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		"not an archive":         []byte("<html>an upstream's error page</html>"),
	} {
		t.Run(name, func(t *testing.T) {
			e.refusedNoBlobs(t, registry.Invalid, func(ctx context.Context) error {
				_, err := e.ops.PublishMirroredModule(ctx, up(archive))
				return err
			})
		})
	}
	res, err := e.ops.PublishMirroredModule(t.Context(), up(testarchive.TarGz(t, map[string]string{"main.tf": "variable \"x\" {}\n"})))
	if err != nil || !res.Created {
		t.Fatalf("mirrored publish = %+v, %v", res, err)
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditModulePublish || a.Actor != operations.MirrorActor || a.Details != "mirrored from upstream.example/vpc/aws 1.0.0" {
		t.Errorf("audit entry %+v", a)
	}
	if d := e.deliveries(t); len(d) != 1 || d[0] != registry.EventModulePublished {
		t.Errorf("events %v", d)
	}
}
