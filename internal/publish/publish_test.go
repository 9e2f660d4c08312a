package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

func sha(b []byte) string { return releasetest.Digest(b) }

// build returns a release of example for linuxDarwin, with a manifest
// declaring protocols 5.0 and 6.0; its files are in upload order:
// SHA256SUMS, .sig, manifest, zips. payload varies the executables' bytes.
func build(t testing.TB, key *signingtest.Key, version, payload string) releasetest.Release {
	t.Helper()
	return releasetest.Build(t, key, releasetest.Spec{
		Type: "example", Version: version, Platforms: linuxDarwin, Protocols: []string{"5.0", "6.0"}, Payload: payload,
	})
}

type env struct {
	idx       store.Index
	blobs     store.Blobs
	tmp       string
	key       *signingtest.Key
	pub       *publish.Publisher
	published []string
	mu        sync.Mutex
}

func newEnv(t *testing.T, wrap func(store.Index) store.Index) *env {
	t.Helper()
	return newEnvWith(t, signingtest.NewKey(t, "acme"), wrap)
}

// newEnvWithKey is newEnv with key as the namespace's signing key.
func newEnvWithKey(t *testing.T, key *signingtest.Key) *env {
	t.Helper()
	return newEnvWith(t, key, nil)
}

func newEnvWith(t *testing.T, key *signingtest.Key, wrap func(store.Index) store.Index) *env {
	t.Helper()
	ctx := context.Background()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	e := &env{idx: idx, blobs: blobs, tmp: filepath.Join(dir, "tmp"), key: key}
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	k, err := signing.ParsePublicKey(e.key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	k.Namespace = "acme"
	if err := idx.AddSigningKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	var pubIdx store.Index = idx
	if wrap != nil {
		pubIdx = wrap(idx)
	}
	// What the index announces to this process's caches (one change
	// channel: the index's change records, not a callback of the publisher).
	idx.OnCommit(func(c store.Change) {
		if c.Kind != store.ChangeProvider {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.published = append(e.published, c.Namespace+"/"+c.Name)
	})
	e.pub = publish.New(publish.Options{Index: pubIdx, Blobs: blobs, TempDir: e.tmp})
	return e
}

func (e *env) publish(t *testing.T, version string, files []releasetest.File) (publish.Result, error) {
	t.Helper()
	return e.pub.PublishProvider(context.Background(), "acme", "example", version, releasetest.NewSource(files))
}

// assertNothingStored checks that a refused publish left no version, no
// blob and no temporary file behind.
func (e *env) assertNothingStored(t *testing.T, version string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.idx.GetProviderVersion(ctx, "acme", "example", version); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("version %s visible after a refused publish: %v", version, err)
	}
	n := 0
	e.blobs.Walk(ctx, func(string, int64) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs stored after a refused publish", n)
	}
	tmp, _ := os.ReadDir(e.tmp)
	if len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}
}

var linuxDarwin = []string{"linux_amd64", "darwin_arm64"}

func TestPublish(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	rel := build(t, e.key, "1.0.0", "")
	files := rel.Files
	res, err := e.publish(t, "1.0.0", files)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created {
		t.Fatal("first publish reported Created = false")
	}
	got, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Protocols, ",") != "5.0,6.0" {
		t.Errorf("protocols = %v, want the manifest's", got.Protocols)
	}
	if got.SigningKey.KeyID != e.key.KeyID || got.SigningKey.ASCIIArmor == "" {
		t.Errorf("signing key snapshot = %+v, want key %s", got.SigningKey, e.key.KeyID)
	}
	if got.SHASumsDigest != sha(files[0].Data) || got.SHASumsSignatureDigest != sha(files[1].Data) {
		t.Errorf("sums digests = %s %s", got.SHASumsDigest, got.SHASumsSignatureDigest)
	}
	if len(got.Platforms) != 2 {
		t.Fatalf("platforms = %+v", got.Platforms)
	}
	for _, p := range got.Platforms {
		data := rel.ByName(p.Filename)
		if p.SHA256 != sha(data) || p.Size != int64(len(data)) || p.Filename != "terraform-provider-example_1.0.0_"+p.OS+"_"+p.Arch+".zip" {
			t.Errorf("platform %+v does not describe its zip", p)
		}
		b, err := e.blobs.Open(ctx, p.SHA256)
		if err != nil {
			t.Fatalf("blob of %s: %v", p.Filename, err)
		}
		stored, _ := io.ReadAll(b.Content)
		b.Close()
		if !bytes.Equal(stored, data) {
			t.Errorf("stored bytes of %s differ", p.Filename)
		}
		zip := filepath.Join(t.TempDir(), p.Filename)
		if err := os.WriteFile(zip, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if h1, err := release.PackageHash(zip); err != nil || !strings.HasPrefix(p.H1, "h1:") || p.H1 != h1 {
			t.Errorf("platform %s has H1 %q, want the package's hash %q (%v)", p.Filename, p.H1, h1, err)
		}
	}
	if got.Platforms[0].H1 == got.Platforms[1].H1 {
		t.Errorf("two packages of other contents have the same H1 %q", got.Platforms[0].H1)
	}
	for _, d := range []string{got.SHASumsDigest, got.SHASumsSignatureDigest} {
		if _, err := e.blobs.Stat(ctx, d); err != nil {
			t.Errorf("blob %s: %v", d, err)
		}
	}
	if len(e.published) != 1 || e.published[0] != "acme/example" {
		t.Errorf("provider changes announced = %v", e.published)
	}
	if tmp, _ := os.ReadDir(e.tmp); len(tmp) != 0 {
		t.Errorf("temporary files left behind: %v", tmp)
	}

	t.Run("identical re-publish", func(t *testing.T) {
		res, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files)
		if err != nil || res.Created {
			t.Fatalf("re-publish = %+v, %v; want unchanged success", res.Created, err)
		}
		if len(e.published) != 1 {
			t.Errorf("a provider change announced for an unchanged re-publish")
		}
	})
	t.Run("other bytes conflict", func(t *testing.T) {
		_, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "x").Files)
		if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), "already published") {
			t.Fatalf("publish of other bytes = %v, want conflict", err)
		}
		again, _ := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
		if again.SHASumsDigest != got.SHASumsDigest {
			t.Errorf("stored version changed")
		}
	})
	t.Run("same precedence with build metadata conflicts", func(t *testing.T) {
		_, err := e.publish(t, "1.0.0+other", build(t, e.key, "1.0.0+other", "x").Files)
		if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), "same precedence as the published version 1.0.0") {
			t.Fatalf("publish of 1.0.0+other = %v, want a precedence conflict", err)
		}
		if _, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0+other"); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("1.0.0+other stored after a refused publish: %v", err)
		}
		n := 0
		e.blobs.Walk(ctx, func(string, int64) error { n++; return nil })
		if want := len(got.Platforms) + 2; n != want {
			t.Errorf("%d blobs stored after the refused publish, want the first version's %d", n, want)
		}
	})
}

func TestPublishRefuses(t *testing.T) {
	other := signingtest.NewKey(t, "other")
	tests := []struct {
		name    string
		version string
		mutate  func(t *testing.T, e *env, files []releasetest.File) []releasetest.File
		kind    registry.Kind
		phrase  string
	}{
		{"tampered zip", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			f[3].Data = append([]byte(nil), f[3].Data...)
			f[3].Data[len(f[3].Data)/2] ^= 0xff
			return f
		}, registry.Invalid, "SHA256SUMS lists"},
		{"unknown signing key", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			f[1].Data = other.Sign(f[0].Data)
			return f
		}, registry.Invalid, "not registered"},
		{"armored signature", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			f[1].Data = e.key.SignArmored(f[0].Data)
			return f
		}, registry.Invalid, "armor"},
		{"missing signature", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			return append(f[:1], f[2:]...)
		}, registry.Invalid, "signature"},
		{"zip missing", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			return f[:len(f)-1]
		}, registry.Invalid, "not uploaded"},
		{"listed manifest missing", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			if !strings.HasSuffix(f[2].Name, "_manifest.json") {
				t.Fatalf("file 2 is %s, want the manifest", f[2].Name)
			}
			return append(f[:2:2], f[3:]...)
		}, registry.Invalid, "lists terraform-provider-example_1.0.0_manifest.json but it was not uploaded"},
		{"manifest not listed", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			// A SHA256SUMS signed without the manifest's line: the
			// protocols it declares would be served unsigned.
			f[0].Data = dropSumsLine(t, f[0].Data, f[2].Name)
			f[1].Data = e.key.Sign(f[0].Data)
			return f
		}, registry.Invalid, "terraform-provider-example_1.0.0_manifest.json is not listed in SHA256SUMS"},
		{"tampered manifest", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			f[2].Data = []byte(`{"version":1,"metadata":{"protocol_versions":["6.0"]}}`)
			return f
		}, registry.Invalid, "manifest.json does not match its checksum"},
		{"zip not listed", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			return append(f, releasetest.File{Name: "terraform-provider-example_1.0.0_windows_amd64.zip", Data: f[3].Data})
		}, registry.Invalid, "not listed"},
		{"unexpected file", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File {
			return append(f, releasetest.File{Name: "notes.txt", Data: []byte("hi")})
		}, registry.Invalid, "unexpected file"},
		{"leading v", "v1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File { return f }, registry.Invalid, "leading"},
		{"empty", "1.0.0", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File { return nil }, registry.Invalid, "empty"},
		{"sums for another version", "1.0.1", func(t *testing.T, e *env, f []releasetest.File) []releasetest.File { return f }, registry.Invalid, "first file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			files := build(t, e.key, "1.0.0", "").Files
			_, err := e.publish(t, tt.version, tt.mutate(t, e, files))
			if !registry.IsKind(err, tt.kind) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.phrase)) {
				t.Fatalf("error = %v (kind %v), want %v containing %q", err, registry.KindOf(err), tt.kind, tt.phrase)
			}
			e.assertNothingStored(t, tt.version)
		})
	}

	t.Run("zip without executable", func(t *testing.T) {
		e := newEnv(t, nil)
		zipData := releasetest.Zip(t, map[string]string{"README.md": "no binary"})
		name := "terraform-provider-example_1.0.0_linux_amd64.zip"
		sums := []byte(sha(zipData) + "  " + name + "\n")
		_, err := e.publish(t, "1.0.0", []releasetest.File{
			{Name: "terraform-provider-example_1.0.0_SHA256SUMS", Data: sums},
			{Name: "terraform-provider-example_1.0.0_SHA256SUMS.sig", Data: e.key.Sign(sums)},
			{Name: name, Data: zipData},
		})
		if !registry.IsKind(err, registry.Invalid) {
			t.Fatalf("error = %v, want invalid", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})

	t.Run("zip over the size limit", func(t *testing.T) {
		e := newEnv(t, nil)
		e.pub = publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tmp, MaxZipBytes: 64})
		_, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files)
		if !registry.IsKind(err, registry.TooLarge) {
			t.Fatalf("error = %v, want too large", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})

	t.Run("key expired since it signed", func(t *testing.T) {
		// The release was signed while the key was valid; the publish
		// comes after the key expired.
		e := newEnvWithKey(t, signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519, Lifetime: time.Hour}))
		e.pub = publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tmp, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		_, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files)
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "signed by key "+e.key.KeyID+", which has expired") {
			t.Fatalf("error = %v, want invalid: signed by an expired key", err)
		}
		e.assertNothingStored(t, "1.0.0")
	})

	t.Run("identical retry after the key expired", func(t *testing.T) {
		// Published while the key was valid; the same release sent again
		// after it expired is the idempotent retry it was, not a refusal.
		e := newEnvWithKey(t, signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519, Lifetime: time.Hour}))
		files := build(t, e.key, "1.0.0", "").Files
		if res, err := e.publish(t, "1.0.0", files); err != nil || !res.Created {
			t.Fatalf("first publish = %+v, %v", res, err)
		}
		e.pub = publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tmp, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		if res, err := e.publish(t, "1.0.0", files); err != nil || res.Created {
			t.Fatalf("retry after the key expired = %+v, %v; want the unchanged success of a retry", res, err)
		}
		// Another release under the same version is still a conflict.
		if _, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "other").Files); !registry.IsKind(err, registry.Conflict) {
			t.Fatalf("other content after the key expired: %v, want a conflict", err)
		}
	})

	t.Run("unknown namespace", func(t *testing.T) {
		e := newEnv(t, nil)
		_, err := e.pub.PublishProvider(context.Background(), "nobody", "example", "1.0.0", releasetest.NewSource(nil))
		if !registry.IsKind(err, registry.NotFound) {
			t.Fatalf("error = %v, want not found", err)
		}
	})
}

// dropSumsLine returns sums without the line of name, failing the test
// if there is none.
func dropSumsLine(t *testing.T, sums []byte, name string) []byte {
	t.Helper()
	var out []byte
	found := false
	for line := range strings.Lines(string(sums)) {
		if strings.HasSuffix(strings.TrimSuffix(line, "\n"), "  "+name) {
			found = true
			continue
		}
		out = append(out, line...)
	}
	if !found {
		t.Fatalf("SHA256SUMS does not list %s:\n%s", name, sums)
	}
	return out
}

// failingIndex fails CreateProviderVersion, as a crash or a lost database
// connection at the last step would.
type failingIndex struct{ store.Index }

func (failingIndex) CreateProviderVersion(context.Context, registry.ProviderVersion) error {
	return errors.New("connection lost")
}

func TestPublishIndexFailureLeavesNoVersion(t *testing.T) {
	e := newEnv(t, func(idx store.Index) store.Index { return failingIndex{idx} })
	_, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files)
	if err == nil {
		t.Fatal("publish succeeded although the index failed")
	}
	if _, err := e.idx.GetProviderVersion(context.Background(), "acme", "example", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("version visible after a failed commit: %v", err)
	}
	if len(e.published) != 0 {
		t.Errorf("a provider change announced for a failed publish")
	}
	// A retry with a working index succeeds.
	e.pub = publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tmp})
	if res, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files); err != nil || !res.Created {
		t.Fatalf("retry = %+v, %v", res, err)
	}
}

func TestConcurrentPublishExactlyOneWins(t *testing.T) {
	e := newEnv(t, nil)
	const n = 6
	releases := make([][]releasetest.File, n)
	for i := range releases {
		releases[i] = build(t, e.key, "2.0.0", fmt.Sprint(i)).Files
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.publish(t, "2.0.0", releases[i])
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("publishes %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !registry.IsKind(err, registry.Conflict):
			t.Fatalf("publish %d: %v, want success or conflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no publish succeeded")
	}
	got, err := e.idx.GetProviderVersion(context.Background(), "acme", "example", "2.0.0")
	if err != nil || got.SHASumsDigest != sha(releases[winner][0].Data) {
		t.Fatalf("stored version is not the winner's: %v", err)
	}
}

func TestRemoveStaleUploads(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.pub.RemoveStaleUploads(); err != nil {
		t.Fatalf("with no staging directory yet: %v", err)
	}
	os.MkdirAll(e.tmp, 0o700)
	stale := filepath.Join(e.tmp, "publish-123.zip")
	other := filepath.Join(e.tmp, "keep.txt")
	os.WriteFile(stale, []byte("partial"), 0o600)
	os.WriteFile(other, []byte("not ours"), 0o600)
	if err := e.pub.RemoveStaleUploads(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("staged upload survived: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file Trove did not stage was removed: %v", err)
	}
}

// publishedMeanwhile is an index on which another publish commits right
// after the first lookup of a version (by running commit once), as a
// concurrent publish of that version may.
type publishedMeanwhile struct {
	store.Index
	once   sync.Once
	commit func()
}

func (x *publishedMeanwhile) GetProviderVersion(ctx context.Context, namespace, typ, version string) (registry.ProviderVersion, error) {
	v, err := x.Index.GetProviderVersion(ctx, namespace, typ, version)
	x.once.Do(x.commit)
	return v, err
}

// TestPublishedMeanwhile publishes a release while another publish of the
// same version commits between the publisher's first lookup of the
// version and its precedence check: the same release is an idempotent
// retry (Created false), another one a Conflict.
func TestPublishedMeanwhile(t *testing.T) {
	for _, c := range []struct {
		name, payload string
		conflict      bool
	}{
		{"Identical", "", false},
		{"Different", "other", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var x *publishedMeanwhile
			e := newEnv(t, func(idx store.Index) store.Index {
				x = &publishedMeanwhile{Index: idx}
				return x
			})
			rel := build(t, e.key, "1.0.0", "")
			winner := publish.New(publish.Options{Index: e.idx, Blobs: e.blobs, TempDir: t.TempDir()})
			x.commit = func() {
				res, err := winner.PublishProvider(context.Background(), "acme", "example", "1.0.0", build(t, e.key, "1.0.0", c.payload).Source())
				if err != nil || !res.Created {
					t.Errorf("the concurrent publish = %+v, %v", res, err)
				}
			}
			res, err := e.publish(t, "1.0.0", rel.Files)
			switch {
			case c.conflict && !registry.IsKind(err, registry.Conflict):
				t.Fatalf("publish of other content = %+v, %v; want a Conflict", res, err)
			case !c.conflict && (err != nil || res.Created || res.Version.SHASumsDigest != sha(rel.Files[0].Data)):
				t.Fatalf("publish of the same content = %+v, %v; want the stored version, not created", res, err)
			}
			// The index announces the winner's commit, once; the publish
			// that found it stored commits nothing.
			if len(e.published) != 1 {
				t.Errorf("provider changes announced = %v, want the other publish's commit only", e.published)
			}
		})
	}
}
