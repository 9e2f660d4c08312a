// Package staging is where provider publishes (internal/publish) and
// module publishes (internal/modules) keep an upload while they check it:
// a staging directory in the data directory, shared by both, in which
// each kind of publish names its files with a prefix of its own. It
// streams an upload to a staged file while hashing it within a size
// limit, moves a checked file into the blob store, and removes at
// start-up what publishes that never finished (a crash) left.
//
// A staging directory belongs to one process (`trove serve` locks its
// data directory): RemoveStale would delete a live publish's files.
package staging

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Dir is a staging directory as seen by one kind of publish: every file
// and directory it creates there starts with Prefix.
type Dir struct {
	Path   string
	Prefix string
}

// CreateFile creates a new staged file named Prefix+pattern (see
// os.CreateTemp), creating the directory if needed. The caller removes it.
func (d Dir) CreateFile(pattern string) (*os.File, error) {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return nil, err
	}
	return os.CreateTemp(d.Path, d.Prefix+pattern)
}

// MkdirTemp creates a new staged directory named Prefix+pattern (see
// os.MkdirTemp). The caller removes it.
func (d Dir) MkdirTemp(pattern string) (string, error) {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(d.Path, d.Prefix+pattern)
}

// RemoveStale deletes every file and directory of this kind of publish:
// what publishes that never finished left, such as those of a process
// killed mid-upload. Call it at start-up, before serving. A missing
// directory is no error.
func (d Dir) RemoveStale() error {
	entries, err := os.ReadDir(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), d.Prefix) {
			if err := os.RemoveAll(filepath.Join(d.Path, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Copy streams r into f while hashing it and returns the number of bytes
// and their lower-case hex SHA-256. More than limit bytes is a TooLarge
// error: "<what> is larger than the limit of <limit> bytes".
func Copy(f io.Writer, r io.Reader, limit int64, what string) (n int64, digest string, err error) {
	h := sha256.New()
	n, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(r, limit+1))
	if err != nil {
		return n, "", err
	}
	if n > limit {
		return n, "", registry.Errorf(registry.TooLarge, "%s is larger than the limit of %d bytes", what, limit)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// Store puts the staged file at path, of size bytes with the given
// digest, into blobs: moved there when the blob store can take a file
// (store.FilePutter, then path may be gone), copied otherwise.
func Store(ctx context.Context, blobs store.Blobs, digest string, size int64, path string) error {
	if fp, ok := blobs.(store.FilePutter); ok {
		return fp.PutFile(ctx, digest, size, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return blobs.Put(ctx, digest, size, f)
}
