// Package fsblob is Trove's embedded blob store: content-addressed files
// in a local directory. It implements store.Blobs and store.FilePutter.
//
// Layout under the store's directory:
//
//	sha256/<first two hex digits>/<64 hex digits>   one file per blob
//	tmp/proc-<random>/                              files being written by one open Store
//	tmp/proc-<random>/lock                          locked (flock) while that Store is open
//
// A blob is written to its Store's directory in tmp, synced, checked
// against its digest and size, renamed into place and its directory
// synced, so that a blob is either absent or complete, also after a crash.
// tmp must be on the same filesystem as sha256 (it is: both live in the
// store's directory).
//
// # Leftovers of a crash
//
// Several processes may open one directory (a server and `trove store
// copy`, say), so Open cannot simply empty tmp: another process may be
// writing there. Instead every open Store writes in a directory of its own
// whose lock file it holds locked; the kernel releases the lock when the
// process ends, kill -9 included. Open removes every directory in tmp whose
// lock it can take: those of dead processes, with their partial files.
// Where file locks are not available (flock(2) missing, or refused by the
// filesystem), and for files directly in tmp (written by Trove releases
// before this layout), Open falls back to removing what is older than
// StaleTempAge.
package fsblob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"trove.dev/trove/internal/flock"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// StaleTempAge is how old a leftover in tmp whose owner cannot be told
// (see the package comment) must be before Open removes it.
const StaleTempAge = time.Hour

// Names in tmp.
const (
	ownerPrefix = "proc-" // a Store's own directory
	newPrefix   = ".new-" // such a directory while it is being set up
	lockName    = "lock"  // the lock file in it
)

// Store is a blob store in a local directory. Its methods are safe for
// concurrent use, also by several Stores (or processes) on one directory.
type Store struct {
	blobs string   // <dir>/sha256
	tmp   string   // <dir>/tmp/proc-<random>, this Store's own
	lock  *os.File // holds the lock of tmp; nil where locks are not available
}

var (
	_ store.Blobs      = (*Store)(nil)
	_ store.FilePutter = (*Store)(nil)
)

// Open returns the store in dir, creating dir and its layout if needed,
// after removing what crashed writers left in tmp (see the package
// comment). The Store holds an open lock file until Close.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, registry.Errorf(registry.Invalid, "blob directory is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "resolving blob directory "+dir)
	}
	s := &Store{blobs: filepath.Join(abs, "sha256")}
	tmp := filepath.Join(abs, "tmp")
	for _, d := range []string{s.blobs, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, registry.Wrap(registry.Internal, err, "creating blob directory")
		}
	}
	if err := removeLeftovers(tmp, time.Now().Add(-StaleTempAge)); err != nil {
		return nil, err
	}
	if err := s.claimTemp(tmp); err != nil {
		return nil, err
	}
	return s, nil
}

// claimTemp creates the Store's own directory in tmp and locks it. The
// directory is set up under a name other Opens leave alone and renamed
// once locked, so that no Open ever sees it unlocked.
func (s *Store) claimTemp(tmp string) error {
	setup, err := os.MkdirTemp(tmp, newPrefix+"*")
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating a temporary blob directory")
	}
	lock, err := flock.TryLock(filepath.Join(setup, lockName))
	switch {
	case errors.Is(err, flock.ErrUnsupported):
		lock = nil // leftovers are then removed by age
	case err != nil:
		os.RemoveAll(setup)
		return registry.Wrap(registry.Internal, err, "locking the temporary blob directory")
	}
	own := filepath.Join(tmp, ownerPrefix+strings.TrimPrefix(filepath.Base(setup), newPrefix))
	if err := os.Rename(setup, own); err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(setup)
		return registry.Wrap(registry.Internal, err, "setting up the temporary blob directory")
	}
	s.tmp, s.lock = own, lock
	return nil
}

// Close removes the Store's temporary directory and releases its lock.
// The Store must not be used afterwards. Not calling Close leaks nothing
// but an open file until the process ends; the next Open of the directory
// removes what is left.
func (s *Store) Close() error {
	err := os.RemoveAll(s.tmp)
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}

// removeLeftovers removes from tmp what writers that have ended left:
// every Store directory whose lock can be taken and, where ownership
// cannot be told, anything last modified before cutoff.
func removeLeftovers(tmp string, cutoff time.Time) error {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "listing temporary blob files")
	}
	for _, e := range entries {
		path := filepath.Join(tmp, e.Name())
		if e.IsDir() && strings.HasPrefix(e.Name(), ownerPrefix) {
			lock, err := flock.TryLock(filepath.Join(path, lockName))
			switch {
			case err == nil:
				// Its Store is gone: the lock was free.
				err = os.RemoveAll(path)
				lock.Close()
				if err != nil {
					return registry.Wrap(registry.Internal, err, "removing the temporary blob files of an ended process")
				}
				continue
			case errors.Is(err, flock.ErrLocked), errors.Is(err, fs.ErrNotExist):
				continue // in use, or removed meanwhile
			case !errors.Is(err, flock.ErrUnsupported):
				return registry.Wrap(registry.Internal, err, "checking whether temporary blob files are in use")
			}
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue // gone meanwhile, or possibly still being written
		}
		if err := os.RemoveAll(path); err != nil {
			return registry.Wrap(registry.Internal, err, "removing a stale temporary blob file")
		}
	}
	return nil
}

// path returns the file of a checked digest.
func (s *Store) path(digest string) string {
	return filepath.Join(s.blobs, digest[:2], digest)
}

// Put stores the size bytes read from r under digest, after checking both.
// If the blob exists already, Put renews its modification time and
// returns without reading r.
func (s *Store) Put(ctx context.Context, digest string, size int64, r io.Reader) error {
	if err := registry.CheckDigest(digest); err != nil {
		return err
	}
	if size < 0 {
		return registry.Errorf(registry.Invalid, "invalid size %d of blob %s", size, digest)
	}
	if err := ctx.Err(); err != nil {
		return registry.Wrap(registry.Unavailable, err, "storing blob "+digest)
	}
	if s.exists(digest) {
		// Deleted (collected) since: store it again.
		if err := s.touch(digest); !registry.IsKind(err, registry.NotFound) {
			return err
		}
	}
	f, err := os.CreateTemp(s.tmp, "put-*")
	if errors.Is(err, fs.ErrNotExist) {
		// Without file locks, another process's Open removes a directory
		// unused for StaleTempAge: make it again.
		if err = os.MkdirAll(s.tmp, 0o700); err == nil {
			f, err = os.CreateTemp(s.tmp, "put-*")
		}
	}
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating a temporary blob file")
	}
	defer func() {
		f.Close()
		os.Remove(f.Name()) // fails harmlessly once the file was renamed
	}()
	h := sha256.New()
	if err := copyExactly(io.MultiWriter(f, h), ctxReader{ctx, r}, size, digest); err != nil {
		return err
	}
	if err := checkSum(h, digest); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return registry.Wrap(registry.Internal, err, "syncing blob "+digest)
	}
	if err := f.Close(); err != nil {
		return registry.Wrap(registry.Internal, err, "closing blob "+digest)
	}
	return s.install(f.Name(), digest)
}

// copyExactly copies size bytes from r to w and fails with Invalid if r
// holds fewer or more.
func copyExactly(w io.Writer, r io.Reader, size int64, digest string) error {
	n, err := io.Copy(w, io.LimitReader(r, size))
	if err != nil {
		return readError(err, digest)
	}
	if n < size {
		return registry.Errorf(registry.Invalid, "blob %s: content ended after %d bytes, want %d", digest, n, size)
	}
	var one [1]byte
	for range 100 { // readers may return (0, nil) a few times; not forever
		k, err := r.Read(one[:])
		if k > 0 {
			return registry.Errorf(registry.Invalid, "blob %s: content is longer than the declared %d bytes", digest, size)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return readError(err, digest)
		}
	}
	return registry.Errorf(registry.Internal, "blob %s: the content reader makes no progress", digest)
}

// readError classifies an error of the reader given to Put: its own kind if
// it has one, Unavailable for an ended context, Internal otherwise.
func readError(err error, digest string) error {
	kind := registry.KindOf(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		kind = registry.Unavailable
	}
	return registry.Wrap(kind, err, "reading the content of blob "+digest)
}

// checkSum fails with Invalid unless h holds digest.
func checkSum(h hash.Hash, digest string) error {
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return registry.Errorf(registry.Invalid, "blob content has SHA-256 %s, not the declared %s", got, digest)
	}
	return nil
}

// install renames the complete, synced file at from to digest's place and
// makes the rename durable.
func (s *Store) install(from, digest string) error {
	dir := filepath.Join(s.blobs, digest[:2])
	created := false
	if err := os.Mkdir(dir, 0o700); err == nil {
		created = true
	} else if !errors.Is(err, fs.ErrExist) {
		return registry.Wrap(registry.Internal, err, "creating blob directory")
	}
	if created {
		if err := syncDir(s.blobs); err != nil {
			return err
		}
	}
	if err := os.Rename(from, s.path(digest)); err != nil {
		return registry.Wrap(registry.Internal, err, "moving blob "+digest+" into place")
	}
	return syncDir(dir)
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "opening blob directory to sync it")
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return registry.Wrap(registry.Internal, err, "syncing blob directory")
	}
	return nil
}

// exists reports whether the blob of a checked digest is stored.
func (s *Store) exists(digest string) bool {
	_, err := os.Lstat(s.path(digest))
	return err == nil
}

// touch renews the modification time of a stored blob that a Put found
// present: the garbage collector's grace period counts from it (see
// store.Blobs). A blob deleted meanwhile is NotFound.
func (s *Store) touch(digest string) error {
	now := time.Now()
	err := os.Chtimes(s.path(digest), now, now)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(digest)
	}
	if err != nil {
		return registry.Wrap(registry.Internal, err, "renewing the modification time of blob "+digest)
	}
	return nil
}

// PutFile stores the regular file at path under digest by renaming it into
// place (copying it when path is on another filesystem). The file is
// consumed on success; on failure it is left to the caller.
//
// PutFile checks the size and re-hashes the content although the caller
// has verified it: a blob stored under a wrong digest would be served to
// every client and never repaired, since Put of a present digest does
// nothing. Hashing is cheap next to the upload that produced the file
// (well under a second for 200 MiB) and the file is usually still in the
// page cache.
func (s *Store) PutFile(ctx context.Context, digest string, size int64, path string) error {
	if err := registry.CheckDigest(digest); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return registry.Wrap(registry.Unavailable, err, "storing blob "+digest)
	}
	link, err := os.Lstat(path)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "inspecting the file to store as blob "+digest)
	}
	if !link.Mode().IsRegular() {
		return registry.Errorf(registry.Invalid, "cannot store %s as blob %s: not a regular file", path, digest)
	}
	if link.Size() != size {
		return registry.Errorf(registry.Invalid, "file %s is %d bytes, not the declared %d of blob %s", path, link.Size(), size, digest)
	}
	f, err := os.Open(path)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "opening the file to store as blob "+digest)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !os.SameFile(info, link) {
		return registry.Errorf(registry.Invalid, "file %s changed while being stored as blob %s", path, digest)
	}
	h := sha256.New()
	if err := copyExactly(h, ctxReader{ctx, f}, size, digest); err != nil {
		return err
	}
	if err := checkSum(h, digest); err != nil {
		return err
	}
	if s.exists(digest) {
		switch err := s.touch(digest); {
		case err == nil:
			return removeSource(path)
		case !registry.IsKind(err, registry.NotFound): // else collected since: store it again
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return registry.Wrap(registry.Internal, err, "syncing blob "+digest)
	}
	err = s.install(path, digest)
	if errors.Is(err, syscall.EXDEV) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return registry.Wrap(registry.Internal, err, "rewinding "+path)
		}
		if err := s.Put(ctx, digest, size, f); err != nil {
			return err
		}
		return removeSource(path)
	}
	return err
}

// removeSource deletes a file PutFile has consumed.
func removeSource(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return registry.Wrap(registry.Internal, err, "removing the stored file "+path)
	}
	return nil
}

// Open returns the blob for reading; its Content is the *os.File.
func (s *Store) Open(ctx context.Context, digest string) (*store.Blob, error) {
	if err := registry.CheckDigest(digest); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "opening blob "+digest)
	}
	f, err := os.Open(s.path(digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(digest)
	}
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "opening blob "+digest)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, registry.Wrap(registry.Internal, err, "inspecting blob "+digest)
	}
	return &store.Blob{Content: f, Size: info.Size(), ModTime: info.ModTime()}, nil
}

// Stat returns the blob's size.
func (s *Store) Stat(ctx context.Context, digest string) (int64, error) {
	if err := registry.CheckDigest(digest); err != nil {
		return 0, err
	}
	info, err := os.Lstat(s.path(digest))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, notFound(digest)
	}
	if err != nil {
		return 0, registry.Wrap(registry.Internal, err, "inspecting blob "+digest)
	}
	return info.Size(), nil
}

// Delete removes a blob; deleting an absent blob succeeds.
func (s *Store) Delete(ctx context.Context, digest string) error {
	if err := registry.CheckDigest(digest); err != nil {
		return err
	}
	if err := os.Remove(s.path(digest)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return registry.Wrap(registry.Internal, err, "deleting blob "+digest)
	}
	return nil
}

// Walk calls fn for every stored blob. Blobs added or deleted during the
// walk may or may not be reported; files in tmp never are.
func (s *Store) Walk(ctx context.Context, fn func(digest string, size int64) error) error {
	shards, err := os.ReadDir(s.blobs)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "listing blobs")
	}
	for _, shard := range shards {
		if !shard.IsDir() || len(shard.Name()) != 2 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return registry.Wrap(registry.Unavailable, err, "listing blobs")
		}
		entries, err := os.ReadDir(filepath.Join(s.blobs, shard.Name()))
		if err != nil {
			return registry.Wrap(registry.Internal, err, "listing blobs")
		}
		for _, e := range entries {
			name := e.Name()
			if !e.Type().IsRegular() || registry.CheckDigest(name) != nil || name[:2] != shard.Name() {
				continue
			}
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted meanwhile
			}
			if err != nil {
				return registry.Wrap(registry.Internal, err, "inspecting blob "+name)
			}
			if err := fn(name, info.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

func notFound(digest string) error {
	return registry.Errorf(registry.NotFound, "blob %s not found", digest)
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("blob write interrupted: %w", err)
	}
	return c.r.Read(p)
}
