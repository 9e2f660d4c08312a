package providerdocs

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"strings"
	"unicode"
	"unicode/utf8"

	"trove.dev/trove/internal/registry"
)

// Limits bounds what Parse reads from an archive. Every bound is checked
// while reading, on the bytes that actually come out of the decompressor,
// never on what headers declare, so that a compression bomb or a forged
// archive is refused as soon as it exceeds one.
type Limits struct {
	// MaxArchiveBytes bounds the archive itself (compressed).
	MaxArchiveBytes int64
	// MaxEntries bounds the entries of the archive, directories and
	// ignored files included.
	MaxEntries int
	// MaxPageBytes bounds each page (its file, front matter included).
	MaxPageBytes int64
	// MaxTotalBytes bounds everything the archive unpacks to: for a
	// .tar.gz the whole decompressed stream (ignored files included), for
	// a .zip the pages read.
	MaxTotalBytes int64
	// MaxRatio bounds how many times larger than the archive its unpacked
	// bytes may be (beyond the first MiB): real Markdown compresses about
	// 4 to 10 times; a bomb compresses a thousand times.
	MaxRatio int64
	// MaxPathLength bounds the name of an entry, in bytes.
	MaxPathLength int
}

// DefaultLimits are the limits of Parse and of the upload route.
var DefaultLimits = Limits{
	MaxArchiveBytes: registry.MaxProviderDocsBytes, // 32 MiB
	MaxEntries:      2000,
	MaxPageBytes:    1 << 20,
	MaxTotalBytes:   64 << 20,
	MaxRatio:        100,
	MaxPathLength:   512,
}

// ratioSlack is how many unpacked bytes MaxRatio never refuses: a tiny
// archive of one page compresses far better than a large one.
const ratioSlack = 1 << 20

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zipMagic  = []byte("PK\x03\x04")
	zipEmpty  = []byte("PK\x05\x06")
)

// Parse reads a docs archive of size bytes from r, a .tar.gz or a .zip
// recognised by its first bytes, within l, and returns its pages.
//
// The docs tree is the first of docs/, website/docs/ and the archive's
// root that holds a Markdown file. Pages are its index (index.md or
// index.html.markdown: the overview) and the Markdown files of its
// resources (or r), data-sources (or d), ephemeral-resources, functions
// and guides directories; other files are ignored. The archive may hold
// only regular files and directories under relative names without "..",
// backslashes or control characters, each name once. A page's slug may
// hold only [a-z0-9_-], no two pages may share a category and slug, and
// every page must be valid UTF-8. An archive without pages is Invalid;
// exceeding a limit is TooLarge.
func (l Limits) Parse(r io.ReaderAt, size int64) (*Docs, error) {
	if size > l.MaxArchiveBytes {
		return nil, registry.Errorf(registry.TooLarge, "the documentation archive has %d bytes, more than the limit of %d MiB", size, l.MaxArchiveBytes>>20)
	}
	head := make([]byte, 4)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	var err error
	var docs *Docs
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		docs, err = l.parseTarGz(r, size)
	case bytes.HasPrefix(head, zipMagic), bytes.HasPrefix(head, zipEmpty):
		docs, err = l.parseZip(r, size)
	default:
		return nil, registry.Errorf(registry.Invalid, "the documentation archive is neither a .tar.gz nor a .zip file; pack the docs directory with: trove provider docs upload NAMESPACE/TYPE VERSION DIR")
	}
	if err != nil {
		return nil, err
	}
	if len(docs.Pages) == 0 {
		return nil, noPages()
	}
	sortPages(docs.Pages)
	return docs, nil
}

// unpackLimit returns how many bytes an archive of size bytes may unpack to.
func (l Limits) unpackLimit(size int64) int64 {
	return min(l.MaxTotalBytes, ratioSlack+l.MaxRatio*size)
}

// tooLarge is the refusal of an archive that unpacks beyond its limit.
func (l Limits) tooLarge(size int64) error {
	return registry.Errorf(registry.TooLarge, "the documentation archive unpacks to more than %d bytes, the limit for an archive of %d bytes (at most %d MiB, %d times its size): is it a compression bomb?",
		l.unpackLimit(size), size, l.MaxTotalBytes>>20, l.MaxRatio)
}

// checkName checks the name of an archive entry and returns it without a
// leading "./" or a trailing "/"; the root directory itself yields "".
func (l Limits) checkName(raw string, isDir bool) (string, error) {
	if len(raw) > l.MaxPathLength {
		return "", registry.Errorf(registry.Invalid, "archive entry %.64q... has a name longer than %d bytes", raw, l.MaxPathLength)
	}
	name := raw
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	if isDir {
		name = strings.TrimSuffix(name, "/")
	}
	switch {
	case (name == "" || name == ".") && isDir:
		return "", nil
	case name == "":
		return "", registry.Errorf(registry.Invalid, "the archive has an entry with an empty name")
	case !utf8.ValidString(name):
		return "", registry.Errorf(registry.Invalid, "archive entry %q is not valid UTF-8", raw)
	case strings.Contains(name, `\`):
		return "", registry.Errorf(registry.Invalid, "archive entry %q contains a backslash; use \"/\" as path separator", raw)
	case strings.HasPrefix(name, "/"), len(name) >= 2 && name[1] == ':':
		return "", registry.Errorf(registry.Invalid, "archive entry %q is an absolute path; entries must be relative to the archive root", raw)
	case strings.ContainsFunc(name, unicode.IsControl):
		return "", registry.Errorf(registry.Invalid, "archive entry %q contains a control character", raw)
	}
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "..":
			return "", registry.Errorf(registry.Invalid, "archive entry %q escapes the archive with \"..\"", raw)
		case "", ".":
			return "", registry.Errorf(registry.Invalid, "archive entry %q has an empty or \".\" path component", raw)
		}
	}
	return name, nil
}

// readPage reads the content of a page, at most MaxPageBytes.
func (l Limits) readPage(name string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, l.MaxPageBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > l.MaxPageBytes {
		return nil, registry.Errorf(registry.TooLarge, "documentation page %q is larger than the limit of %d MiB; split it", name, l.MaxPageBytes>>20)
	}
	return data, nil
}

// Tar.gz.

// countingReader counts the bytes that come out of r and fails once they
// exceed limit.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
	err   error // returned once the limit is exceeded
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, c.err
	}
	return n, err
}

// tarEntry is a checked tar entry of the first pass.
type tarEntry struct {
	name  string
	isDir bool
}

// walkTarGz reads the tar.gz from its start and calls fn for each entry
// that is a regular file or a directory, with its checked name and the
// reader of its content. Other entry types are refused. The whole
// decompressed stream counts against the unpack limit, and the gzip
// checksum is verified at its end.
func (l Limits) walkTarGz(r io.ReaderAt, size int64, fn func(name string, isDir bool, content io.Reader) error) error {
	zr, err := gzip.NewReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return registry.Errorf(registry.Invalid, "the documentation archive is not a valid .tar.gz file (%s)", strings.TrimPrefix(err.Error(), "gzip: "))
	}
	errBomb := l.tooLarge(size)
	cr := &countingReader{r: zr, limit: l.unpackLimit(size), err: errBomb}
	tr := tar.NewReader(cr)
	corrupt := func(err error) error {
		if errors.Is(err, errBomb) {
			return errBomb
		}
		return registry.Errorf(registry.Invalid, "the documentation archive is not a valid .tar.gz file (%s): is it truncated?",
			strings.TrimPrefix(strings.TrimPrefix(err.Error(), "archive/tar: "), "gzip: "))
	}
	entries := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return corrupt(err)
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader { // e.g. the commit id git archive records
			continue
		}
		if entries++; entries > l.MaxEntries {
			return registry.Errorf(registry.TooLarge, "the documentation archive has more than %d entries, the limit", l.MaxEntries)
		}
		var isDir bool
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			isDir = true
		case tar.TypeSymlink, tar.TypeLink:
			return registry.Errorf(registry.Invalid, "archive entry %q is a link; a documentation archive holds regular files and directories only", hdr.Name)
		default:
			return registry.Errorf(registry.Invalid, "archive entry %q is not a regular file or directory (tar type %q); a documentation archive holds regular files and directories only", hdr.Name, string(rune(hdr.Typeflag)))
		}
		name, err := l.checkName(hdr.Name, isDir)
		if err != nil {
			return err
		}
		if err := fn(name, isDir, tr); err != nil {
			if errors.Is(err, errBomb) {
				return errBomb
			}
			var re *registry.Error
			if errors.As(err, &re) {
				return err
			}
			return corrupt(err)
		}
	}
	// Read the rest of the stream so that its checksum is verified; it
	// counts against the unpack limit too.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return corrupt(err)
	}
	return nil
}

func (l Limits) parseTarGz(r io.ReaderAt, size int64) (*Docs, error) {
	// Pass 1: names, kinds and limits; the docs root follows from the names.
	var entries []tarEntry
	seen := map[string]bool{}
	err := l.walkTarGz(r, size, func(name string, isDir bool, _ io.Reader) error {
		if name == "" {
			return nil
		}
		if seen[name] {
			return registry.Errorf(registry.Invalid, "the archive holds %q twice", name)
		}
		seen[name] = true
		entries = append(entries, tarEntry{name: name, isDir: isDir})
		return nil
	})
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.isDir {
			files = append(files, e.name)
		}
	}
	c := &collector{root: chooseRoot(files), seen: map[string]string{}}
	wanted := map[string][2]string{} // name -> category, slug
	for _, name := range files {
		category, slug, ok, err := c.want(name)
		if err != nil {
			return nil, err
		}
		if ok {
			wanted[name] = [2]string{category, slug}
		}
	}
	if len(wanted) == 0 {
		return &Docs{}, nil
	}
	// Pass 2: the pages' content.
	err = l.walkTarGz(r, size, func(name string, isDir bool, content io.Reader) error {
		w, ok := wanted[name]
		if isDir || !ok {
			return nil
		}
		data, err := l.readPage(name, content)
		if err != nil {
			return err
		}
		return c.add(name, w[0], w[1], data)
	})
	if err != nil {
		return nil, err
	}
	return &Docs{Pages: c.pages}, nil
}

// Zip.

// zipEntryCount returns the entry count the end of central directory
// record of a zip declares, and whether it found one, so that a huge
// central directory is refused before zip.NewReader loads it.
func zipEntryCount(r io.ReaderAt, size int64) (int, bool) {
	const eocdLen, maxComment = 22, 0xFFFF
	tail := min(size, eocdLen+maxComment)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return 0, false
	}
	i := bytes.LastIndex(buf, zipEmpty)
	if i < 0 || len(buf)-i < eocdLen {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(buf[i+10:])), true
}

func (l Limits) parseZip(r io.ReaderAt, size int64) (*Docs, error) {
	if n, ok := zipEntryCount(r, size); ok && n > l.MaxEntries {
		return nil, registry.Errorf(registry.TooLarge, "the documentation archive has more than %d entries, the limit", l.MaxEntries)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, registry.Errorf(registry.Invalid, "the documentation archive is not a valid zip file (%s): is it truncated?", strings.TrimPrefix(err.Error(), "zip: "))
	}
	if len(zr.File) > l.MaxEntries {
		return nil, registry.Errorf(registry.TooLarge, "the documentation archive has more than %d entries, the limit", l.MaxEntries)
	}
	seen := map[string]bool{}
	var files []string
	byName := map[string]*zip.File{}
	for _, f := range zr.File {
		mode := f.Mode()
		isDir := false
		switch {
		case mode&fs.ModeSymlink != 0:
			return nil, registry.Errorf(registry.Invalid, "archive entry %q is a symbolic link; a documentation archive holds regular files and directories only", f.Name)
		case strings.HasSuffix(f.Name, "/") || mode.IsDir():
			isDir = true
		case mode.IsRegular():
		default:
			return nil, registry.Errorf(registry.Invalid, "archive entry %q is not a regular file or directory (mode %s); a documentation archive holds regular files and directories only", f.Name, mode)
		}
		name, err := l.checkName(f.Name, isDir)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, registry.Errorf(registry.Invalid, "the archive holds %q twice", name)
		}
		seen[name] = true
		if !isDir {
			files = append(files, name)
			byName[name] = f
		}
	}
	c := &collector{root: chooseRoot(files), seen: map[string]string{}}
	budget := l.unpackLimit(size)
	for _, name := range files {
		category, slug, ok, err := c.want(name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		data, err := l.readZipPage(byName[name], name, budget)
		if err != nil {
			return nil, err
		}
		if budget -= int64(len(data)); budget < 0 {
			return nil, l.tooLarge(size)
		}
		if err := c.add(name, category, slug, data); err != nil {
			return nil, err
		}
	}
	return &Docs{Pages: c.pages}, nil
}

// readZipPage decompresses one page, reading at most its page limit (and
// budget), and verifies its CRC-32.
func (l Limits) readZipPage(f *zip.File, name string, budget int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			return nil, registry.Errorf(registry.Invalid, "archive entry %q uses an unsupported compression method; use deflate or store (zip's defaults)", f.Name)
		}
		return nil, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", f.Name, strings.TrimPrefix(err.Error(), "zip: "))
	}
	defer rc.Close()
	lim := l
	lim.MaxPageBytes = min(l.MaxPageBytes, max(budget, 0))
	data, err := lim.readPage(name, rc)
	switch {
	case err == nil:
		return data, nil
	case registry.IsKind(err, registry.TooLarge) && budget < l.MaxPageBytes:
		return nil, registry.Errorf(registry.TooLarge, "the documentation archive unpacks to more bytes than the limit: is it a compression bomb?")
	case registry.IsKind(err, registry.TooLarge):
		return nil, err
	case errors.Is(err, zip.ErrChecksum):
		return nil, registry.Errorf(registry.Invalid, "archive entry %q does not match its CRC-32 checksum: the archive is corrupt", f.Name)
	case errors.Is(err, zip.ErrFormat), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, registry.Errorf(registry.Invalid, "archive entry %q does not unpack to the size its header declares: the archive is corrupt or forged", f.Name)
	}
	return nil, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", f.Name, strings.TrimPrefix(err.Error(), "zip: "))
}
