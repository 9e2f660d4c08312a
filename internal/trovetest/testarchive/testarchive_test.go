package testarchive_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"testing"
	"time"

	"trove.dev/trove/internal/trovetest/testarchive"
)

// got is what a reader finds of one entry.
type got struct {
	name, body, link string
	mode             fs.FileMode
	mtime            time.Time
}

func readZip(t *testing.T, data []byte) []got {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out []got
	for _, f := range zr.File {
		rc, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		if f.Method == zip.Deflate {
			r, _ := f.Open()
			b, _ = io.ReadAll(r)
		}
		out = append(out, got{name: f.Name, body: string(b), mode: f.Mode(), mtime: f.Modified})
	}
	return out
}

func readTar(t *testing.T, r io.Reader) []got {
	t.Helper()
	tr := tar.NewReader(r)
	var out []got
	for h, err := tr.Next(); err != io.EOF; h, err = tr.Next() {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, got{name: h.Name, body: string(b), link: h.Linkname, mode: h.FileInfo().Mode(), mtime: h.ModTime})
	}
	return out
}

func readTarGz(t *testing.T, data []byte) []got {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, zr)
}

func equal(t *testing.T, what string, a, b []got) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d entries %+v, want %d %+v", what, len(a), a, len(b), b)
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].body != b[i].body || a[i].link != b[i].link || a[i].mode != b[i].mode || !a[i].mtime.Equal(b[i].mtime) {
			t.Errorf("%s: entry %d = %+v, want %+v", what, i, a[i], b[i])
		}
	}
}

func TestMapsInNameOrder(t *testing.T) {
	files := map[string]string{"b.tf": "b", "a.tf": "a", "sub/c.tf": "c"}
	want := []got{
		{name: "a.tf", body: "a", mode: 0o644, mtime: testarchive.ModTime},
		{name: "b.tf", body: "b", mode: 0o644, mtime: testarchive.ModTime},
		{name: "sub/c.tf", body: "c", mode: 0o644, mtime: testarchive.ModTime},
	}
	equal(t, "Zip", readZip(t, testarchive.Zip(t, files)), want)
	equal(t, "TarGz", readTarGz(t, testarchive.TarGz(t, files)), want)
	if !bytes.Equal(testarchive.Zip(t, files), testarchive.Zip(t, files)) || !bytes.Equal(testarchive.TarGz(t, files), testarchive.TarGz(t, files)) {
		t.Error("two archives of the same files differ")
	}
}

func TestHostileEntriesKept(t *testing.T) {
	when := time.Date(2021, 2, 3, 4, 5, 6, 0, time.UTC)
	entries := []testarchive.Entry{
		{Name: "main.tf", Body: "x"},
		{Name: "../evil.tf", Body: "y", Mode: 0o755, ModTime: when},
		{Name: "/etc/evil.tf", Body: "z"},
		{Name: "main.tf", Body: "again"},
		{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		{Name: "d/", Typeflag: tar.TypeDir},
		{Name: "p", Typeflag: tar.TypeFifo},
	}
	want := []got{
		{name: "main.tf", body: "x", mode: 0o644, mtime: testarchive.ModTime},
		{name: "../evil.tf", body: "y", mode: 0o755, mtime: when},
		{name: "/etc/evil.tf", body: "z", mode: 0o644, mtime: testarchive.ModTime},
		{name: "main.tf", body: "again", mode: 0o644, mtime: testarchive.ModTime},
		{name: "passwd", link: "/etc/passwd", mode: fs.ModeSymlink | 0o777, mtime: testarchive.ModTime},
		{name: "d/", mode: fs.ModeDir | 0o755, mtime: testarchive.ModTime},
		{name: "p", mode: fs.ModeNamedPipe | 0o644, mtime: testarchive.ModTime},
	}
	equal(t, "TarGzOf", readTarGz(t, testarchive.TarGzOf(t, entries...)), want)
	equal(t, "TarOf", readTar(t, bytes.NewReader(testarchive.TarOf(t, entries...))), want)
	want[4].body, want[4].link = "/etc/passwd", "" // a zip link's target is its content
	equal(t, "ZipOf", readZip(t, testarchive.ZipOf(t, entries...)), want)
}

func TestZipStoredAndRaw(t *testing.T) {
	data := testarchive.ZipOf(t,
		testarchive.Entry{Name: "stored", Body: "plain", Stored: true},
		testarchive.Entry{Body: "0123456789", Raw: &zip.FileHeader{Name: "lying", Method: zip.Store, CompressedSize64: 10, UncompressedSize64: 3}},
	)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f := zr.File[0]; f.Method != zip.Store || f.UncompressedSize64 != 5 {
		t.Errorf("stored entry: method %d, size %d", f.Method, f.UncompressedSize64)
	}
	if f := zr.File[1]; f.Name != "lying" || f.UncompressedSize64 != 3 || f.CompressedSize64 != 10 {
		t.Errorf("raw entry: %q, sizes %d/%d; want the forged header kept", f.Name, f.UncompressedSize64, f.CompressedSize64)
	}
}
