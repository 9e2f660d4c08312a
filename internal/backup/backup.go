// Package backup owns Trove's backup file of an embedded registry (the
// SQLite index and its blobs): writing one while the server runs
// (Create), checking one (Verify) and bringing one back into a data
// directory (Restore).
//
// # Consistency
//
// Create first takes a transactionally consistent snapshot of the live
// index (sqlite.Snapshot: VACUUM INTO), then copies the blobs that
// snapshot names. That order is what makes the backup whole: blobs are
// content-addressed and never change, and a publish commits its index
// records only after its blobs are durable, so every blob a committed
// record names exists in the store when the snapshot is taken; and the
// garbage collector deletes a blob only once its grace period has passed
// since the delete of the last record naming it (store.GarbageCollection
// records that release), so the blobs the snapshot names stay while they
// are copied, when the copy ends within the grace period of the snapshot.
// Blobs written after the snapshot belong to versions the snapshot does
// not hold and are not needed. Each blob's SHA-256 is checked while it is
// copied: a damaged store fails the backup instead of producing a backup
// that restores damage.
//
// # The file
//
// A POSIX tar archive, gzip-compressed when its name ends in .gz or .tgz,
// written under a temporary name beside the target, synced and renamed
// into place when complete (mode 0600), so that a file of the target's
// name is always a complete backup. Its entries, in this order:
//
//	manifest.json                          Manifest: format, versions, counts, every blob's digest and size, the index's SHA-256
//	index/trove.db                         the index snapshot (a plain SQLite file)
//	signing-secret                         only if asked for: the key-encryption key of managed signing keys
//	blobs/sha256/<2 hex digits>/<digest>   every blob the index names, once
//
// The manifest comes first so that a reader checks every entry against it
// while streaming, without holding the archive on disk twice.
//
// # Restore
//
// Restore unpacks into <data-dir>/.restore-tmp, checking every entry
// against the manifest (sizes and SHA-256 of the index, the signing
// secret and every blob), then checks that the index opens, is intact and
// names no blob the backup lacks. Only then does it move the index, the
// blobs and the signing secret into place by rename, so that a failed
// restore (a damaged file, a full disk) leaves the data directory as it
// was. A server holding the data directory's lock (serve.lock) makes it
// refuse; it holds that lock itself while it works, so no server starts
// on a half-restored directory.
package backup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// FormatVersion is the version of the backup file's layout that this
// build writes and the only one it reads.
const FormatVersion = 1

// Names of the archive's entries.
const (
	manifestEntry = "manifest.json"
	indexEntry    = "index/trove.db"
	secretEntry   = "signing-secret"
	blobDir       = "blobs/sha256/"
)

// maxManifestBytes bounds the manifest a reader accepts: about 100 bytes
// a blob, so ample for millions of blobs.
const maxManifestBytes = 1 << 30

// Manifest describes a backup. It is the archive's first entry.
type Manifest struct {
	// Format is FormatVersion of the writer.
	Format int `json:"format"`
	// TroveVersion is the version of the trove that wrote the backup.
	TroveVersion string `json:"trove_version"`
	// SchemaVersion is the index schema version of the snapshot; a restore
	// keeps it, and a newer Trove migrates the index when it starts.
	SchemaVersion int `json:"schema_version"`
	// CreatedAt is when the index snapshot was taken.
	CreatedAt time.Time `json:"created_at"`
	// Index is the index snapshot's entry.
	Index File `json:"index"`
	// SigningSecret is the signing secret's entry, nil if the backup does
	// not hold it.
	SigningSecret *File `json:"signing_secret,omitempty"`
	// Counts says what the index holds.
	Counts Counts `json:"counts"`
	// Blobs lists every blob the backup holds, sorted by digest: exactly
	// those the index names.
	Blobs []Blob `json:"blobs"`
}

// File is the size and SHA-256 (lower-case hex) of an entry.
type File struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Blob is a blob's digest (its SHA-256) and size.
type Blob struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Counts says what a backup's index holds.
type Counts struct {
	Namespaces         int   `json:"namespaces"`
	ProviderVersions   int   `json:"provider_versions"`
	ModuleVersions     int   `json:"module_versions"`
	MirroredVersions   int   `json:"mirrored_versions"`
	ManagedSigningKeys int   `json:"managed_signing_keys"`
	Blobs              int   `json:"blobs"`
	BlobBytes          int64 `json:"blob_bytes"`
}

// check validates a manifest read from a file.
func (m *Manifest) check() error {
	if m.Format != FormatVersion {
		return registry.Errorf(registry.Invalid, "the backup's format version is %d, this trove reads version %d: restore it with the trove version that wrote it (%s)", m.Format, FormatVersion, m.TroveVersion)
	}
	if err := checkFile("index", m.Index); err != nil {
		return err
	}
	if m.SigningSecret != nil {
		if err := checkFile("signing secret", *m.SigningSecret); err != nil {
			return err
		}
	}
	var total int64
	for i, b := range m.Blobs {
		if err := registry.CheckDigest(b.Digest); err != nil {
			return registry.Wrap(registry.Invalid, err, "the manifest lists an invalid blob")
		}
		if b.Size < 0 {
			return registry.Errorf(registry.Invalid, "the manifest lists blob %s with a negative size", b.Digest)
		}
		if i > 0 && m.Blobs[i-1].Digest >= b.Digest {
			return registry.Errorf(registry.Invalid, "the manifest's blobs are not sorted, or listed twice (%s)", b.Digest)
		}
		total += b.Size
	}
	if m.Counts.Blobs != len(m.Blobs) || m.Counts.BlobBytes != total {
		return registry.Errorf(registry.Invalid, "the manifest counts %d blobs of %d bytes but lists %d of %d bytes", m.Counts.Blobs, m.Counts.BlobBytes, len(m.Blobs), total)
	}
	return nil
}

func checkFile(what string, f File) error {
	if f.Size < 0 || registry.CheckDigest(f.SHA256) != nil {
		return registry.Errorf(registry.Invalid, "the manifest's %s entry has an invalid size or SHA-256", what)
	}
	return nil
}

// blobPath is where a blob goes under a blob store directory (the fsblob
// layout) and, under blobs/, in the archive.
func blobPath(digest string) string {
	return filepath.Join("sha256", digest[:2], digest)
}

// hashingWriter hashes and counts what passes through it.
type hashingWriter struct {
	w io.Writer
	h hashState
	n int64
}

type hashState interface {
	io.Writer
	Sum([]byte) []byte
}

func newHashingWriter(w io.Writer) *hashingWriter {
	return &hashingWriter{w: w, h: sha256.New()}
}

func (hw *hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

func (hw *hashingWriter) sum() string { return hex.EncodeToString(hw.h.Sum(nil)) }

// fileSHA256 returns the size and SHA-256 of the file at path.
func fileSHA256(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	hw := newHashingWriter(io.Discard)
	if _, err := io.Copy(hw, f); err != nil {
		return File{}, err
	}
	return File{Size: hw.n, SHA256: hw.sum()}, nil
}

// copyFile copies the file at from to the new file to (mode 0600) and
// syncs it.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir syncs a directory, making the renames and creations in it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// gzipped reports whether a backup file's name asks for gzip.
func gzipped(name string) bool {
	return strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".tgz")
}

// humanBytes renders a byte count for progress lines.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
