package fsblob

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/storetest"
)

func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, dir
}

func TestConformance(t *testing.T) {
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs {
		s, _ := newStore(t)
		return s
	})
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestLayoutAndOSFile(t *testing.T) {
	s, dir := newStore(t)
	data := []byte("provider zip bytes")
	d := digestOf(data)
	if err := s.Put(t.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "sha256", d[:2], d))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("blob file at sha256/%s/%s: %q, %v", d[:2], d, got, err)
	}
	blob, err := s.Open(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer blob.Close()
	if _, ok := blob.Content.(*os.File); !ok {
		t.Errorf("Content is %T, want *os.File so that net/http can use sendfile", blob.Content)
	}
	if blob.ModTime.IsZero() {
		t.Error("ModTime is zero")
	}
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(entries) != 0 {
		t.Errorf("tmp holds %v (%v) after a successful Put, want nothing", entries, err)
	}
}

func TestFailedPutsLeaveNoTempFiles(t *testing.T) {
	s, dir := newStore(t)
	data := []byte("content")
	for name, digest := range map[string]string{
		"wrong digest": digestOf([]byte("other")),
		"wrong size":   digestOf(append(data, '!')),
	} {
		t.Run(name, func(t *testing.T) {
			err := s.Put(t.Context(), digest, int64(len(data)), bytes.NewReader(data))
			if !registry.IsKind(err, registry.Invalid) {
				t.Fatalf("Put = %v, want kind invalid", err)
			}
			entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
			if err != nil || len(entries) != 0 {
				t.Errorf("tmp holds %v (%v) after a failed Put, want nothing", entries, err)
			}
		})
	}
}

func TestPutFileChecks(t *testing.T) {
	data := []byte("a verified provider archive")
	d := digestOf(data)
	tests := map[string]struct {
		digest string
		size   int64
		setup  func(t *testing.T, path string) // makes the file at path
		kind   registry.Kind
	}{
		"wrong digest": {digestOf([]byte("x")), int64(len(data)), writeData(data), registry.Invalid},
		"wrong size":   {d, int64(len(data)) + 1, writeData(data), registry.Invalid},
		"bad digest":   {"../" + d[3:], int64(len(data)), writeData(data), registry.Invalid},
		"directory": {d, int64(len(data)), func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, registry.Invalid},
		"symlink": {d, int64(len(data)), func(t *testing.T, path string) {
			target := path + ".target"
			writeData(data)(t, target)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, registry.Invalid},
		"missing": {d, int64(len(data)), func(*testing.T, string) {}, registry.Internal},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t)
			path := filepath.Join(t.TempDir(), "upload")
			tc.setup(t, path)
			err := s.PutFile(t.Context(), tc.digest, tc.size, path)
			if err == nil || registry.KindOf(err) != tc.kind {
				t.Fatalf("PutFile = %v, want kind %v", err, tc.kind)
			}
			if _, err := s.Stat(t.Context(), d); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("Stat after the refused PutFile = %v, want not found", err)
			}
			if tc.kind != registry.Internal {
				if _, err := os.Lstat(path); err != nil {
					t.Errorf("the refused PutFile removed the caller's file: %v", err)
				}
			}
		})
	}
}

func writeData(data []byte) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "tmp", "put-stale")
	fresh := filepath.Join(dir, "tmp", "put-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp file removed: %v", err)
	}
}

func TestWalkSkipsStrayFiles(t *testing.T) {
	s, dir := newStore(t)
	data := []byte("real blob")
	d := digestOf(data)
	if err := s.Put(t.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	other := digestOf([]byte("misplaced"))
	for _, p := range []string{
		filepath.Join(dir, "tmp", d),                      // a temp file named like a blob
		filepath.Join(dir, "sha256", d[:2], "README"),     // not a digest
		filepath.Join(dir, "sha256", "zz", other),         // wrong shard
		filepath.Join(dir, "sha256", d[:2], other),        // digest not matching its shard
		filepath.Join(dir, "sha256", "notes.txt"),         // not a shard
		filepath.Join(dir, "sha256", d[:2], d+".partial"), // not a digest
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stray"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if d[:2] == other[:2] {
		t.Fatal("test digests share a shard; pick other content")
	}
	var got []string
	if err := s.Walk(t.Context(), func(digest string, size int64) error {
		got = append(got, digest)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != d {
		t.Errorf("Walk reported %v, want only %s", got, d)
	}
}

func TestOpenRejectsEmptyDir(t *testing.T) {
	if _, err := Open(""); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Open(\"\") = %v, want kind invalid", err)
	}
}

func BenchmarkOpen(b *testing.B) {
	s, _ := newStore(b)
	data := bytes.Repeat([]byte("x"), 1<<20)
	d := digestOf(data)
	if err := s.Put(b.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		blob, err := s.Open(b.Context(), d)
		if err != nil {
			b.Fatal(err)
		}
		blob.Close()
	}
}
