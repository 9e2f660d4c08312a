// Package testarchive builds the zip, tar and tar.gz archives that tests
// feed to Trove: module archives, documentation archives, provider zips
// and bundles, well-formed or hostile.
//
// Entries are written as given, in the order given: names are neither
// cleaned nor checked, so that "../x", absolute paths, duplicate names and
// links out of the archive stay expressible. The output is deterministic
// (fixed time stamps, no gzip name or time, maps packed in name order), so
// that two builds of the same entries have the same digest. It imports only
// the standard library, so that the internal tests of any package can use
// it.
package testarchive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"maps"
	"slices"
	"testing"
	"time"
)

// ModTime is the time stamp of every entry whose Entry.ModTime is zero
// (2020-09-13 12:26:40 UTC, as releasetest's provider zips have always had).
var ModTime = time.Unix(1_600_000_000, 0).UTC()

// Entry is one member of a test archive.
type Entry struct {
	// Name is the entry's path, written as it is.
	Name string
	// Body is the content of a regular file. A tar archive ignores it
	// for other types; a zip archive writes it for all but symbolic
	// links, whose content is Linkname.
	Body string
	// Typeflag is the entry's tar type (tar.TypeReg when 0). A zip
	// archive gives tar.TypeDir, TypeSymlink, TypeFifo, TypeChar and
	// TypeBlock the matching fs.FileMode type bits and cannot hold a
	// hard link (tar.TypeLink).
	Typeflag byte
	// Linkname is the target of a symbolic or hard link.
	Linkname string
	// Mode holds the permission bits; 0 means 0o644, 0o755 for a
	// directory and 0o777 for a symbolic link.
	Mode fs.FileMode
	// ModTime is the entry's time stamp; zero means ModTime.
	ModTime time.Time
	// Stored writes a zip entry uncompressed instead of deflated.
	Stored bool
	// Raw, in a zip archive, writes Body as it is under this header's
	// name, method, sizes and CRC-32 (zip.Writer.CreateRaw), so that a
	// test can forge them; the other fields are then ignored. A tar
	// archive ignores Raw.
	Raw *zip.FileHeader
}

// Zip returns a zip archive of regular files (name -> content) in name
// order.
func Zip(t testing.TB, files map[string]string) []byte {
	t.Helper()
	return ZipOf(t, sorted(files)...)
}

// TarGz returns a .tar.gz archive of regular files (name -> content) in
// name order.
func TarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	return TarGzOf(t, sorted(files)...)
}

// ZipOf returns a zip archive of entries, in their order.
func ZipOf(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.Raw != nil {
			w, err := zw.CreateRaw(e.Raw)
			if err != nil {
				t.Fatalf("testarchive: zip entry %q: %v", e.Raw.Name, err)
			}
			if _, err := w.Write([]byte(e.Body)); err != nil {
				t.Fatalf("testarchive: zip entry %q: %v", e.Raw.Name, err)
			}
			continue
		}
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: e.modTime()}
		if e.Stored {
			h.Method = zip.Store
		}
		var typ fs.FileMode
		body := e.Body
		switch e.Typeflag {
		case 0, tar.TypeReg:
		case tar.TypeDir:
			typ = fs.ModeDir
		case tar.TypeSymlink:
			typ, body = fs.ModeSymlink, e.Linkname
		case tar.TypeFifo:
			typ = fs.ModeNamedPipe
		case tar.TypeChar:
			typ = fs.ModeDevice | fs.ModeCharDevice
		case tar.TypeBlock:
			typ = fs.ModeDevice
		default:
			t.Fatalf("testarchive: zip entry %q: a zip cannot hold tar type %q", e.Name, e.Typeflag)
		}
		h.SetMode(typ | e.perm())
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatalf("testarchive: zip entry %q: %v", e.Name, err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatalf("testarchive: zip entry %q: %v", e.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatalf("testarchive: zip: %v", err)
	}
	return buf.Bytes()
}

// TarGzOf returns a .tar.gz archive of entries, in their order.
func TarGzOf(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	tarball := TarOf(t, entries...)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name, no time
	zw.Write(tarball)          // to memory: no error
	zw.Close()
	return buf.Bytes()
}

// TarOf returns an uncompressed tar archive of entries, in their order.
func TarOf(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Typeflag, Linkname: e.Linkname, Mode: int64(e.perm()), ModTime: e.modTime()}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("testarchive: tar entry %q: %v", e.Name, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatalf("testarchive: tar entry %q: %v", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("testarchive: tar: %v", err)
	}
	return buf.Bytes()
}

// perm returns the entry's permission bits, its default when Mode is 0.
func (e Entry) perm() fs.FileMode {
	switch {
	case e.Mode != 0:
		return e.Mode.Perm()
	case e.Typeflag == tar.TypeDir:
		return 0o755
	case e.Typeflag == tar.TypeSymlink:
		return 0o777
	}
	return 0o644
}

// modTime returns the entry's time stamp, ModTime when it has none.
func (e Entry) modTime() time.Time {
	if e.ModTime.IsZero() {
		return ModTime
	}
	return e.ModTime
}

// sorted returns files as regular-file entries in name order.
func sorted(files map[string]string) []Entry {
	entries := make([]Entry, 0, len(files))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, Entry{Name: name, Body: files[name]})
	}
	return entries
}
