package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// embedded makes a data directory with one namespace and one module
// version (whose archive is the only blob the index names) plus a stray
// blob, and returns the directory, the options of a backup of it and the
// archive.
func embedded(t *testing.T) (string, Options, []byte) {
	t.Helper()
	ctx := t.Context()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	archive := []byte("module archive bytes")
	st.Put(t, archive)
	st.Put(t, []byte("a blob no version names"))
	if err := idx.CreateModuleVersion(ctx, registry.ModuleVersion{
		Namespace: "acme", Name: "network", System: "aws", Version: "0.1.0",
		ArchiveDigest: sha(archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)),
		Metadata: []byte(`{"root":{"inputs":[]}}`), PublishedAt: now,
	}); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "signing-secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, Options{IndexPath: st.IndexPath(), Blobs: blobs, TroveVersion: "test", SigningSecretFile: secret}, archive
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"backup.tar", "backup.tar.gz"} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			_, opt, archive := embedded(t)
			out := filepath.Join(t.TempDir(), name)
			m, err := Create(ctx, out, opt)
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts.Blobs != 1 || m.Blobs[0].Digest != sha(archive) || m.Counts.ModuleVersions != 1 || m.Counts.Namespaces != 1 {
				t.Errorf("manifest = %+v; want the one module archive (not the stray blob), 1 module version, 1 namespace", m)
			}
			if m.SchemaVersion != sqlite.SchemaVersion() || m.SigningSecret == nil {
				t.Errorf("manifest schema %d (want %d), signing secret %v", m.SchemaVersion, sqlite.SchemaVersion(), m.SigningSecret)
			}
			if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("backup file: %v, %v; want mode 0600", err, fi)
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 1 {
				t.Errorf("the backup's directory holds %d entries, want the backup alone (no temporary files)", len(entries))
			}
			if _, err := Verify(ctx, out, nil); err != nil {
				t.Fatalf("Verify: %v", err)
			}

			target := filepath.Join(t.TempDir(), "restored")
			if _, aside, err := Restore(ctx, out, Target{DataDir: target, LockFile: filepath.Join(target, "serve.lock")}, nil); err != nil || aside != "" {
				t.Fatalf("Restore: %q, %v", aside, err)
			}
			got, err := os.ReadFile(filepath.Join(target, "blobs", "sha256", sha(archive)[:2], sha(archive)))
			if err != nil || !bytes.Equal(got, archive) {
				t.Errorf("restored blob: %q, %v", got, err)
			}
			if fi, err := os.Stat(filepath.Join(target, "signing-secret")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("restored signing secret: %v, %v; want mode 0600", err, fi)
			}
			idx := sqlitetest.Open(t, target).Index
			if v, err := idx.GetModuleVersion(ctx, "acme", "network", "aws", "0.1.0"); err != nil || v.ArchiveDigest != sha(archive) {
				t.Errorf("restored module version: %+v, %v", v, err)
			}
		})
	}
}

func TestCreateRefusesDamagedStore(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"a changed blob": func(p string) error { return os.WriteFile(p, []byte("module archive bytez"), 0o600) },
		"a missing blob": os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			dir, opt, archive := embedded(t)
			if err := damage(filepath.Join(dir, "blobs", "sha256", sha(archive)[:2], sha(archive))); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "backup.tar")
			if _, err := Create(t.Context(), out, opt); err == nil {
				t.Fatal("Create of a damaged store succeeded")
			} else {
				t.Log(err)
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 0 {
				t.Errorf("a failed Create left %d files behind", len(entries))
			}
		})
	}
}

func TestSecretLeftOutByDefault(t *testing.T) {
	_, opt, _ := embedded(t)
	opt.SigningSecretFile = ""
	out := filepath.Join(t.TempDir(), "backup.tar")
	m, err := Create(t.Context(), out, opt)
	if err != nil {
		t.Fatal(err)
	}
	if m.SigningSecret != nil {
		t.Errorf("the manifest lists a signing secret")
	}
	b, _ := os.ReadFile(out)
	if bytes.Contains(b, []byte("0123456789abcdef0123456789abcdef")) {
		t.Errorf("the backup holds the signing secret's bytes")
	}
}

// afterSnapshot is a blob store that calls fn at its first Stat: Create
// asks for the blobs' sizes once it has taken the snapshot of the index.
type afterSnapshot struct {
	store.Blobs
	once sync.Once
	fn   func()
}

func (a *afterSnapshot) Stat(ctx context.Context, d string) (int64, error) {
	a.once.Do(a.fn)
	return a.Blobs.Stat(ctx, d)
}

// TestCreateWhileCollecting: a version deleted and a garbage collection
// run between the snapshot of the index and the copy of the blobs, within
// the grace period of the delete, leave the backup whole: it holds the
// deleted version, which the snapshot lists, with its archive, although
// the archive was last written long before (by the clock of the index
// and the collector).
func TestCreateWhileCollecting(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	idx, blobs := st.Index, st.Blobs
	now := time.Now().Add(2 * gc.DefaultGrace) // past the grace period of every write below
	idx.SetClock(func() time.Time { return now })
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	archives := map[string][]byte{}
	for _, v := range []string{"0.1.0", "0.2.0"} {
		archive := []byte("module archive of " + v)
		archives[v] = archive
		st.Put(t, archive)
		if err := idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: v,
			ArchiveDigest: sha(archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)), PublishedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	collector, err := gc.New(gc.Options{Index: idx, Blobs: blobs, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hooked := &afterSnapshot{Blobs: blobs, fn: func() {
		if err := idx.DeleteModuleVersion(ctx, "acme", "network", "aws", "0.1.0"); err != nil {
			t.Fatal(err)
		}
		now = now.Add(gc.DefaultGrace / 2)
		if rep, err := collector.Run(ctx, gc.Run{}); err != nil || rep.Young != 1 {
			t.Errorf("collection between the snapshot and the blob copy = %+v, %v; want the deleted version's archive young", rep, err)
		}
	}}
	out := filepath.Join(t.TempDir(), "backup.tar")
	m, err := Create(ctx, out, Options{IndexPath: st.IndexPath(), Blobs: hooked, TroveVersion: "test"})
	if err != nil {
		t.Fatalf("Create while a version is deleted and collected: %v", err)
	}
	if m.Counts.ModuleVersions != 2 || m.Counts.Blobs != 2 {
		t.Errorf("manifest counts %+v; want the snapshot's 2 module versions and their 2 archives", m.Counts)
	}
	target := filepath.Join(t.TempDir(), "restored")
	if _, _, err := Restore(ctx, out, Target{DataDir: target, LockFile: filepath.Join(target, "serve.lock")}, nil); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	restored := sqlitetest.Open(t, target).Index
	for v, archive := range archives {
		mv, err := restored.GetModuleVersion(ctx, "acme", "network", "aws", v)
		if err != nil {
			t.Fatalf("restored module version %s: %v", v, err)
		}
		got, err := os.ReadFile(filepath.Join(target, "blobs", "sha256", mv.ArchiveDigest[:2], mv.ArchiveDigest))
		if err != nil || !bytes.Equal(got, archive) {
			t.Errorf("restored archive of %s: %q, %v; want %q", v, got, err, archive)
		}
	}
}
