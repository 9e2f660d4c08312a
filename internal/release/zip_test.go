package release_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io/fs"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// entry is one member of a test archive; with Raw set, Body is written as
// it is, under the header's sizes and CRC, so that tests can forge headers.
type entry = testarchive.Entry

// file is a regular file of mode 0755, or a folder where name ends in "/".
func file(name, body string) entry {
	if strings.HasSuffix(name, "/") {
		return entry{Name: name, Typeflag: tar.TypeDir}
	}
	return entry{Name: name, Body: body, Mode: 0o755}
}

// executableHeader gives a raw header the mode of an executable.
func executableHeader(h *zip.FileHeader) *zip.FileHeader {
	h.SetMode(0o755)
	return h
}

func deflate(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

// lyingBomb is an entry whose headers say it unpacks to 10 bytes while it
// inflates to 4 MiB, beyond the test limit of 1 MiB.
func lyingBomb(t testing.TB) entry {
	data := make([]byte, 4<<20)
	compressed := deflate(t, data)
	return entry{Body: string(compressed), Raw: &zip.FileHeader{
		Name: "README.md", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(data),
		CompressedSize64: uint64(len(compressed)), UncompressedSize64: 10,
	}}
}

func dirHeader(name string, size uint64) *zip.FileHeader {
	h := &zip.FileHeader{Name: name, Method: zip.Store, CompressedSize64: size, UncompressedSize64: size}
	h.SetMode(fs.ModeDir | 0o755)
	return h
}

const exe = "terraform-provider-example_v1.0.0"

func TestCheckZip(t *testing.T) {
	lim := release.Limits{MaxEntries: 10, MaxUnpackedBytes: 1 << 20}
	bin := strings.Repeat("\x7fELF binary ", 100)

	valid := map[string][]entry{
		"goreleaser layout":      {file("CHANGELOG.md", "changes"), file("LICENSE", "MPL"), file("README.md", "hi"), file(exe, bin)},
		"exact name":             {file("terraform-provider-example", bin)},
		"windows executable":     {file("terraform-provider-example.exe", bin)},
		"underscore only":        {file("terraform-provider-example_", bin)},
		"with folders":           {file(exe, bin), file("docs/", ""), file("docs/index.md", "doc")},
		"empty executable":       {file(exe, "")},
		"at the entry limit":     {file(exe, bin), file("1", ""), file("2", ""), file("3", ""), file("4", ""), file("5", ""), file("6", ""), file("7", ""), file("8", ""), file("9", "")},
		"exactly the size limit": {file(exe, strings.Repeat("x", 1<<20))},
		"stored, not deflated": {{Body: bin, Raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(bin)),
			CompressedSize64: uint64(len(bin)), UncompressedSize64: uint64(len(bin))})}},
	}
	for name, entries := range valid {
		t.Run(name, func(t *testing.T) {
			data := testarchive.ZipOf(t, entries...)
			if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "linux", lim); err != nil {
				t.Fatalf("CheckZip: %v", err)
			}
		})
	}

	withCRC := func(name, body string, crc uint32, method uint16) entry {
		stored := body
		if method == zip.Deflate {
			stored = string(deflate(t, []byte(body)))
		}
		return entry{Body: stored, Raw: executableHeader(&zip.FileHeader{Name: name, Method: method, CRC32: crc,
			CompressedSize64: uint64(len(stored)), UncompressedSize64: uint64(len(body))})}
	}
	valid1 := testarchive.ZipOf(t, file(exe, bin))

	invalid := map[string]struct {
		data []byte
		kind registry.Kind
		want string
	}{
		"not a zip":               {[]byte("this is not a zip file at all, not even close"), registry.Invalid, "not a valid zip file"},
		"nothing":                 {nil, registry.Invalid, "not a valid zip file"},
		"truncated":               {valid1[:len(valid1)-30], registry.Invalid, "not a valid zip file"},
		"empty":                   {testarchive.ZipOf(t), registry.Invalid, "archive is empty"},
		"too many entries":        {testarchive.ZipOf(t, file(exe, bin), file("1", ""), file("2", ""), file("3", ""), file("4", ""), file("5", ""), file("6", ""), file("7", ""), file("8", ""), file("9", ""), file("10", "")), registry.TooLarge, "11 entries; the limit is 10"},
		"declared size too big":   {testarchive.ZipOf(t, file(exe, bin), file("big", strings.Repeat("x", 1<<20))), registry.TooLarge, "more than the limit"},
		"bomb with lying header":  {testarchive.ZipOf(t, file(exe, bin), lyingBomb(t)), registry.Invalid, `"README.md" unpacks to more bytes than its header declares`},
		"traversal":               {testarchive.ZipOf(t, file(exe, bin), file("../x", "evil")), registry.Invalid, `"../x" escapes the archive`},
		"deep traversal":          {testarchive.ZipOf(t, file(exe, bin), file("a/../../x", "evil")), registry.Invalid, "escapes the archive"},
		"absolute path":           {testarchive.ZipOf(t, file(exe, bin), file("/etc/passwd", "evil")), registry.Invalid, "absolute path"},
		"drive letter":            {testarchive.ZipOf(t, file(exe, bin), file("C:/x", "evil")), registry.Invalid, "absolute path"},
		"backslash":               {testarchive.ZipOf(t, file(exe, bin), file(`docs\x`, "evil")), registry.Invalid, "backslash"},
		"name too long to unpack": {testarchive.ZipOf(t, file(exe, bin), file(strings.Repeat("a", 256), "")), registry.Invalid, "a 256-byte name"},
		"path too long":           {testarchive.ZipOf(t, file(exe, bin), file(strings.Repeat("abcdefgh/", 114)+"x", "")), registry.Invalid, "1027 bytes long"},
		"dot component":           {testarchive.ZipOf(t, file("./"+exe, bin)), registry.Invalid, `"." path component`},
		"empty component":         {testarchive.ZipOf(t, file(exe, bin), file("a//b", "")), registry.Invalid, "empty"},
		"control character":       {testarchive.ZipOf(t, file(exe, bin), file("a\x1b[2Jb", "")), registry.Invalid, "control"},
		"duplicate":               {testarchive.ZipOf(t, file(exe, bin), file(exe, bin)), registry.Invalid, "twice"},
		"case clash":              {testarchive.ZipOf(t, file(exe, bin), file("README", ""), file("readme", "")), registry.Invalid, "case-insensitive"},
		"file used as a folder":   {testarchive.ZipOf(t, file(exe, bin), file("docs", ""), file("docs/x", "")), registry.Invalid, `"docs/x" is inside "docs", which is a file`},
		"symlink":                 {testarchive.ZipOf(t, file(exe, bin), entry{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), registry.Invalid, `"link" is a symbolic link`},
		"symlink executable":      {testarchive.ZipOf(t, entry{Name: exe, Typeflag: tar.TypeSymlink, Linkname: "/bin/sh"}), registry.Invalid, "symbolic link"},
		"named pipe":              {testarchive.ZipOf(t, file(exe, bin), entry{Name: "fifo", Typeflag: tar.TypeFifo}), registry.Invalid, "not a regular file"},
		"directory with content":  {testarchive.ZipOf(t, file(exe, bin), entry{Body: "x", Raw: dirHeader("d", 1)}), registry.Invalid, "directory with content"},
		"nested executable":       {testarchive.ZipOf(t, file("dist/", ""), file("dist/"+exe, bin)), registry.Invalid, "dist/" + exe + " is inside a folder"},
		"executable is a folder":  {testarchive.ZipOf(t, file(exe+"/", ""), file(exe+"/x", bin)), registry.Invalid, "is not a regular file; the provider executable"},
		"no executable":           {testarchive.ZipOf(t, file("README.md", "hi")), registry.Invalid, "no provider executable at its root"},
		"another provider":        {testarchive.ZipOf(t, file("terraform-provider-other_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"longer type name":        {testarchive.ZipOf(t, file("terraform-provider-examples_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"wrong case":              {testarchive.ZipOf(t, file("terraform-provider-Example_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"bad crc":                 {testarchive.ZipOf(t, withCRC(exe, bin, crc32.ChecksumIEEE([]byte(bin))+1, zip.Deflate)), registry.Invalid, "does not match its CRC-32"},
		"bad crc, stored":         {testarchive.ZipOf(t, withCRC(exe, bin, 12345, zip.Store)), registry.Invalid, "does not match its CRC-32"},
		"unknown method":          {testarchive.ZipOf(t, withCRC(exe, bin, crc32.ChecksumIEEE([]byte(bin)), 99)), registry.Invalid, "compression method 99"},
		"corrupt deflate":         {testarchive.ZipOf(t, entry{Body: "\xff\xff\xff\xff garbage", Raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Deflate, CRC32: 1, CompressedSize64: 13, UncompressedSize64: 100})}), registry.Invalid, "is corrupt (flate"},
		"not executable":          {testarchive.ZipOf(t, entry{Name: exe, Body: bin, Mode: 0o644}), registry.Invalid, "has no execute permission in the zip (mode -rw-r--r--)"},
		"zipped on Windows":       {testarchive.ZipOf(t, entry{Body: bin, Raw: &zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(bin)), CompressedSize64: uint64(len(bin)), UncompressedSize64: uint64(len(bin))}}), registry.Invalid, "has no execute permission"},
		"short content":           {testarchive.ZipOf(t, entry{Body: "abc", Raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte("abc")), CompressedSize64: 3, UncompressedSize64: 5})}), registry.Invalid, "fewer bytes than its header declares"},
	}
	for name, tc := range invalid {
		t.Run(name, func(t *testing.T) {
			err := release.CheckZip(bytes.NewReader(tc.data), int64(len(tc.data)), "example", "linux", lim)
			wantErr(t, err, tc.kind, tc.want)
		})
	}

	t.Run("windows needs no execute permission", func(t *testing.T) {
		data := testarchive.ZipOf(t, entry{Name: exe + ".exe", Body: bin, Mode: 0o644})
		if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "windows", lim); err != nil {
			t.Fatalf("CheckZip of a windows package without execute permission: %v", err)
		}
	})

	t.Run("zero limits mean the defaults", func(t *testing.T) {
		data := testarchive.ZipOf(t, file(exe, strings.Repeat("x", 2<<20)))
		if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "linux", release.Limits{}); err != nil {
			t.Fatalf("CheckZip with zero limits: %v", err)
		}
		err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "linux", lim)
		wantErr(t, err, registry.TooLarge, "more than the limit")
	})
}

// FuzzCheckZip feeds mutated archives to CheckZip: it must never panic,
// classify every refusal as the user's fault, and accept only archives
// with the executable at the root.
func FuzzCheckZip(f *testing.F) {
	bin := strings.Repeat("\x7fELF", 64)
	for _, entries := range [][]entry{
		{file(exe, bin)},
		{file("LICENSE", "MPL"), file(exe, bin), file("docs/", ""), file("docs/a.md", "doc")},
		{file("dist/"+exe, bin)},
		{file(exe, bin), file("../x", "")},
		{file(exe, bin), entry{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/"}},
	} {
		f.Add(testarchive.ZipOf(f, entries...))
	}
	lim := release.Limits{MaxEntries: 50, MaxUnpackedBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "linux", lim)
		if err != nil {
			if k := registry.KindOf(err); k != registry.Invalid && k != registry.TooLarge {
				t.Fatalf("error of kind %v: %v", k, err)
			}
			return
		}
		zr, zerr := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if zerr != nil && zerr != zip.ErrInsecurePath {
			t.Fatalf("accepted an archive archive/zip cannot read: %v", zerr)
		}
		for _, f := range zr.File {
			if strings.HasPrefix(f.Name, "terraform-provider-example") && !strings.Contains(f.Name, "/") && f.Mode().IsRegular() {
				return
			}
		}
		t.Fatalf("accepted an archive without the executable at its root")
	})
}
