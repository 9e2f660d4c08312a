package modules

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// tent is an archive entry for the tests: a regular file unless Typeflag
// says otherwise.
type tent = testarchive.Entry

const mainTF = "variable \"cidr\" {\n  type = string\n}\n"

func check(t *testing.T, archive []byte, lim Limits) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	format, err := CheckArchive(bytes.NewReader(archive), int64(len(archive)), lim, dir)
	return format, dir, err
}

func TestCheckAccepts(t *testing.T) {
	entries := []tent{
		{Name: "./", Typeflag: tar.TypeDir},
		{Name: "./main.tf", Body: mainTF},
		{Name: "./README.md", Body: "# Net\n\nBuilds a network.\n"},
		{Name: "./modules/", Typeflag: tar.TypeDir},
		{Name: "./modules/subnet/", Typeflag: tar.TypeDir},
		{Name: "./modules/subnet/main.tf", Body: "output \"id\" {\n  value = 1\n}\n"},
		{Name: "./modules/subnet/versions.tf", Typeflag: tar.TypeSymlink, Linkname: "../../versions.tf"},
		{Name: "./versions.tf", Body: "terraform {\n  required_version = \">= 1.0\"\n}\n"},
		{Name: "./files/script.sh", Body: "#!/bin/sh\n"},
		{Name: "./examples/basic/main.tf", Body: "module \"net\" {\n  source = \"../..\"\n}\n"},
		{Name: "./docs/img.png", Body: "\x89PNG"},
	}
	for format, archive := range map[string][]byte{FormatTarGz: testarchive.TarGzOf(t, entries...), FormatZip: testarchive.ZipOf(t, entries...)} {
		t.Run(format, func(t *testing.T) {
			got, dir, err := check(t, archive, Limits{})
			if err != nil {
				t.Fatalf("CheckArchive: %v", err)
			}
			if got != format {
				t.Errorf("format = %q, want %q", got, format)
			}
			var staged []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dir, p)
					staged = append(staged, filepath.ToSlash(rel))
				}
				return err
			})
			slices.Sort(staged)
			want := []string{"README.md", "examples/basic/main.tf", "main.tf", "modules/subnet/main.tf", "modules/subnet/versions.tf", "versions.tf"}
			if !slices.Equal(staged, want) {
				t.Errorf("staged files = %q, want %q", staged, want)
			}
			link, err := os.ReadFile(filepath.Join(dir, "modules/subnet/versions.tf"))
			if err != nil || !strings.Contains(string(link), "required_version") {
				t.Errorf("the linked versions.tf was staged as %q (%v), want the content of its target", link, err)
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	root := tent{Name: "main.tf", Body: mainTF}
	big := strings.Repeat("x", 2048)
	tests := map[string]struct {
		entries []tent
		lim     Limits
		kind    registry.Kind
		msg     string
	}{
		"traversal":               {[]tent{root, {Name: "../evil.tf", Body: "x"}}, Limits{}, registry.Invalid, `escapes the archive with ".."`},
		"traversal inside":        {[]tent{root, {Name: "a/../../evil", Body: "x"}}, Limits{}, registry.Invalid, `".."`},
		"absolute":                {[]tent{root, {Name: "/etc/cron.d/x", Body: "x"}}, Limits{}, registry.Invalid, "absolute path"},
		"windows drive":           {[]tent{root, {Name: "C:/x", Body: "x"}}, Limits{}, registry.Invalid, "absolute path"},
		"backslash":               {[]tent{root, {Name: `..\evil`, Body: "x"}}, Limits{}, registry.Invalid, "backslash"},
		"name too long to unpack": {[]tent{root, {Name: "d/" + strings.Repeat("a", 256), Body: "x"}}, Limits{}, registry.Invalid, "a 256-byte name"},
		"path too long":           {[]tent{root, {Name: strings.Repeat("abcdefgh/", 114) + "x", Body: "x"}}, Limits{}, registry.Invalid, "1027 bytes long"},
		"control character":       {[]tent{root, {Name: "a\x1b[2Jb", Body: "x"}}, Limits{}, registry.Invalid, "control character"},
		"duplicate":               {[]tent{root, {Name: "main.tf", Body: "other"}}, Limits{}, registry.Invalid, "twice"},
		"case clash":              {[]tent{root, {Name: "MAIN.tf", Body: "other"}}, Limits{}, registry.Invalid, "case-insensitive"},
		"link absolute":           {[]tent{root, {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}}, Limits{}, registry.Invalid, "absolute"},
		"link out":                {[]tent{root, {Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../../x"}}, Limits{}, registry.Invalid, "outside the module"},
		"link down then up":       {[]tent{root, {Name: "sub/x", Body: "x"}, {Name: "d", Typeflag: tar.TypeSymlink, Linkname: "sub"}, {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "d/../x"}}, Limits{}, registry.Invalid, "goes up after going down"},
		"link to own parent":      {[]tent{root, {Name: "a/b/l", Typeflag: tar.TypeSymlink, Linkname: ".."}}, Limits{}, registry.Invalid, "directory containing it"},
		"link dangling":           {[]tent{root, {Name: "l", Typeflag: tar.TypeSymlink, Linkname: "nope.tf"}}, Limits{}, registry.Invalid, "not in the archive"},
		"entry below link":        {[]tent{root, {Name: "sub", Body: "", Typeflag: tar.TypeSymlink, Linkname: "main.tf"}, {Name: "sub/x", Body: "x"}}, Limits{}, registry.Invalid, "which is a symbolic link"},
		"entry below file":        {[]tent{root, {Name: "f", Body: "x"}, {Name: "f/x", Body: "x"}}, Limits{}, registry.Invalid, "which is a file"},
		"link loop":               {[]tent{root, {Name: "a", Typeflag: tar.TypeSymlink, Linkname: "b"}, {Name: "b", Typeflag: tar.TypeSymlink, Linkname: "a"}}, Limits{}, registry.Invalid, "chain"},
		"no tf at root":           {[]tent{{Name: "modules/x/main.tf", Body: mainTF}, {Name: "README.md", Body: "hi"}}, Limits{}, registry.Invalid, "no Terraform configuration file"},
		"only hidden tf":          {[]tent{{Name: ".main.tf", Body: mainTF}}, Limits{}, registry.Invalid, "no Terraform configuration file"},
		"root tf is a dir":        {[]tent{{Name: "main.tf/", Typeflag: tar.TypeDir}, {Name: "x", Body: "x"}}, Limits{}, registry.Invalid, "no Terraform configuration file"},
		"empty":                   {nil, Limits{}, registry.Invalid, "no Terraform configuration file"},
		"too many entries":        {[]tent{root, {Name: "a", Body: "1"}, {Name: "b", Body: "2"}, {Name: "c", Body: "3"}}, Limits{MaxEntries: 3}, registry.TooLarge, "more than 3 entries"},
		"too large":               {[]tent{root, {Name: "big", Body: big}}, Limits{MaxUnpackedBytes: 1024}, registry.TooLarge, "more than 1024 bytes"},
		"too large in many files": {[]tent{root, {Name: "a", Body: big[:600]}, {Name: "b", Body: big[:600]}}, Limits{MaxUnpackedBytes: 1024}, registry.TooLarge, "more than 1024 bytes"},
	}
	for name, tt := range tests {
		for _, format := range []string{FormatTarGz, FormatZip} {
			t.Run(name+"/"+format, func(t *testing.T) {
				archive := testarchive.TarGzOf(t, tt.entries...)
				if format == FormatZip {
					archive = testarchive.ZipOf(t, tt.entries...)
				}
				_, dir, err := check(t, archive, tt.lim)
				if !registry.IsKind(err, tt.kind) {
					t.Fatalf("CheckArchive error = %v (kind %v), want kind %v", err, registry.KindOf(err), tt.kind)
				}
				if !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("CheckArchive error = %q, want it to mention %q", err, tt.msg)
				}
				if left, _ := os.ReadDir(dir); len(left) > 0 {
					// Nothing is staged before the whole archive passed.
					t.Errorf("a refused archive staged %d entries", len(left))
				}
			})
		}
	}
}

func TestCheckRefusesTarOnly(t *testing.T) {
	root := tent{Name: "main.tf", Body: mainTF}
	tests := map[string]struct {
		entries []tent
		msg     string
	}{
		"hard link":      {[]tent{root, {Name: "h", Typeflag: tar.TypeLink, Linkname: "main.tf"}}, "hard link"},
		"fifo":           {[]tent{root, {Name: "p", Typeflag: tar.TypeFifo}}, "not a regular file"},
		"char device":    {[]tent{root, {Name: "dev", Typeflag: tar.TypeChar}}, "not a regular file"},
		"dir with bytes": {nil, "directory with content"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			archive := testarchive.TarGzOf(t, tt.entries...)
			if name == "dir with bytes" {
				archive = rawTarGz(t, &tar.Header{Name: "main.tf", Size: 3, Typeflag: tar.TypeReg, Mode: 0o644}, "a=1",
					&tar.Header{Name: "d", Size: 4, Typeflag: tar.TypeDir, Mode: 0o755}, "abcd")
			}
			_, _, err := check(t, archive, Limits{})
			if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("CheckArchive error = %v, want an Invalid error mentioning %q", err, tt.msg)
			}
		})
	}
}

// rawTarGz writes headers and bodies as given, without tar.Writer's checks
// of directory sizes.
func rawTarGz(t *testing.T, parts ...any) []byte {
	t.Helper()
	var tarBuf bytes.Buffer
	for i := 0; i < len(parts); i += 2 {
		hdr, body := parts[i].(*tar.Header), parts[i+1].(string)
		var one bytes.Buffer
		tw := tar.NewWriter(&one)
		h := *hdr
		typ := h.Typeflag
		h.Typeflag = tar.TypeReg
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		block := one.Bytes()[:512]
		block[156] = typ
		// Recompute the header checksum after changing the type flag.
		for j := 148; j < 156; j++ {
			block[j] = ' '
		}
		sum := 0
		for _, c := range block {
			sum += int(c)
		}
		copy(block[148:], []byte(strings.Repeat("0", 6-len(itoa8(sum)))+itoa8(sum)+"\x00 "))
		tarBuf.Write(block)
		padded := make([]byte, (len(body)+511)/512*512)
		copy(padded, body)
		tarBuf.Write(padded)
	}
	tarBuf.Write(make([]byte, 1024))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(tarBuf.Bytes())
	zw.Close()
	return buf.Bytes()
}

func itoa8(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%8)) + s
		n /= 8
	}
	return s
}

func TestCheckRefusesBombs(t *testing.T) {
	// A gzip stream of 8 MiB of zeros after a valid tar: hidden past the
	// tar's end-of-archive marker, it still counts as unpacked data.
	tarData := testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF})
	zr, _ := gzip.NewReader(bytes.NewReader(tarData))
	var plain bytes.Buffer
	plain.ReadFrom(zr)
	plain.Write(make([]byte, 8<<20))
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write(plain.Bytes())
	zw.Close()
	if _, _, err := check(t, bomb.Bytes(), Limits{MaxUnpackedBytes: 1 << 20}); !registry.IsKind(err, registry.TooLarge) {
		t.Errorf("trailing gzip bomb: CheckArchive error = %v, want TooLarge", err)
	}

	// A zip whose header understates an entry's size.
	lying := testarchive.ZipOf(t, tent{Body: mainTF, Raw: &zip.FileHeader{Name: "main.tf", Method: zip.Store, UncompressedSize64: 3, CompressedSize64: uint64(len(mainTF)), CRC32: 0}})
	if _, _, err := check(t, lying, Limits{}); !registry.IsKind(err, registry.Invalid) && !registry.IsKind(err, registry.TooLarge) {
		t.Errorf("zip with a lying header: CheckArchive error = %v, want it refused", err)
	}
}

func TestCheckRefusesHugeZipDirectory(t *testing.T) {
	entries := []tent{{Name: "main.tf", Body: mainTF}}
	for i := range 50 {
		entries = append(entries, tent{Name: "f" + strings.Repeat("x", i), Body: ""})
	}
	_, _, err := check(t, testarchive.ZipOf(t, entries...), Limits{MaxEntries: 10})
	if !registry.IsKind(err, registry.TooLarge) || !strings.Contains(err.Error(), "more than 10 entries") {
		t.Errorf("CheckArchive error = %v, want TooLarge before the entries are read", err)
	}
	if n, ok := zipEntryCount(bytes.NewReader(testarchive.ZipOf(t, entries...)), int64(len(testarchive.ZipOf(t, entries...)))); !ok || n != 51 {
		t.Errorf("zipEntryCount = %d, %v; want 51", n, ok)
	}
}

func TestCheckRefusesGarbage(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":          nil,
		"text":           []byte("hello world"),
		"truncated gzip": testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF})[:20],
		"gzip not tar":   gzipOf([]byte(strings.Repeat("not a tar archive ", 100))),
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := check(t, data, Limits{}); !registry.IsKind(err, registry.Invalid) {
				t.Errorf("CheckArchive error = %v, want Invalid", err)
			}
		})
	}
}

func gzipOf(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestCheckStagesOnlyReadmeHead(t *testing.T) {
	readme := "# Big\n\n" + strings.Repeat("é", maxReadmeBytes) // 2 bytes per character
	_, dir, err := check(t, testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF}, tent{Name: "README.md", Body: readme}), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "README.md"))
	if err != nil || fi.Size() != maxReadmeBytes+1 {
		t.Fatalf("staged README: %v, size %d; want %d bytes", err, fi.Size(), maxReadmeBytes+1)
	}
	md, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !md.Root.ReadmeTruncated || len(md.Root.Readme) > maxReadmeBytes || !strings.HasSuffix(md.Root.Readme, "é") {
		t.Errorf("README truncated=%v, %d bytes, ending %q: want it cut at a character boundary within %d bytes",
			md.Root.ReadmeTruncated, len(md.Root.Readme), md.Root.Readme[len(md.Root.Readme)-4:], maxReadmeBytes)
	}
}
