// Package sqlitetest gives tests Trove's embedded store as `trove serve`
// opens it in its data directory: a real SQLite index (Dir/trove.db) and
// a real blob store of files (Dir/blobs), empty in a new temporary
// directory and closed when the test ends (New), or the index alone
// (NewIndex). It is the one set-up of the embedded store for the tests
// of other packages, as pgtest and s3test are for PostgreSQL and S3.
// (It is not part of storetest: the sqlite and fsblob packages' own
// tests run those conformance suites, so storetest cannot import them.)
package sqlitetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sync"
	"testing"

	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
)

// Store is the embedded store of a data directory, opened for a test.
type Store struct {
	// Dir is the data directory: the index is Dir/trove.db, the blobs
	// are under Dir/blobs (IndexPath, BlobDir).
	Dir   string
	Index *sqlite.Index
	Blobs *fsblob.Store

	close sync.Once
}

// New opens an empty embedded store in a new temporary data directory
// (t.TempDir). It is closed when the test ends.
func New(t testing.TB) *Store {
	t.Helper()
	return Open(t, t.TempDir())
}

// Open opens the embedded store of the data directory dir, creating the
// index and the blob directory if they do not exist. It is closed when
// the test ends, or sooner by Close.
func Open(t testing.TB, dir string) *Store {
	t.Helper()
	s := &Store{Dir: dir}
	idx, err := sqlite.Open(t.Context(), s.IndexPath())
	if err != nil {
		t.Fatalf("opening the test index: %v", err)
	}
	blobs, err := fsblob.Open(s.BlobDir())
	if err != nil {
		idx.Close()
		t.Fatalf("opening the test blob store: %v", err)
	}
	s.Index, s.Blobs = idx, blobs
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the test store: %v", err)
		}
	})
	return s
}

// NewIndex opens an empty index alone in a new temporary data directory,
// for a test whose blobs are elsewhere (S3) or not needed. It is closed
// when the test ends.
func NewIndex(t testing.TB) *sqlite.Index {
	t.Helper()
	idx, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "trove.db"))
	if err != nil {
		t.Fatalf("opening the test index: %v", err)
	}
	t.Cleanup(func() {
		if err := idx.Close(); err != nil {
			t.Errorf("closing the test index: %v", err)
		}
	})
	return idx
}

// IndexPath returns the path of the index, Dir/trove.db.
func (s *Store) IndexPath() string { return filepath.Join(s.Dir, "trove.db") }

// BlobDir returns the directory of the blobs, Dir/blobs.
func (s *Store) BlobDir() string { return filepath.Join(s.Dir, "blobs") }

// Close closes the index and the blob store, for a test that hands the
// data directory to another process or opener before it ends. Only the
// first call closes them.
func (s *Store) Close() error {
	var err error
	s.close.Do(func() {
		err = s.Index.Close()
		if berr := s.Blobs.Close(); err == nil {
			err = berr
		}
	})
	return err
}

// Put stores data as a blob and returns its digest (lower-case hex
// SHA-256), failing the test if it cannot.
func (s *Store) Put(t testing.TB, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if err := s.Blobs.Put(t.Context(), digest, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatalf("storing a test blob: %v", err)
	}
	return digest
}
