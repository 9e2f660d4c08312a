package backup

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/storecopy"
)

// Options tunes Create.
type Options struct {
	// IndexPath is the live SQLite index file.
	IndexPath string
	// Blobs is the blob store the index's blobs are in.
	Blobs store.Blobs
	// SigningSecretFile, if not empty, is put into the backup: the
	// key-encryption key of the registry-managed signing keys. A file
	// that does not exist is left out (no managed key was ever made).
	SigningSecretFile string
	// TroveVersion is recorded in the manifest.
	TroveVersion string
	// Logger receives progress; nil logs nothing.
	Logger *slog.Logger
	// ProgressEvery is the least time between two progress lines while
	// blobs are copied (default 2s).
	ProgressEvery time.Duration
}

// Create writes a backup of the registry in opt's index and blob store
// to the file out (see the package comment) and returns its manifest. It
// works while a server uses the index and store. The file appears only
// when complete; a failure leaves no file behind (and an existing file
// of that name untouched).
func Create(ctx context.Context, out string, opt Options) (Manifest, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = 2 * time.Second
	}
	out, err := filepath.Abs(out)
	if err != nil {
		return Manifest{}, err
	}
	dir := filepath.Dir(out)
	work, err := os.MkdirTemp(dir, ".trove-backup-")
	if err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "creating a work directory beside "+out)
	}
	defer os.RemoveAll(work)

	// 1. The index, as of one transaction.
	snap := filepath.Join(work, "trove.db")
	log.InfoContext(ctx, "taking a snapshot of the index", "index", opt.IndexPath)
	created := time.Now().UTC()
	if err := sqlite.Snapshot(ctx, opt.IndexPath, snap); err != nil {
		return Manifest{}, fmt.Errorf("snapshot of the index: %w", err)
	}
	m := Manifest{Format: FormatVersion, TroveVersion: opt.TroveVersion, CreatedAt: created}
	if m.SchemaVersion, err = sqlite.Inspect(ctx, snap); err != nil {
		return Manifest{}, fmt.Errorf("checking the index snapshot: %w", err)
	}
	if m.Index, err = fileSHA256(snap); err != nil {
		return Manifest{}, err
	}
	contents, err := inventory(ctx, snap, filepath.Join(work, "inventory.db"))
	if err != nil {
		return Manifest{}, err
	}
	m.Counts = Counts{
		Namespaces: contents.Namespaces, ProviderVersions: contents.ProviderVersions,
		ModuleVersions: contents.ModuleVersions, MirroredVersions: contents.MirroredVersions,
		ManagedSigningKeys: contents.ManagedSigningKeys,
	}

	// 2. The blobs it names, which exist: they were durable before their
	// records committed.
	for d, what := range contents.Blobs {
		size, err := opt.Blobs.Stat(ctx, d)
		if err != nil {
			if registry.IsKind(err, registry.NotFound) {
				return Manifest{}, registry.Errorf(registry.NotFound, "the blob store lacks blob %s (%s), which the index names: the garbage collector removed it after its version was deleted, more than its grace period after the snapshot began (back up again), or the store is damaged (restore the blob or delete that version, then back up again)", d, what)
			}
			return Manifest{}, fmt.Errorf("blob %s: %w", d, err)
		}
		m.Blobs = append(m.Blobs, Blob{Digest: d, Size: size})
		m.Counts.BlobBytes += size
	}
	slices.SortFunc(m.Blobs, func(a, b Blob) int {
		switch {
		case a.Digest < b.Digest:
			return -1
		case a.Digest > b.Digest:
			return 1
		}
		return 0
	})
	m.Counts.Blobs = len(m.Blobs)

	var secret []byte
	if opt.SigningSecretFile != "" {
		secret, err = os.ReadFile(opt.SigningSecretFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			log.InfoContext(ctx, "no signing secret to include", "file", opt.SigningSecretFile)
			secret = nil
		case err != nil:
			return Manifest{}, fmt.Errorf("reading the signing secret: %w", err)
		default:
			hw := newHashingWriter(io.Discard)
			hw.Write(secret)
			m.SigningSecret = &File{Size: hw.n, SHA256: hw.sum()}
		}
	}

	// 3. The archive, under a temporary name.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "creating the backup file")
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return Manifest{}, err
	}
	if err := writeArchive(ctx, tmp, gzipped(out), m, snap, secret, opt, log); err != nil {
		return Manifest{}, err
	}
	if err := tmp.Sync(); err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "syncing the backup file")
	}
	if err := tmp.Close(); err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "closing the backup file")
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "moving the backup file into place")
	}
	done = true
	if err := syncDir(dir); err != nil {
		return Manifest{}, registry.Wrap(registry.Unavailable, err, "syncing "+dir)
	}
	log.InfoContext(ctx, "backup complete", "file", out, "provider_versions", m.Counts.ProviderVersions,
		"module_versions", m.Counts.ModuleVersions, "blobs", m.Counts.Blobs, "blob_bytes", m.Counts.BlobBytes)
	return m, nil
}

// inventory opens a scratch copy of the index snapshot at snap (opening
// migrates an index of an older schema, which must not happen to the
// snapshot itself: a restore keeps the backup's schema) and reads what
// it holds.
func inventory(ctx context.Context, snap, scratch string) (storecopy.Contents, error) {
	if err := copyFile(snap, scratch); err != nil {
		return storecopy.Contents{}, err
	}
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(scratch + suffix)
		}
	}()
	idx, err := sqlite.Open(ctx, scratch)
	if err != nil {
		return storecopy.Contents{}, fmt.Errorf("opening the index snapshot: %w", err)
	}
	defer idx.Close()
	c, err := storecopy.Inventory(ctx, idx)
	if err != nil {
		return storecopy.Contents{}, fmt.Errorf("reading the index snapshot: %w", err)
	}
	return c, nil
}

// writeArchive writes the archive of m to w.
func writeArchive(ctx context.Context, w io.Writer, compress bool, m Manifest, snap string, secret []byte, opt Options, log *slog.Logger) error {
	var gz *gzip.Writer
	if compress {
		gz = gzip.NewWriter(w)
		w = gz
	}
	tw := tar.NewWriter(w)
	modTime := m.CreatedAt
	header := func(name string, size int64) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: modTime, Format: tar.FormatPAX}
	}
	manifest, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(header(manifestEntry, int64(len(manifest)))); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}

	f, err := os.Open(snap)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(header(indexEntry, m.Index.Size)); err != nil {
		return err
	}
	hw := newHashingWriter(tw)
	if _, err := io.Copy(hw, f); err != nil {
		return fmt.Errorf("writing the index: %w", err)
	}
	if hw.sum() != m.Index.SHA256 {
		return registry.Errorf(registry.Internal, "the index snapshot changed while it was written")
	}

	if m.SigningSecret != nil {
		if err := tw.WriteHeader(header(secretEntry, int64(len(secret)))); err != nil {
			return err
		}
		if _, err := tw.Write(secret); err != nil {
			return err
		}
	}

	log.InfoContext(ctx, "copying blobs", "count", len(m.Blobs), "bytes", m.Counts.BlobBytes)
	var copied int64
	last := time.Now()
	for i, b := range m.Blobs {
		if err := ctx.Err(); err != nil {
			return registry.Wrap(registry.Unavailable, err, "backing up")
		}
		if err := copyBlob(ctx, tw, opt.Blobs, b, header(blobDir+b.Digest[:2]+"/"+b.Digest, b.Size)); err != nil {
			return err
		}
		copied += b.Size
		if time.Since(last) >= opt.ProgressEvery {
			last = time.Now()
			log.InfoContext(ctx, "copying blobs", "done", i+1, "of", len(m.Blobs), "bytes", humanBytes(copied)+" of "+humanBytes(m.Counts.BlobBytes))
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if gz != nil {
		return gz.Close()
	}
	return nil
}

// copyBlob copies one blob into the archive, checking its size and
// SHA-256 against its digest.
func copyBlob(ctx context.Context, tw *tar.Writer, blobs store.Blobs, b Blob, h *tar.Header) error {
	blob, err := blobs.Open(ctx, b.Digest)
	if err != nil {
		return fmt.Errorf("opening blob %s: %w", b.Digest, err)
	}
	defer blob.Close()
	if blob.Size != b.Size {
		return registry.Errorf(registry.Invalid, "blob %s changed size (%d, then %d bytes): the blob store is damaged", b.Digest, b.Size, blob.Size)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	hw := newHashingWriter(tw)
	n, err := io.Copy(hw, io.LimitReader(blob.Content, b.Size))
	if err != nil {
		return fmt.Errorf("copying blob %s: %w", b.Digest, err)
	}
	if n != b.Size {
		return registry.Errorf(registry.Invalid, "blob %s is shorter than its size (%d of %d bytes): the blob store is damaged", b.Digest, n, b.Size)
	}
	if got := hw.sum(); got != b.Digest {
		return registry.Errorf(registry.Invalid, "blob %s does not match its digest (its content hashes to %s): the blob store is damaged; restore the blob from an older backup or delete the version that names it, then back up again", b.Digest, got)
	}
	return nil
}
