package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
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
	"strings"
	"time"

	"trove.dev/trove/internal/flock"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
)

// Names in a data directory that Restore writes or uses.
const (
	stagingName = ".restore-tmp"       // where a restore unpacks before moving
	asideName   = ".pre-restore-"      // + time: what --force moved out of the way
	indexName   = "trove.db"           // the index, as sqlite and config name it
	blobsName   = "blobs"              // the filesystem blob store
	secretName  = "signing-secret"     // the default signing secret file
	inventoryDB = "inventory-check.db" // scratch copy of the index
)

// Verify reads the backup file at path and checks it whole without
// writing anything but a scratch copy of its index to a temporary
// directory: the manifest, the size and SHA-256 of every entry, that no
// entry is missing, extra or repeated, that the index is intact and
// opens, and that it names no blob the backup lacks. It returns the
// manifest; an error of kind Invalid describes the first problem.
func Verify(ctx context.Context, path string, log *slog.Logger) (Manifest, error) {
	work, err := os.MkdirTemp("", "trove-backup-verify-")
	if err != nil {
		return Manifest{}, err
	}
	defer os.RemoveAll(work)
	return unpack(ctx, path, work, false, logger(log))
}

// Target is the data directory a restore writes into.
type Target struct {
	// DataDir is the data directory: the index goes to DataDir/trove.db,
	// the blobs to DataDir/blobs and a signing secret the backup holds to
	// DataDir/signing-secret, as trove serve finds them by default.
	DataDir string
	// LockFile is the file trove serve holds locked while it runs on
	// DataDir (DataDir/serve.lock).
	LockFile string
	// Force allows restoring into a data directory that is not empty: what
	// the restore replaces is moved into DataDir/.pre-restore-<time>.
	Force bool
}

// Restore brings the backup file at path back into t (see the package
// comment): it refuses a data directory a server holds, and one that is
// not empty unless t.Force; it checks everything before it moves
// anything, so that a failure leaves the data directory as it was. The
// index keeps the backup's schema version (a newer Trove migrates it
// when it starts). It returns the manifest and, after Force, the
// directory it moved the replaced files into ("" if none).
func Restore(ctx context.Context, path string, t Target, log *slog.Logger) (m Manifest, aside string, err error) {
	log = logger(log)
	if _, err := os.Stat(path); err != nil {
		return Manifest{}, "", registry.Wrap(registry.NotFound, err, "opening the backup file")
	}
	// A failed restore leaves no trace: not even the directory or the
	// lock file it created.
	_, statErr := os.Stat(t.DataDir)
	newDir := errors.Is(statErr, fs.ErrNotExist)
	_, statErr = os.Lstat(t.LockFile)
	newLock := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(t.DataDir, 0o700); err != nil {
		return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "creating the data directory")
	}
	defer func() {
		if err == nil {
			return
		}
		if newLock {
			os.Remove(t.LockFile)
		}
		if newDir {
			os.Remove(t.DataDir) // only if empty
		}
	}()
	lock, err := flock.TryLock(t.LockFile)
	switch {
	case errors.Is(err, flock.ErrLocked):
		newLock = false // the server's
		return Manifest{}, "", registry.Errorf(registry.Conflict, "a trove serve is running on the data directory %s: stop it before restoring into it", t.DataDir)
	case errors.Is(err, flock.ErrUnsupported):
		log.WarnContext(ctx, "file locks are not supported here: make sure no trove serve runs on the data directory", "data_dir", t.DataDir)
	case err != nil:
		return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "locking the data directory")
	default:
		defer lock.Close()
	}

	staging := filepath.Join(t.DataDir, stagingName)
	if err := os.RemoveAll(staging); err != nil { // an earlier, failed restore's
		return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "removing "+staging)
	}
	present, err := occupied(t)
	if err != nil {
		return Manifest{}, "", err
	}
	if len(present) > 0 && !t.Force {
		return Manifest{}, "", registry.Errorf(registry.Conflict, "the data directory %s is not empty (it holds %s): restore into an empty directory, or pass --force to move what it holds into %s<time>/ first", t.DataDir, strings.Join(present, ", "), asideName)
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "creating "+staging)
	}
	defer os.RemoveAll(staging)
	m, err = unpack(ctx, path, staging, true, log)
	if err != nil {
		return Manifest{}, "", err
	}

	// Everything is checked: move it into place, what it replaces first
	// out of the way.
	replaced := replacedBy(t)
	if len(replaced) > 0 {
		aside = filepath.Join(t.DataDir, asideName+time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Mkdir(aside, 0o700); err != nil {
			return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "creating "+aside)
		}
		for _, name := range replaced {
			if err := os.Rename(filepath.Join(t.DataDir, name), filepath.Join(aside, name)); err != nil {
				return Manifest{}, "", registry.Wrap(registry.Unavailable, err, "moving "+name+" aside")
			}
		}
		log.InfoContext(ctx, "moved what the restore replaces aside", "dir", aside, "files", strings.Join(replaced, ", "))
	}
	moves := []string{blobsName}
	if m.SigningSecret != nil {
		moves = append(moves, secretName)
	}
	moves = append(moves, indexName) // last: the index makes it a registry
	for _, name := range moves {
		if err := os.Rename(filepath.Join(staging, name), filepath.Join(t.DataDir, name)); err != nil {
			return Manifest{}, aside, registry.Wrap(registry.Unavailable, err, "moving "+name+" into place")
		}
	}
	if err := syncDir(t.DataDir); err != nil {
		return Manifest{}, aside, registry.Wrap(registry.Unavailable, err, "syncing the data directory")
	}
	return m, aside, nil
}

// occupied lists what the data directory holds besides its lock file.
func occupied(t Target) ([]string, error) {
	entries, err := os.ReadDir(t.DataDir)
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "reading the data directory")
	}
	var names []string
	for _, e := range entries {
		if filepath.Join(t.DataDir, e.Name()) != t.LockFile {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// replacedBy lists the files of the data directory a restore would
// overwrite or leave inconsistent with the restored index.
func replacedBy(t Target) []string {
	var out []string
	for _, name := range []string{indexName, indexName + "-wal", indexName + "-shm", indexName + "-journal", blobsName, secretName} {
		if _, err := os.Lstat(filepath.Join(t.DataDir, name)); err == nil {
			out = append(out, name)
		}
	}
	return out
}

func logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// damaged wraps a reading problem of the backup file as Invalid.
func damaged(format string, args ...any) error {
	return registry.Errorf(registry.Invalid, "the backup is damaged or not a Trove backup: "+format, args...)
}

// unpack reads the backup at path, checking every entry, into dir:
// dir/trove.db, dir/signing-secret and, with keepBlobs, the blobs under
// dir/blobs in the fsblob layout. Then it checks the index.
func unpack(ctx context.Context, path, dir string, keepBlobs bool, log *slog.Logger) (Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return Manifest{}, registry.Wrap(registry.NotFound, err, "opening the backup file")
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	var gz *gzip.Reader
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		if gz, err = gzip.NewReader(br); err != nil {
			return Manifest{}, damaged("%v", err)
		}
		gz.Multistream(false)
		r = gz
	}
	tr := tar.NewReader(r)
	next := func() (*tar.Header, error) {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, io.EOF
		}
		if err != nil {
			return nil, damaged("%v (is the file cut short?)", err)
		}
		if h.Typeflag != tar.TypeReg {
			return nil, damaged("entry %q is not a regular file", h.Name)
		}
		return h, nil
	}

	h, err := next()
	if err == io.EOF || (err == nil && h.Name != manifestEntry) {
		return Manifest{}, damaged("its first entry is not %s", manifestEntry)
	}
	if err != nil {
		return Manifest{}, err
	}
	if h.Size > maxManifestBytes {
		return Manifest{}, damaged("its manifest is too large")
	}
	raw, err := io.ReadAll(tr)
	if err != nil {
		return Manifest{}, damaged("reading the manifest: %v", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, damaged("its manifest is not valid: %v", err)
	}
	if err := m.check(); err != nil {
		return Manifest{}, err
	}
	sizes := make(map[string]int64, len(m.Blobs))
	for _, b := range m.Blobs {
		sizes[b.Digest] = b.Size
	}
	seen := make(map[string]bool, len(m.Blobs))
	var gotIndex, gotSecret bool
	var blobBytes int64
	last := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return Manifest{}, registry.Wrap(registry.Unavailable, err, "reading the backup")
		}
		h, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Manifest{}, err
		}
		switch name := h.Name; {
		case name == indexEntry:
			if gotIndex {
				return Manifest{}, damaged("it holds the index twice")
			}
			gotIndex = true
			if err := extract(tr, h, filepath.Join(dir, indexName), m.Index, "the index"); err != nil {
				return Manifest{}, err
			}
		case name == secretEntry:
			if gotSecret || m.SigningSecret == nil {
				return Manifest{}, damaged("it holds a signing secret its manifest does not list")
			}
			gotSecret = true
			if err := extract(tr, h, filepath.Join(dir, secretName), *m.SigningSecret, "the signing secret"); err != nil {
				return Manifest{}, err
			}
		case strings.HasPrefix(name, blobDir):
			digest := filepath.Base(name)
			size, listed := sizes[digest]
			if !listed || name != blobDir+digest[:min(2, len(digest))]+"/"+digest {
				return Manifest{}, damaged("it holds an entry its manifest does not list: %q", name)
			}
			if seen[digest] {
				return Manifest{}, damaged("it holds blob %s twice", digest)
			}
			seen[digest] = true
			to := ""
			if keepBlobs {
				to = filepath.Join(dir, blobsName, blobPath(digest))
				if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
					return Manifest{}, registry.Wrap(registry.Unavailable, err, "creating "+filepath.Dir(to))
				}
			}
			if err := extract(tr, h, to, File{Size: size, SHA256: digest}, "blob "+digest); err != nil {
				return Manifest{}, err
			}
			blobBytes += size
			if time.Since(last) >= 2*time.Second {
				last = time.Now()
				log.InfoContext(ctx, "checking blobs", "done", len(seen), "of", len(m.Blobs), "bytes", humanBytes(blobBytes)+" of "+humanBytes(m.Counts.BlobBytes))
			}
		default:
			return Manifest{}, damaged("it holds an entry its manifest does not list: %q", name)
		}
	}
	if gz != nil {
		// The gzip trailer's CRC and length are checked at its end.
		if _, err := io.Copy(io.Discard, gz); err != nil {
			return Manifest{}, damaged("%v (is the file cut short?)", err)
		}
	}
	if !gotIndex {
		return Manifest{}, damaged("it holds no index")
	}
	if m.SigningSecret != nil && !gotSecret {
		return Manifest{}, damaged("its manifest lists a signing secret it does not hold")
	}
	if len(seen) != len(m.Blobs) {
		for _, b := range m.Blobs {
			if !seen[b.Digest] {
				return Manifest{}, damaged("blob %s, which its manifest lists, is missing (%d of %d blobs present)", b.Digest, len(seen), len(m.Blobs))
			}
		}
	}
	if keepBlobs && len(m.Blobs) == 0 {
		if err := os.MkdirAll(filepath.Join(dir, blobsName, "sha256"), 0o700); err != nil {
			return Manifest{}, registry.Wrap(registry.Unavailable, err, "creating the blob directory")
		}
	}

	// The index: intact, of the schema the manifest says, and naming
	// exactly the blobs the backup holds.
	index := filepath.Join(dir, indexName)
	v, err := sqlite.Inspect(ctx, index)
	if err != nil {
		return Manifest{}, damaged("its index: %v", err)
	}
	if v != m.SchemaVersion {
		return Manifest{}, damaged("its index has schema version %d, its manifest says %d", v, m.SchemaVersion)
	}
	if v > sqlite.SchemaVersion() {
		return Manifest{}, registry.Errorf(registry.Invalid, "the backup's index has schema version %d, newer than this trove knows (%d): use trove %s or newer", v, sqlite.SchemaVersion(), m.TroveVersion)
	}
	c, err := inventory(ctx, index, filepath.Join(dir, inventoryDB))
	if err != nil {
		return Manifest{}, damaged("%v", err)
	}
	for d, what := range c.Blobs {
		if _, ok := sizes[d]; !ok {
			return Manifest{}, damaged("its index names blob %s (%s), which it does not hold", d, what)
		}
	}
	if c.ProviderVersions != m.Counts.ProviderVersions || c.ModuleVersions != m.Counts.ModuleVersions || c.Namespaces != m.Counts.Namespaces {
		return Manifest{}, damaged("its index holds %d namespaces, %d provider and %d module versions; its manifest says %d, %d and %d",
			c.Namespaces, c.ProviderVersions, c.ModuleVersions, m.Counts.Namespaces, m.Counts.ProviderVersions, m.Counts.ModuleVersions)
	}
	return m, nil
}

// extract copies the current entry of tr to the new file to (mode 0600,
// synced), or only reads it if to is "", checking it against want.
func extract(tr *tar.Reader, h *tar.Header, to string, want File, what string) error {
	if h.Size != want.Size {
		return damaged("%s has %d bytes, its manifest says %d", what, h.Size, want.Size)
	}
	var w io.Writer = io.Discard
	var f *os.File
	if to != "" {
		var err error
		if f, err = os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return damaged("%s is held twice", what)
			}
			return registry.Wrap(registry.Unavailable, err, "writing "+what)
		}
		defer f.Close()
		w = f
	}
	hw := newHashingWriter(w)
	n, err := io.Copy(hw, tr)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return registry.Wrap(registry.Unavailable, err, "writing "+what)
		}
		return damaged("reading %s: %v (is the file cut short?)", what, err)
	}
	if n != want.Size {
		return damaged("%s has %d bytes, its manifest says %d", what, n, want.Size)
	}
	if got := hw.sum(); got != want.SHA256 {
		return damaged("%s does not match its SHA-256 (%s, its manifest says %s)", what, got, want.SHA256)
	}
	if f != nil {
		if err := f.Sync(); err != nil {
			return registry.Wrap(registry.Unavailable, err, "syncing "+what)
		}
		return f.Close()
	}
	return nil
}

// Describe renders a manifest for people, one fact a line.
func Describe(m Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "created at         %s\n", m.CreatedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "trove version      %s\n", m.TroveVersion)
	fmt.Fprintf(&b, "schema version     %d\n", m.SchemaVersion)
	fmt.Fprintf(&b, "namespaces         %d\n", m.Counts.Namespaces)
	fmt.Fprintf(&b, "provider versions  %d\n", m.Counts.ProviderVersions)
	fmt.Fprintf(&b, "module versions    %d\n", m.Counts.ModuleVersions)
	fmt.Fprintf(&b, "mirrored versions  %d\n", m.Counts.MirroredVersions)
	fmt.Fprintf(&b, "blobs              %d (%s)\n", m.Counts.Blobs, humanBytes(m.Counts.BlobBytes))
	secret := "not included"
	if m.SigningSecret != nil {
		secret = "included"
	}
	fmt.Fprintf(&b, "signing secret     %s (%d managed signing keys)\n", secret, m.Counts.ManagedSigningKeys)
	return b.String()
}
