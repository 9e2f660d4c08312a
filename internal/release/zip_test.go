package release_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io/fs"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

// entry is one member of a test archive. With raw set, the bytes in body
// are written as they are, under the header's sizes and CRC, so that tests
// can forge headers.
type entry struct {
	name string
	body string
	mode fs.FileMode // 0: regular file 0755 (directory 0755 when name ends in "/")
	raw  *zip.FileHeader
}

func file(name, body string) entry { return entry{name: name, body: body} }

// executableHeader gives a raw header the mode of an executable.
func executableHeader(h *zip.FileHeader) *zip.FileHeader {
	h.SetMode(0o755)
	return h
}

func buildZip(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.raw != nil {
			w, err := zw.CreateRaw(e.raw)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch {
		case e.mode != 0:
			h.SetMode(e.mode)
		case strings.HasSuffix(e.name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
			h.Method = zip.Store
		default:
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
	return entry{body: string(compressed), raw: &zip.FileHeader{
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
		"stored, not deflated": {{body: bin, raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(bin)),
			CompressedSize64: uint64(len(bin)), UncompressedSize64: uint64(len(bin))})}},
	}
	for name, entries := range valid {
		t.Run(name, func(t *testing.T) {
			data := buildZip(t, entries...)
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
		return entry{body: stored, raw: executableHeader(&zip.FileHeader{Name: name, Method: method, CRC32: crc,
			CompressedSize64: uint64(len(stored)), UncompressedSize64: uint64(len(body))})}
	}
	valid1 := buildZip(t, file(exe, bin))

	invalid := map[string]struct {
		data []byte
		kind registry.Kind
		want string
	}{
		"not a zip":              {[]byte("this is not a zip file at all, not even close"), registry.Invalid, "not a valid zip file"},
		"nothing":                {nil, registry.Invalid, "not a valid zip file"},
		"truncated":              {valid1[:len(valid1)-30], registry.Invalid, "not a valid zip file"},
		"empty":                  {buildZip(t), registry.Invalid, "archive is empty"},
		"too many entries":       {buildZip(t, file(exe, bin), file("1", ""), file("2", ""), file("3", ""), file("4", ""), file("5", ""), file("6", ""), file("7", ""), file("8", ""), file("9", ""), file("10", "")), registry.TooLarge, "11 entries; the limit is 10"},
		"declared size too big":  {buildZip(t, file(exe, bin), file("big", strings.Repeat("x", 1<<20))), registry.TooLarge, "more than the limit"},
		"bomb with lying header": {buildZip(t, file(exe, bin), lyingBomb(t)), registry.Invalid, `"README.md" unpacks to more bytes than its header declares`},
		"traversal":              {buildZip(t, file(exe, bin), file("../x", "evil")), registry.Invalid, `"../x" escapes the archive`},
		"deep traversal":         {buildZip(t, file(exe, bin), file("a/../../x", "evil")), registry.Invalid, "escapes the archive"},
		"absolute path":          {buildZip(t, file(exe, bin), file("/etc/passwd", "evil")), registry.Invalid, "absolute path"},
		"drive letter":           {buildZip(t, file(exe, bin), file("C:/x", "evil")), registry.Invalid, "absolute path"},
		"backslash":              {buildZip(t, file(exe, bin), file(`docs\x`, "evil")), registry.Invalid, "backslash"},
		"dot component":          {buildZip(t, file("./"+exe, bin)), registry.Invalid, `"." path component`},
		"empty component":        {buildZip(t, file(exe, bin), file("a//b", "")), registry.Invalid, "empty"},
		"control character":      {buildZip(t, file(exe, bin), file("a\x1b[2Jb", "")), registry.Invalid, "control"},
		"duplicate":              {buildZip(t, file(exe, bin), file(exe, bin)), registry.Invalid, "twice"},
		"case clash":             {buildZip(t, file(exe, bin), file("README", ""), file("readme", "")), registry.Invalid, "case-insensitive"},
		"file used as a folder":  {buildZip(t, file(exe, bin), file("docs", ""), file("docs/x", "")), registry.Invalid, `"docs/x" is inside "docs", which is a file`},
		"symlink":                {buildZip(t, file(exe, bin), entry{name: "link", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}), registry.Invalid, `"link" is a symbolic link`},
		"symlink executable":     {buildZip(t, entry{name: exe, body: "/bin/sh", mode: fs.ModeSymlink | 0o777}), registry.Invalid, "symbolic link"},
		"named pipe":             {buildZip(t, file(exe, bin), entry{name: "fifo", mode: fs.ModeNamedPipe | 0o644}), registry.Invalid, "not a regular file"},
		"directory with content": {buildZip(t, file(exe, bin), entry{body: "x", raw: dirHeader("d", 1)}), registry.Invalid, "directory with content"},
		"nested executable":      {buildZip(t, file("dist/", ""), file("dist/"+exe, bin)), registry.Invalid, "dist/" + exe + " is inside a folder"},
		"executable is a folder": {buildZip(t, file(exe+"/", ""), file(exe+"/x", bin)), registry.Invalid, "is not a regular file; the provider executable"},
		"no executable":          {buildZip(t, file("README.md", "hi")), registry.Invalid, "no provider executable at its root"},
		"another provider":       {buildZip(t, file("terraform-provider-other_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"longer type name":       {buildZip(t, file("terraform-provider-examples_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"wrong case":             {buildZip(t, file("terraform-provider-Example_v1.0.0", bin)), registry.Invalid, "no provider executable"},
		"bad crc":                {buildZip(t, withCRC(exe, bin, crc32.ChecksumIEEE([]byte(bin))+1, zip.Deflate)), registry.Invalid, "does not match its CRC-32"},
		"bad crc, stored":        {buildZip(t, withCRC(exe, bin, 12345, zip.Store)), registry.Invalid, "does not match its CRC-32"},
		"unknown method":         {buildZip(t, withCRC(exe, bin, crc32.ChecksumIEEE([]byte(bin)), 99)), registry.Invalid, "compression method 99"},
		"corrupt deflate":        {buildZip(t, entry{body: "\xff\xff\xff\xff garbage", raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Deflate, CRC32: 1, CompressedSize64: 13, UncompressedSize64: 100})}), registry.Invalid, "is corrupt (flate"},
		"not executable":         {buildZip(t, entry{name: exe, body: bin, mode: 0o644}), registry.Invalid, "has no execute permission in the zip (mode -rw-r--r--)"},
		"zipped on Windows":      {buildZip(t, entry{body: bin, raw: &zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(bin)), CompressedSize64: uint64(len(bin)), UncompressedSize64: uint64(len(bin))}}), registry.Invalid, "has no execute permission"},
		"short content":          {buildZip(t, entry{body: "abc", raw: executableHeader(&zip.FileHeader{Name: exe, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte("abc")), CompressedSize64: 3, UncompressedSize64: 5})}), registry.Invalid, "fewer bytes than its header declares"},
	}
	for name, tc := range invalid {
		t.Run(name, func(t *testing.T) {
			err := release.CheckZip(bytes.NewReader(tc.data), int64(len(tc.data)), "example", "linux", lim)
			wantErr(t, err, tc.kind, tc.want)
		})
	}

	t.Run("windows needs no execute permission", func(t *testing.T) {
		data := buildZip(t, entry{name: exe + ".exe", body: bin, mode: 0o644})
		if err := release.CheckZip(bytes.NewReader(data), int64(len(data)), "example", "windows", lim); err != nil {
			t.Fatalf("CheckZip of a windows package without execute permission: %v", err)
		}
	})

	t.Run("zero limits mean the defaults", func(t *testing.T) {
		data := buildZip(t, file(exe, strings.Repeat("x", 2<<20)))
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
		{file(exe, bin), entry{name: "link", body: "/", mode: fs.ModeSymlink | 0o777}},
	} {
		f.Add(buildZip(f, entries...))
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
