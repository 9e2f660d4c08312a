package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TestBlobs runs the store.Blobs conformance suite, and the
// store.FilePutter one if the backend has that ability. newBlobs must
// return a new, empty store on every call and clean it up with t.Cleanup.
//
// Beyond the contract's sentences the suite requires path safety: a digest
// that is not 64 lower-case hex digits is refused by Put with Invalid, and
// Open and Stat fail on it with Invalid or NotFound.
func TestBlobs(t *testing.T, newBlobs func(t *testing.T) store.Blobs) {
	t.Run("PutOpenStat", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		for name, size := range map[string]int{"empty": 0, "one byte": 1, "4KiB": 4096, "1MiB+3": 1<<20 + 3} {
			t.Run(name, func(t *testing.T) {
				data := randomBytes(size, uint64(size))
				digest := sha256Hex(data)
				mustOK(t, b.Put(ctx, digest, int64(size), bytes.NewReader(data)), "Put")
				n, err := b.Stat(ctx, digest)
				mustOK(t, err, "Stat")
				if n != int64(size) {
					t.Errorf("Stat = %d, want %d", n, size)
				}
				checkContent(t, b, digest, data)
			})
		}
	})
	t.Run("ContentIsSeekable", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(10_000, 1)
		digest := sha256Hex(data)
		mustOK(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), "Put")
		blob, err := b.Open(ctx, digest)
		mustOK(t, err, "Open")
		defer blob.Close()
		for _, c := range []struct {
			offset int64
			whence int
			pos    int64
		}{
			{0, io.SeekEnd, 10_000}, {1234, io.SeekStart, 1234}, {-10, io.SeekEnd, 9_990}, {5, io.SeekCurrent, 9_995}, {0, io.SeekStart, 0},
		} {
			pos, err := blob.Content.Seek(c.offset, c.whence)
			if err != nil || pos != c.pos {
				t.Fatalf("Seek(%d, %d) = %d, %v; want %d", c.offset, c.whence, pos, err, c.pos)
			}
			buf := make([]byte, 16)
			k, _ := io.ReadFull(blob.Content, buf)
			if want := data[pos:min(pos+16, 10_000)]; !bytes.Equal(buf[:k], want) {
				t.Errorf("read at %d = %x, want %x", pos, buf[:k], want)
			}
			if _, err := blob.Content.Seek(pos, io.SeekStart); err != nil {
				t.Fatalf("Seek back to %d: %v", pos, err)
			}
		}
	})
	t.Run("PutVerifiesDigestAndSize", func(t *testing.T) {
		data := randomBytes(3000, 2)
		digest := sha256Hex(data)
		tests := map[string]struct {
			digest string
			size   int64
			body   []byte
		}{
			"content of another digest": {sha256Hex(append([]byte{1}, data...)), 3000, data},
			"one byte short":            {digest, 3001, data},
			"one byte too many":         {digest, 2999, data},
			"far too many":              {digest, 10, data},
			"negative size":             {digest, -1, data},
			"empty body":                {digest, 3000, nil},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				b, ctx := newBlobs(t), t.Context()
				err := b.Put(ctx, tc.digest, tc.size, bytes.NewReader(tc.body))
				wantKind(t, err, registry.Invalid, "Put")
				for _, d := range []string{tc.digest, digest} {
					_, err := b.Stat(ctx, d)
					wantKind(t, err, registry.NotFound, "Stat after the refused Put")
					_, err = b.Open(ctx, d)
					wantKind(t, err, registry.NotFound, "Open after the refused Put")
				}
				checkWalk(t, b, map[string]int64{})
			})
		}
	})
	t.Run("MalformedDigests", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := []byte("payload")
		good := sha256Hex(data)
		for name, digest := range map[string]string{
			"empty":       "",
			"upper case":  strings.ToUpper(good),
			"63 digits":   good[:63],
			"65 digits":   good + "0",
			"not hex":     "g" + good[1:],
			"traversal":   "../../../../etc/passwd",
			"slash":       good[:2] + "/" + good[3:],
			"dot dot":     ".." + good[2:],
			"nul":         good[:63] + "\x00",
			"space":       " " + good[1:],
			"sha256 pfix": "sha256:" + good,
		} {
			t.Run(name, func(t *testing.T) {
				wantKind(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), registry.Invalid, "Put")
				if _, err := b.Open(ctx, digest); !registry.IsKind(err, registry.Invalid) && !registry.IsKind(err, registry.NotFound) {
					t.Errorf("Open(%q): error = %v, want kind invalid or not found", digest, err)
				}
				if _, err := b.Stat(ctx, digest); !registry.IsKind(err, registry.Invalid) && !registry.IsKind(err, registry.NotFound) {
					t.Errorf("Stat(%q): error = %v, want kind invalid or not found", digest, err)
				}
				if err := b.Delete(ctx, digest); err != nil && !registry.IsKind(err, registry.Invalid) {
					t.Errorf("Delete(%q): error = %v, want nil or kind invalid", digest, err)
				}
			})
		}
		checkWalk(t, b, map[string]int64{})
	})
	t.Run("PutIsIdempotent", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(5000, 3)
		digest := sha256Hex(data)
		for i := range 3 {
			mustOK(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), fmt.Sprintf("Put %d", i+1))
		}
		checkContent(t, b, digest, data)
		checkWalk(t, b, map[string]int64{digest: 5000})
	})
	t.Run("PutOfAPresentBlobRenewsModTime", func(t *testing.T) {
		// The garbage collector's grace period counts from the last Put
		// (store.Blobs). Modification times may have one-second
		// granularity (S3), so the second Put comes after the next second.
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(3000, 11)
		digest := sha256Hex(data)
		mustOK(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), "Put")
		first := modTime(t, b, digest)
		time.Sleep(time.Until(first.Truncate(time.Second).Add(1100 * time.Millisecond)))
		mustOK(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), "Put again")
		if again := modTime(t, b, digest); !again.After(first) {
			t.Errorf("ModTime after a second Put = %v, want after the first Put's %v", again, first)
		}
		checkContent(t, b, digest, data)
		if fp, ok := b.(store.FilePutter); ok {
			before := modTime(t, b, digest)
			time.Sleep(time.Until(before.Truncate(time.Second).Add(1100 * time.Millisecond)))
			path := filepath.Join(t.TempDir(), "again")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			mustOK(t, fp.PutFile(ctx, digest, int64(len(data)), path), "PutFile of the present blob")
			if again := modTime(t, b, digest); !again.After(before) {
				t.Errorf("ModTime after PutFile of a present blob = %v, want after %v", again, before)
			}
		}
	})
	t.Run("FailingReaderStoresNothing", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(200_000, 4)
		digest := sha256Hex(data)
		boom := errors.New("connection reset by peer")
		r := io.MultiReader(bytes.NewReader(data[:100_000]), errReader{boom})
		if err := b.Put(ctx, digest, int64(len(data)), r); err == nil {
			t.Fatal("Put with a reader failing midway succeeded")
		}
		_, err := b.Stat(ctx, digest)
		wantKind(t, err, registry.NotFound, "Stat after the failed Put")
		checkWalk(t, b, map[string]int64{})
		mustOK(t, b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)), "Put after the failed Put")
		checkContent(t, b, digest, data)
	})
	t.Run("Delete", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		keep, drop := []byte("keep me"), []byte("drop me")
		for _, d := range [][]byte{keep, drop} {
			mustOK(t, b.Put(ctx, sha256Hex(d), int64(len(d)), bytes.NewReader(d)), "Put")
		}
		mustOK(t, b.Delete(ctx, sha256Hex(drop)), "Delete")
		_, err := b.Stat(ctx, sha256Hex(drop))
		wantKind(t, err, registry.NotFound, "Stat of a deleted blob")
		_, err = b.Open(ctx, sha256Hex(drop))
		wantKind(t, err, registry.NotFound, "Open of a deleted blob")
		mustOK(t, b.Delete(ctx, sha256Hex(drop)), "Delete of a deleted blob")
		mustOK(t, b.Delete(ctx, sha256Hex([]byte("never stored"))), "Delete of a blob never stored")
		checkContent(t, b, sha256Hex(keep), keep)
		checkWalk(t, b, map[string]int64{sha256Hex(keep): int64(len(keep))})
	})
	t.Run("Walk", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		checkWalk(t, b, map[string]int64{})
		want := map[string]int64{}
		for i := range 5 {
			data := randomBytes(100*i, uint64(i))
			want[sha256Hex(data)] = int64(len(data))
			mustOK(t, b.Put(ctx, sha256Hex(data), int64(len(data)), bytes.NewReader(data)), "Put")
		}
		checkWalk(t, b, want)

		stop := errors.New("stop here")
		calls := 0
		err := b.Walk(ctx, func(string, int64) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("Walk with fn failing at once = %v after %d calls, want %v after 1", err, calls, stop)
		}
	})
	t.Run("ConcurrentPutOfOneDigest", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(300_000, 5)
		digest := sha256Hex(data)
		const n = 8
		errs := make([]error, n)
		runTogether(n, func(i int) { errs[i] = b.Put(ctx, digest, int64(len(data)), bytes.NewReader(data)) })
		for i, err := range errs {
			mustOK(t, err, fmt.Sprintf("concurrent Put %d", i))
		}
		checkContent(t, b, digest, data)
		checkWalk(t, b, map[string]int64{digest: int64(len(data))})
	})
	t.Run("ReadersNeverSeePartialBlobs", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		data := randomBytes(1<<20, 6)
		digest := sha256Hex(data)
		done := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var problems []string
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				blob, err := b.Open(ctx, digest)
				if registry.IsKind(err, registry.NotFound) {
					continue
				}
				var got []byte
				if err == nil {
					got, err = io.ReadAll(blob.Content)
					blob.Close()
				}
				if err != nil || !bytes.Equal(got, data) {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("a reader saw %d of %d bytes (error %v)", len(got), len(data), err))
					mu.Unlock()
					return
				}
			}
		})
		// A slow writer makes a partial blob more likely to be seen.
		mustOK(t, b.Put(ctx, digest, int64(len(data)), &chunkReader{data: data, chunk: 4096}), "Put")
		mustOK(t, b.Delete(ctx, digest), "Delete")
		mustOK(t, b.Put(ctx, digest, int64(len(data)), &chunkReader{data: data, chunk: 4096}), "Put")
		close(done)
		wg.Wait()
		for _, p := range problems {
			t.Error(p)
		}
	})
	t.Run("FilePutter", func(t *testing.T) {
		b, ctx := newBlobs(t), t.Context()
		fp, ok := b.(store.FilePutter)
		if !ok {
			t.Skip("the backend has no FilePutter ability")
		}
		data := randomBytes(70_000, 7)
		digest := sha256Hex(data)
		for i := range 2 { // the second time the blob exists already
			path := filepath.Join(t.TempDir(), "upload.zip")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			mustOK(t, fp.PutFile(ctx, digest, int64(len(data)), path), fmt.Sprintf("PutFile %d", i+1))
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("PutFile %d did not consume its file: Lstat = %v", i+1, err)
			}
			checkContent(t, b, digest, data)
		}
		checkWalk(t, b, map[string]int64{digest: int64(len(data))})
	})
}

// modTime returns the blob's modification time.
func modTime(t *testing.T, b store.Blobs, digest string) time.Time {
	t.Helper()
	blob, err := b.Open(t.Context(), digest)
	mustOK(t, err, "Open")
	defer blob.Close()
	return blob.ModTime
}

// checkContent checks that the blob under digest holds exactly data.
func checkContent(t *testing.T, b store.Blobs, digest string, data []byte) {
	t.Helper()
	blob, err := b.Open(t.Context(), digest)
	mustOK(t, err, "Open")
	defer blob.Close()
	if blob.Size != int64(len(data)) {
		t.Errorf("Open: Size = %d, want %d", blob.Size, len(data))
	}
	got, err := io.ReadAll(blob.Content)
	mustOK(t, err, "reading the blob")
	if !bytes.Equal(got, data) {
		t.Errorf("blob %s holds %d bytes with SHA-256 %s, want %d bytes", digest, len(got), sha256Hex(got), len(data))
	}
}

// checkWalk checks that Walk reports exactly want.
func checkWalk(t *testing.T, b store.Blobs, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	err := b.Walk(t.Context(), func(digest string, size int64) error {
		if _, dup := got[digest]; dup {
			t.Errorf("Walk reported %s twice", digest)
		}
		got[digest] = size
		return nil
	})
	mustOK(t, err, "Walk")
	if !maps.Equal(got, want) {
		t.Errorf("Walk reported %v, want %v", got, want)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// randomBytes returns n pseudo-random bytes determined by seed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x7e57))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// chunkReader returns data at most chunk bytes per Read.
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}
