package oci

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// maxZipBytes bounds a module's unpacked files, and so the zip packed
// from them in memory. Publishing checks archives against tighter limits
// already; this only keeps a hostile stored archive from taking memory.
const maxZipBytes = 256 << 20

// zipTime is the modification time of every entry of a packed zip.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// zipInfo is a packed module zip: its digest ("sha256:<hex>") and size.
type zipInfo struct {
	digest string
	size   int64
}

// zipper packs module archives into deterministic zips, stores them as
// blobs and remembers the digest of each archive's zip (the packing is
// deterministic, so the mapping never changes: after a restart the same
// archive packs to the same digest).
type zipper struct {
	blobs store.Blobs
	mu    sync.Mutex
	memo  map[string]zipInfo // archive digest (hex) -> its zip
}

func newZipper(b store.Blobs) *zipper { return &zipper{blobs: b, memo: map[string]zipInfo{}} }

// zip returns the zip of v's archive, packing and storing it the first
// time.
func (z *zipper) zip(ctx context.Context, v registry.ModuleVersion) (zipInfo, error) {
	z.mu.Lock()
	info, ok := z.memo[v.ArchiveDigest]
	z.mu.Unlock()
	if ok {
		return info, nil
	}
	body, err := z.pack(ctx, v.ArchiveDigest, v.ArchiveFormat)
	if err != nil {
		return zipInfo{}, err
	}
	info = zipInfo{digest: digestOf(body), size: int64(len(body))}
	if err := z.blobs.Put(ctx, strings.TrimPrefix(info.digest, "sha256:"), info.size, bytes.NewReader(body)); err != nil {
		return zipInfo{}, err
	}
	z.mu.Lock()
	if len(z.memo) > 100_000 {
		clear(z.memo)
	}
	z.memo[v.ArchiveDigest] = info
	z.mu.Unlock()
	return info, nil
}

// restore stores again the zip with digest of one of the module's
// versions (after the garbage collector removed it).
func (z *zipper) restore(ctx context.Context, idx Index, key repoKey, digest string) error {
	vs, err := idx.ListModuleVersions(ctx, key.ns, key.name, key.system)
	if err != nil {
		return err
	}
	for _, v := range vs {
		z.mu.Lock()
		info, ok := z.memo[v.ArchiveDigest]
		z.mu.Unlock()
		if !ok || info.digest != digest {
			continue
		}
		body, err := z.pack(ctx, v.ArchiveDigest, v.ArchiveFormat)
		if err != nil {
			return err
		}
		return z.blobs.Put(ctx, strings.TrimPrefix(digest, "sha256:"), int64(len(body)), bytes.NewReader(body))
	}
	return registry.Errorf(registry.NotFound, "blob %s not found", digest)
}

type zipFile struct {
	name string
	mode int64
	data []byte
}

// pack reads the stored archive (tar.gz or zip) and packs its regular
// files into a zip: entries sorted by name, fixed times, modes 0644 or
// 0755, deflated. The same files give the same bytes.
func (z *zipper) pack(ctx context.Context, archive, format string) ([]byte, error) {
	b, err := z.blobs.Open(ctx, archive)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var files []zipFile
	total := int64(0)
	add := func(name string, mode int64, r io.Reader) error {
		name = path.Clean(strings.TrimPrefix(name, "./"))
		if name == "." || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "/") || name == ".." {
			return registry.Errorf(registry.Invalid, "module archive %s holds an unsafe name", archive)
		}
		data, err := io.ReadAll(io.LimitReader(r, maxZipBytes-total+1))
		if err != nil {
			return err
		}
		total += int64(len(data))
		if total > maxZipBytes {
			return registry.Errorf(registry.TooLarge, "module archive %s unpacks to more than %d bytes", archive, maxZipBytes)
		}
		files = append(files, zipFile{name: name, mode: mode, data: data})
		return nil
	}
	switch format {
	case "zip":
		ra, ok := b.Content.(io.ReaderAt)
		if !ok { // a backend whose blobs are streams: read it whole, bounded
			if b.Size > maxZipBytes {
				return nil, registry.Errorf(registry.TooLarge, "module archive %s is larger than %d bytes", archive, maxZipBytes)
			}
			data, err := io.ReadAll(io.LimitReader(b.Content, maxZipBytes))
			if err != nil {
				return nil, registry.Wrap(registry.Internal, err, "reading module archive")
			}
			ra = bytes.NewReader(data)
		}
		zr, err := zip.NewReader(ra, b.Size)
		if err != nil {
			return nil, registry.Wrap(registry.Internal, err, "reading module archive")
		}
		for _, f := range zr.File {
			if !f.Mode().IsRegular() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, registry.Wrap(registry.Internal, err, "reading module archive")
			}
			err = add(f.Name, int64(f.Mode().Perm()), rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	default: // tar.gz
		gz, err := gzip.NewReader(b.Content)
		if err != nil {
			return nil, registry.Wrap(registry.Internal, err, "reading module archive")
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, registry.Wrap(registry.Internal, err, "reading module archive")
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			if err := add(h.Name, h.Mode, tr); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(files, func(a, b zipFile) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, f := range files {
		if i > 0 && files[i-1].name == f.name {
			continue
		}
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: zipTime}
		if f.mode&0o111 != 0 {
			h.SetMode(0o755)
		} else {
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
