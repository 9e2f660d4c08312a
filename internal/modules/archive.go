package modules

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"trove.dev/trove/internal/registry"
)

// Bounds of what CheckArchive copies into the staging directory for Inspect.
const (
	// maxStageBytes bounds the configuration files and READMEs staged for
	// metadata extraction together.
	maxStageBytes = 32 << 20
	// maxReadmeBytes is how much of a README the metadata keeps; one more
	// byte is staged so that Inspect can tell it was cut.
	maxReadmeBytes = 256 << 10
	// maxLinkTarget bounds a symbolic link's target.
	maxLinkTarget = 4096
	// maxLinkHops bounds a chain of symbolic links.
	maxLinkHops = 40
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zipMagic  = []byte("PK\x03\x04")
	zipEmpty  = []byte("PK\x05\x06")
)

type entryKind int

const (
	kindFile entryKind = iota
	kindDir
	kindSymlink
)

// entry is one validated archive entry.
type entry struct {
	name   string // clean relative path without a trailing "/"
	kind   entryKind
	target string // symlinks: the path the link resolves to, relative to the root
}

// item is an archive entry as a format reader yields it.
type item struct {
	name     string // as stored
	kind     entryKind
	linkname string // symlink target as stored
	size     int64  // declared size of a file
	// open returns the content of a zip file or symlink, decompressing it
	// and verifying its CRC-32; nil for tar entries, read with read.
	open func() (io.ReadCloser, error)
	read io.Reader // the content of a tar entry, valid during the callback
}

// archive is one of the two formats, read from the start on every walk.
type archive interface {
	walk(fn func(it item) error) error
}

// CheckArchive checks the module archive of size bytes in r, a .tar.gz or a .zip
// recognised by its first bytes, within lim (a zero field takes
// DefaultLimits' value), and returns its format (FormatTarGz or FormatZip).
//
// The archive must hold only regular files, directories and symbolic
// links, under relative names without "..", backslashes or control
// characters, each name once (also ignoring case); a link must point to
// another entry of the archive, never outside it, to one of its own
// parent directories or through another link; and its root must hold at
// least one Terraform configuration file (*.tf or *.tf.json). Entry
// count and unpacked size are enforced while reading, so a compression
// bomb is refused as soon as it exceeds them.
//
// CheckArchive then copies the files Inspect reads (configuration files and
// README.md of the root, of modules/* and of examples/*) into stageDir, an
// existing empty directory, under their validated names.
func CheckArchive(r io.ReaderAt, size int64, lim Limits, stageDir string) (format string, err error) {
	lim = lim.withDefaults()
	head := make([]byte, 4)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	var a archive
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		format, a = FormatTarGz, tarGz{r: r, size: size, lim: lim}
	case bytes.HasPrefix(head, zipMagic), bytes.HasPrefix(head, zipEmpty):
		// zip.NewReader loads every entry header: refuse a huge central
		// directory from its end record before that.
		if n, ok := zipEntryCount(r, size); ok && n > lim.MaxEntries {
			return "", registry.Errorf(registry.TooLarge, "the archive has more than %d entries, the limit", lim.MaxEntries)
		}
		zr, err := zip.NewReader(r, size)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return "", registry.Errorf(registry.Invalid, "the archive is not a valid zip file (%s)", strings.TrimPrefix(err.Error(), "zip: "))
		}
		format, a = FormatZip, zipArchive{zr: zr}
	default:
		return "", registry.Errorf(registry.Invalid, "the archive is neither a .tar.gz nor a .zip file; pack the module with: trove module publish NS/NAME/SYSTEM VERSION DIR")
	}

	entries, err := readEntries(a, lim)
	if err != nil {
		return "", err
	}
	if err := checkTree(entries); err != nil {
		return "", err
	}
	want, err := stagePlan(entries)
	if err != nil {
		return "", err
	}
	return format, stage(a, want, stageDir)
}

// zipEntryCount returns the entry count the end of central directory
// record of a zip declares, and whether it found one. A count of 0xFFFF
// (a ZIP64 archive) is returned as is: it exceeds any sensible limit.
func zipEntryCount(r io.ReaderAt, size int64) (int, bool) {
	const eocdLen, maxComment = 22, 0xFFFF
	tail := min(size, eocdLen+maxComment)
	buf := make([]byte, tail)
	if _, err := r.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return 0, false
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < eocdLen {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(buf[i+10:])), true
}

// readEntries reads every entry once, checking names, kinds, the entry
// count and the unpacked size.
func readEntries(a archive, lim Limits) (map[string]*entry, error) {
	entries := make(map[string]*entry)
	folded := make(map[string]string) // lower-cased name -> name
	count := 0
	var unpacked int64
	err := a.walk(func(it item) error {
		count++
		if count > lim.MaxEntries {
			return registry.Errorf(registry.TooLarge, "the archive has more than %d entries, the limit", lim.MaxEntries)
		}
		name, err := entryName(it.name, it.kind == kindDir)
		if err != nil {
			return err
		}
		if name == "" { // the root directory itself ("./")
			return nil
		}
		if other, dup := folded[strings.ToLower(name)]; dup {
			if other == name {
				return registry.Errorf(registry.Invalid, "the archive holds %q twice", name)
			}
			return registry.Errorf(registry.Invalid, "the archive holds %q and %q, which clash on case-insensitive file systems", other, name)
		}
		folded[strings.ToLower(name)] = name
		e := &entry{name: name, kind: it.kind}
		switch it.kind {
		case kindFile:
			if it.size < 0 || it.size > lim.MaxUnpackedBytes-unpacked {
				return registry.Errorf(registry.TooLarge, "the archive unpacks to more than %d bytes, the limit", lim.MaxUnpackedBytes)
			}
			unpacked += it.size
			if it.open != nil { // zip: headers may lie, so count what comes out
				n, err := drain(it, lim.MaxUnpackedBytes-unpacked+it.size)
				if err != nil {
					return err
				}
				unpacked += n - it.size
			}
		case kindSymlink:
			target := it.linkname
			if it.open != nil {
				if target, err = readLinkTarget(it); err != nil {
					return err
				}
			}
			if e.target, err = linkTarget(name, target); err != nil {
				return err
			}
		}
		entries[name] = e
		return nil
	})
	return entries, err
}

// entryName checks a stored entry name and returns it cleaned: without a
// leading "./" or a trailing "/". The root directory yields "".
func entryName(raw string, isDir bool) (string, error) {
	name := raw
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	if name == "." {
		name = ""
	}
	if isDir {
		name = strings.TrimSuffix(name, "/")
	}
	if err := registry.CheckArchivePath(name); err != nil {
		return "", err
	}
	switch {
	case name == "" && isDir:
		return "", nil
	case name == "":
		return "", registry.Errorf(registry.Invalid, "the archive has an entry with an empty name")
	case !utf8.ValidString(name):
		return "", registry.Errorf(registry.Invalid, "archive entry %q is not valid UTF-8", raw)
	case strings.Contains(name, `\`):
		return "", registry.Errorf(registry.Invalid, "archive entry %q contains a backslash; use \"/\" as path separator", raw)
	case strings.HasPrefix(name, "/"), len(name) >= 2 && name[1] == ':':
		return "", registry.Errorf(registry.Invalid, "archive entry %q is an absolute path; entries must be relative to the module root", raw)
	}
	for _, part := range strings.Split(name, "/") {
		switch part {
		case "..":
			return "", registry.Errorf(registry.Invalid, "archive entry %q escapes the archive with \"..\"", raw)
		case "", ".":
			return "", registry.Errorf(registry.Invalid, "archive entry %q has an empty or \".\" path component", raw)
		}
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return "", registry.Errorf(registry.Invalid, "archive entry %q contains a control character", raw)
	}
	return name, nil
}

// linkTarget checks the target of the symbolic link name and returns the
// path it resolves to, relative to the archive root. The target must be
// relative and clean, with ".." only as leading components, and resolve
// inside the archive to something other than the link's own directories.
func linkTarget(name, target string) (string, error) {
	bad := func(why string) error {
		return registry.Errorf(registry.Invalid, "archive entry %q is a symbolic link to %q, which %s", name, target, why)
	}
	switch {
	case target == "":
		return "", bad("is empty")
	case len(target) > maxLinkTarget:
		return "", bad("is too long")
	case !utf8.ValidString(target) || strings.ContainsFunc(target, unicode.IsControl):
		return "", bad("contains invalid or control characters")
	case strings.Contains(target, `\`):
		return "", bad("contains a backslash")
	case strings.HasPrefix(target, "/") || len(target) >= 2 && target[1] == ':':
		return "", bad("is absolute: links must stay inside the module")
	}
	ups := 0
	for i, part := range strings.Split(target, "/") {
		switch {
		case part == ".." && i == ups:
			ups++
		case part == "..":
			return "", bad("goes up after going down; write the shortest relative path")
		case part == "" || part == ".":
			return "", bad("is not a clean path")
		}
	}
	resolved := path.Join(path.Dir(name), target)
	switch {
	case resolved == ".." || strings.HasPrefix(resolved, "../"):
		return "", bad("points outside the module")
	case resolved == "." || resolved == name || strings.HasPrefix(name, resolved+"/"):
		return "", bad("points to itself or to a directory containing it")
	}
	return resolved, nil
}

// checkTree checks the entries as a whole: nothing lies below a file or a
// link, every link resolves to an entry through real directories only,
// and the root holds a configuration file.
func checkTree(entries map[string]*entry) error {
	// Directories implied by the names of other entries.
	implicit := make(map[string]bool)
	for name := range entries {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			implicit[dir] = true
		}
	}
	for dir := range implicit {
		if e, ok := entries[dir]; ok && e.kind != kindDir {
			what := "a file"
			if e.kind == kindSymlink {
				what = "a symbolic link"
			}
			return registry.Errorf(registry.Invalid, "the archive holds entries inside %q, which is %s", dir, what)
		}
	}
	isDir := func(name string) bool {
		e, ok := entries[name]
		return implicit[name] || ok && e.kind == kindDir
	}
	for _, e := range entries {
		if e.kind != kindSymlink {
			continue
		}
		for dir := path.Dir(e.target); dir != "."; dir = path.Dir(dir) {
			if !isDir(dir) {
				return registry.Errorf(registry.Invalid, "archive entry %q is a symbolic link to %q, which does not lie in a directory of the archive", e.name, e.target)
			}
		}
		if _, ok := entries[e.target]; !ok && !implicit[e.target] {
			return registry.Errorf(registry.Invalid, "archive entry %q is a symbolic link to %q, which is not in the archive", e.name, e.target)
		}
		if _, err := resolve(entries, e.name); err != nil {
			return err
		}
	}
	for name, e := range entries {
		if strings.Contains(name, "/") || !isConfigFile(name) {
			continue
		}
		if final, err := resolve(entries, e.name); err == nil && entries[final] != nil && entries[final].kind == kindFile {
			return nil
		}
	}
	return registry.Errorf(registry.Invalid, "the archive has no Terraform configuration file (*.tf) at its root; pack the module's own directory, not the folder above it")
}

// resolve follows the chain of links starting at name and returns the
// entry it ends at.
func resolve(entries map[string]*entry, name string) (string, error) {
	for range maxLinkHops {
		e, ok := entries[name]
		if !ok || e.kind != kindSymlink {
			return name, nil
		}
		name = e.target
	}
	return "", registry.Errorf(registry.Invalid, "archive entry %q starts a chain of more than %d symbolic links (a loop?)", name, maxLinkHops)
}

// stagePlan maps each archive file to the names under which Inspect needs
// it: the configuration files and READMEs of the root, modules/* and
// examples/*, reached directly or through links.
func stagePlan(entries map[string]*entry) (map[string][]string, error) {
	want := make(map[string][]string)
	for name := range entries {
		parts := strings.Split(name, "/")
		base := parts[len(parts)-1]
		inScope := len(parts) == 1 || len(parts) == 3 && (parts[0] == "modules" || parts[0] == "examples")
		if !inScope || !isConfigFile(base) && !isReadme(base) {
			continue
		}
		final, err := resolve(entries, name)
		if err != nil {
			return nil, err
		}
		if e := entries[final]; e != nil && e.kind == kindFile {
			want[final] = append(want[final], name)
		}
	}
	return want, nil
}

// stage copies the planned files into dir, reading the archive again.
func stage(a archive, want map[string][]string, dir string) error {
	if len(want) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "opening the staging directory")
	}
	defer root.Close()
	budget := int64(maxStageBytes)
	return a.walk(func(it item) error {
		if it.kind != kindFile {
			return nil
		}
		name, err := entryName(it.name, false)
		if err != nil || len(want[name]) == 0 {
			return err
		}
		dests := want[name]
		delete(want, name)
		limit := budget
		if !slices.ContainsFunc(dests, func(d string) bool { return !isReadme(path.Base(d)) }) {
			limit = min(limit, maxReadmeBytes+1)
		}
		var rc io.ReadCloser = io.NopCloser(it.reader())
		if it.open != nil {
			if rc, err = it.open(); err != nil {
				return registry.Errorf(registry.Invalid, "archive entry %q is corrupt", it.name)
			}
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, limit+1))
		if err != nil {
			// A decompressor's text is about the upload, safe to answer.
			return registry.Errorf(registry.Invalid, "reading archive entry %s: %s", name, err)
		}
		if int64(len(data)) > limit {
			if limit < budget { // a README: keep its head only
				data = data[:limit]
			} else {
				return registry.Errorf(registry.TooLarge, "the module's configuration files and READMEs total more than %d MiB; Trove reads at most that much to extract metadata", maxStageBytes>>20)
			}
		}
		budget -= int64(len(data)) * int64(len(dests))
		if budget < 0 {
			return registry.Errorf(registry.TooLarge, "the module's configuration files and READMEs total more than %d MiB; Trove reads at most that much to extract metadata", maxStageBytes>>20)
		}
		for _, d := range dests {
			if err := writeStaged(root, d, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeStaged writes data to name (slash-separated, validated) inside root.
func writeStaged(root *os.Root, name string, data []byte) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return registry.Wrap(registry.Internal, err, "staging "+name)
		}
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "staging "+name)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return registry.Wrap(registry.Internal, err, "staging "+name)
	}
	return nil
}

// drain decompresses a zip entry, reading at most budget+1 bytes, and
// verifies its CRC-32. It returns the number of bytes produced.
func drain(it item, budget int64) (int64, error) {
	rc, err := it.open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			return 0, registry.Errorf(registry.Invalid, "archive entry %q uses an unsupported compression method; use deflate or store (zip's defaults)", it.name)
		}
		return 0, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", it.name, strings.TrimPrefix(err.Error(), "zip: "))
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(rc, budget+1))
	if n > budget {
		return n, registry.Errorf(registry.TooLarge, "the archive unpacks to more bytes than the limit")
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, zip.ErrFormat), errors.Is(err, io.ErrUnexpectedEOF):
		return n, registry.Errorf(registry.Invalid, "archive entry %q does not unpack to the size its header declares: the archive is corrupt or forged", it.name)
	case errors.Is(err, zip.ErrChecksum):
		return n, registry.Errorf(registry.Invalid, "archive entry %q does not match its CRC-32 checksum: the archive is corrupt", it.name)
	}
	return n, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", it.name, strings.TrimPrefix(err.Error(), "zip: "))
}

// readLinkTarget reads the target of a zip symbolic link (its content).
func readLinkTarget(it item) (string, error) {
	rc, err := it.open()
	if err != nil {
		return "", registry.Errorf(registry.Invalid, "archive entry %q is corrupt", it.name)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxLinkTarget+1))
	if err != nil {
		return "", registry.Errorf(registry.Invalid, "archive entry %q is corrupt", it.name)
	}
	return string(b), nil
}

// tarGz reads a gzip-compressed tar archive.
type tarGz struct {
	r    io.ReaderAt
	size int64
	lim  Limits
}

func (a tarGz) walk(fn func(it item) error) error {
	zr, err := gzip.NewReader(io.NewSectionReader(a.r, 0, a.size))
	if err != nil {
		return registry.Errorf(registry.Invalid, "the archive is not a valid .tar.gz file (%s)", strings.TrimPrefix(err.Error(), "gzip: "))
	}
	tr := tar.NewReader(zr)
	corrupt := func(err error) error {
		return registry.Errorf(registry.Invalid, "the archive is not a valid .tar.gz file (%s)", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "archive/tar: "), "gzip: "))
	}
	headers := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return corrupt(err)
		}
		headers++
		if headers > a.lim.MaxEntries+1 {
			return registry.Errorf(registry.TooLarge, "the archive has more than %d entries, the limit", a.lim.MaxEntries)
		}
		it := item{name: hdr.Name, size: hdr.Size, linkname: hdr.Linkname}
		switch hdr.Typeflag {
		case tar.TypeReg:
			it.kind = kindFile
		case tar.TypeDir:
			it.kind = kindDir
			if hdr.Size != 0 {
				return registry.Errorf(registry.Invalid, "archive entry %q is a directory with content", hdr.Name)
			}
		case tar.TypeSymlink:
			it.kind = kindSymlink
		case tar.TypeXGlobalHeader: // e.g. the commit id git archive records
			continue
		case tar.TypeLink:
			return registry.Errorf(registry.Invalid, "archive entry %q is a hard link; Trove accepts regular files, directories and symbolic links (tar --hard-dereference)", hdr.Name)
		default:
			return registry.Errorf(registry.Invalid, "archive entry %q is not a regular file, directory or symbolic link (tar type %q)", hdr.Name, string(rune(hdr.Typeflag)))
		}
		rd := &tarItemReader{tr: tr}
		it.read = rd
		if err := fn(it); err != nil {
			return err
		}
		if rd.err != nil {
			return corrupt(rd.err)
		}
	}
	// Read the rest of the gzip stream so that its checksum is verified,
	// counting it against the unpacked size: a bomb can hide after the
	// end of the tar data too.
	n, err := io.Copy(io.Discard, io.LimitReader(zr, a.lim.MaxUnpackedBytes+1))
	if err != nil {
		return corrupt(err)
	}
	if n > a.lim.MaxUnpackedBytes {
		return registry.Errorf(registry.TooLarge, "the archive unpacks to more than %d bytes, the limit", a.lim.MaxUnpackedBytes)
	}
	return nil
}

// tarItemReader reads the current tar entry and remembers a failure, which
// is the archive's fault rather than the reader's.
type tarItemReader struct {
	tr  *tar.Reader
	err error
}

func (r *tarItemReader) Read(p []byte) (int, error) {
	n, err := r.tr.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// zipArchive reads a zip archive.
type zipArchive struct {
	zr *zip.Reader
}

func (a zipArchive) walk(fn func(it item) error) error {
	for _, f := range a.zr.File {
		mode := f.Mode()
		it := item{name: f.Name, size: int64(f.UncompressedSize64), open: f.Open}
		if f.UncompressedSize64 > 1<<62 {
			return registry.Errorf(registry.TooLarge, "archive entry %q declares an impossible size", f.Name)
		}
		switch {
		case mode&fs.ModeSymlink != 0:
			it.kind = kindSymlink
		case strings.HasSuffix(f.Name, "/") || mode.IsDir():
			it.kind = kindDir
			if f.UncompressedSize64 != 0 {
				return registry.Errorf(registry.Invalid, "archive entry %q is a directory with content", f.Name)
			}
		case mode.IsRegular():
			it.kind = kindFile
		default:
			return registry.Errorf(registry.Invalid, "archive entry %q is not a regular file, directory or symbolic link (mode %s)", f.Name, mode)
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

// reader returns the content of a tar item (zip items use open).
func (it item) reader() io.Reader {
	if it.read == nil {
		return bytes.NewReader(nil)
	}
	return it.read
}
