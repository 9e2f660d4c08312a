package fsblob

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	if left := tempFiles(t, filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Errorf("tmp holds %v after a successful Put, want nothing", left)
	}
}

// tempFiles lists the files in tmp and its directories, but for the lock
// files of the Stores' own directories.
func tempFiles(t *testing.T, tmp string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tmp, path)
		if !d.IsDir() && !(d.Name() == lockName && strings.HasPrefix(rel, ownerPrefix)) {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
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
			if left := tempFiles(t, filepath.Join(dir, "tmp")); len(left) != 0 {
				t.Errorf("tmp holds %v after a failed Put, want nothing", left)
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

// TestOpenRemovesLeftoversOfEndedStores checks that Open removes the
// directory of a Store that is gone (its lock is free) at once, whatever
// its age, and leaves the directory of a Store still open alone.
func TestOpenRemovesLeftoversOfEndedStores(t *testing.T) {
	dir := t.TempDir()
	live, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	dead := filepath.Join(tmp, ownerPrefix+"dead")
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lockName, "put-partial"} {
		if err := os.WriteFile(filepath.Join(dead, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inFlight := filepath.Join(live.tmp, "put-in-flight")
	if err := os.WriteFile(inFlight, []byte("being written"), 0o600); err != nil {
		t.Fatal(err)
	}

	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory of an ended Store survived Open: %v", err)
	}
	if _, err := os.Stat(inFlight); err != nil && live.lock != nil {
		t.Errorf("Open removed a file of a Store still open: %v", err)
	}
	for _, s := range []*Store{live, again} {
		data := []byte("still works " + s.tmp)
		if err := s.Put(t.Context(), digestOf(data), int64(len(data)), bytes.NewReader(data)); err != nil {
			t.Errorf("Put after another Open: %v", err)
		}
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again.tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Close left the Store's directory: %v", err)
	}
}

// TestLeftoversOfKilledWriterAreRemoved kills (SIGKILL) a process in the
// middle of a Put and checks that the next Open removes its partial file.
func TestLeftoversOfKilledWriterAreRemoved(t *testing.T) {
	if dir := os.Getenv("FSBLOB_TEST_WRITER"); dir != "" {
		killedWriter(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeftoversOfKilledWriterAreRemoved$")
	cmd.Env = append(os.Environ(), "FSBLOB_TEST_WRITER="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "writing\n" {
		t.Fatalf("the writer said %q (%v), want writing", line, err)
	}
	tmp := filepath.Join(dir, "tmp")
	partial := tempFiles(t, tmp)
	if len(partial) != 1 || !strings.Contains(partial[0], "put-") {
		t.Fatalf("while the writer writes, tmp holds %v; want its one partial file", partial)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.lock == nil {
		t.Skip("no file locks here: leftovers are removed once StaleTempAge old")
	}
	if left := tempFiles(t, tmp); len(left) != 0 {
		t.Errorf("after the writer was killed and the store opened again, tmp holds %v; want nothing", left)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 || filepath.Join(tmp, entries[0].Name()) != s.tmp {
		t.Errorf("tmp holds %v, want only the new Store's directory %s", entries, filepath.Base(s.tmp))
	}
}

// killedWriter runs in the child process of
// TestLeftoversOfKilledWriterAreRemoved: it starts a Put whose content
// never ends and says "writing" once part of it is on disk.
func killedWriter(dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r := &stallingReader{chunk: bytes.Repeat([]byte("x"), 64<<10)}
	s.Put(context.Background(), digestOf([]byte("never")), 1<<30, r) //nolint:errcheck // killed before it returns
	os.Exit(3)
}

// stallingReader yields one chunk, then announces on stdout that the
// chunk was written (the second Read comes after the write) and blocks.
type stallingReader struct {
	chunk []byte
	reads int
}

func (r *stallingReader) Read(p []byte) (int, error) {
	r.reads++
	if r.reads == 1 {
		return copy(p, r.chunk), nil
	}
	os.Stdout.WriteString("writing\n")
	time.Sleep(time.Hour) // until killed
	return 0, io.ErrUnexpectedEOF
}
