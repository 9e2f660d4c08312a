package release

import (
	"archive/zip"
	"errors"
	"io"
	"io/fs"
	"strings"
	"unicode"

	"trove.dev/trove/internal/registry"
)

// Limits bounds what one provider archive may unpack to.
type Limits struct {
	MaxEntries       int   // files and directories in the archive
	MaxUnpackedBytes int64 // total uncompressed size of its files
}

// DefaultLimits are generous for any provider: real ones hold a few files
// and unpack to well under 500 MiB.
var DefaultLimits = Limits{MaxEntries: 1000, MaxUnpackedBytes: 1 << 30}

// CheckZip checks a provider package archive of size bytes read from r:
// a well-formed zip within lim (a zero field takes DefaultLimits' value)
// whose entries are plain relative paths (no absolute path, no "..", no
// backslash, no duplicate, no symbolic link or special file) and whose root
// holds the provider executable, a regular file named
// terraform-provider-<providerType> optionally followed by "_..." or "."
// (goreleaser writes terraform-provider-<type>_v<version>, plus ".exe" on
// Windows). Except for goos "windows", the executable must carry an execute
// permission: the clients unpack it with the mode the zip records and
// could not run it otherwise. Every file is decompressed to check its
// CRC-32, counting the bytes actually produced, so a zip bomb whose headers
// understate its size is refused too.
func CheckZip(r io.ReaderAt, size int64, providerType, goos string, lim Limits) error {
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = DefaultLimits.MaxEntries
	}
	if lim.MaxUnpackedBytes <= 0 {
		lim.MaxUnpackedBytes = DefaultLimits.MaxUnpackedBytes
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		reason := ""
		if !errors.Is(err, zip.ErrFormat) {
			reason = " (" + zipReason(err) + ")"
		}
		return registry.Errorf(registry.Invalid, "archive is not a valid zip file%s; build it with goreleaser or zip", reason)
	}
	if len(zr.File) == 0 {
		return registry.Errorf(registry.Invalid, "archive is empty; it must hold the provider executable terraform-provider-%s at its root", providerType)
	}
	if len(zr.File) > lim.MaxEntries {
		return registry.Errorf(registry.TooLarge, "archive has %d entries; the limit is %d", len(zr.File), lim.MaxEntries)
	}

	exe := "terraform-provider-" + providerType
	var (
		declared int64
		found    bool
		nested   string                                  // an executable-looking file below the root
		notFile  string                                  // an executable-looking root entry that is not a regular file
		names    = make(map[string]string, len(zr.File)) // lower-cased name -> name
		files    = make(map[string]bool, len(zr.File))   // lower-cased regular-file names
	)
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if err := checkEntryName(f.Name); err != nil {
			return err
		}
		if other, dup := names[strings.ToLower(name)]; dup {
			if other == name {
				return registry.Errorf(registry.Invalid, "archive holds %q twice", name)
			}
			return registry.Errorf(registry.Invalid, "archive holds %q and %q, which clash on case-insensitive file systems", other, name)
		}
		names[strings.ToLower(name)] = name

		mode := f.Mode()
		isDir := strings.HasSuffix(f.Name, "/") || mode.IsDir()
		switch {
		case mode&fs.ModeSymlink != 0:
			return registry.Errorf(registry.Invalid, "archive entry %q is a symbolic link; links are not allowed in provider packages", f.Name)
		case isDir:
			if f.UncompressedSize64 != 0 {
				return registry.Errorf(registry.Invalid, "archive entry %q is a directory with content", f.Name)
			}
		case !mode.IsRegular():
			return registry.Errorf(registry.Invalid, "archive entry %q is not a regular file (mode %s)", f.Name, mode)
		default:
			files[strings.ToLower(name)] = true
		}

		if f.UncompressedSize64 > uint64(lim.MaxUnpackedBytes-declared) {
			return registry.Errorf(registry.TooLarge, "archive unpacks to more than the limit of %d bytes", lim.MaxUnpackedBytes)
		}
		declared += int64(f.UncompressedSize64)

		base := name[strings.LastIndexByte(name, '/')+1:]
		if !isExecutableName(base, exe) {
			continue
		}
		switch {
		case base != name:
			if nested == "" {
				nested = name
			}
		case isDir || !mode.IsRegular():
			notFile = name
		case goos != "windows" && mode.Perm()&0o111 == 0:
			return registry.Errorf(registry.Invalid, "the provider executable %s has no execute permission in the zip (mode %s): "+
				"Terraform and OpenTofu unpack it with that mode and cannot run it; "+
				"chmod +x it before zipping (zip made on Windows record none), or package with goreleaser or trove provider package", name, mode.Perm())
		default:
			found = true
		}
	}
	for lower, name := range names {
		for dir := lower; strings.Contains(dir, "/"); {
			dir = dir[:strings.LastIndexByte(dir, '/')]
			if files[dir] {
				return registry.Errorf(registry.Invalid, "archive entry %q is inside %q, which is a file", name, names[dir])
			}
		}
	}
	if !found {
		switch {
		case notFile != "":
			return registry.Errorf(registry.Invalid, "archive root entry %q is not a regular file; the provider executable %s must be a file at the root of the zip", notFile, exe)
		case nested != "":
			return registry.Errorf(registry.Invalid, "the provider executable %s is inside a folder; Terraform and OpenTofu look for it at the root of the zip: zip the file itself, not its folder", nested)
		}
		return registry.Errorf(registry.Invalid, "archive has no provider executable at its root: want a file named %s or %s_<suffix> (goreleaser writes %s_v<version>)", exe, exe, exe)
	}

	// Headers may lie: decompress everything, counting what comes out.
	budget := lim.MaxUnpackedBytes
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || f.Mode().IsDir() {
			continue
		}
		n, err := drain(f, budget)
		if err != nil {
			return err
		}
		budget -= n
	}
	return nil
}

// drain decompresses f, reading at most budget+1 bytes, and verifies its
// CRC-32. It returns the number of bytes produced.
func drain(f *zip.File, budget int64) (int64, error) {
	rc, err := f.Open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			return 0, registry.Errorf(registry.Invalid, "archive entry %q uses compression method %d; use deflate or store (zip's defaults)", f.Name, f.Method)
		}
		return 0, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", f.Name, zipReason(err))
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(rc, budget+1))
	if n > budget {
		return n, registry.Errorf(registry.TooLarge, "archive unpacks to more than the limit of %d bytes", budget)
	}
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, zip.ErrFormat):
		return n, registry.Errorf(registry.Invalid, "archive entry %q unpacks to more bytes than its header declares: the archive is corrupt or forged", f.Name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return n, registry.Errorf(registry.Invalid, "archive entry %q unpacks to fewer bytes than its header declares: the archive is corrupt or truncated", f.Name)
	case errors.Is(err, zip.ErrChecksum):
		return n, registry.Errorf(registry.Invalid, "archive entry %q does not match its CRC-32 checksum: the archive is corrupt", f.Name)
	}
	return n, registry.Errorf(registry.Invalid, "archive entry %q is corrupt (%s)", f.Name, zipReason(err))
}

// checkEntryName refuses entry names that could write outside the
// directory the archive is unpacked into, or that unpack differently on
// other systems.
func checkEntryName(name string) error {
	if err := registry.CheckArchivePath(name); err != nil {
		return err
	}
	switch {
	case name == "" || name == "/":
		return registry.Errorf(registry.Invalid, "archive has an entry with an empty name")
	case strings.Contains(name, `\`):
		return registry.Errorf(registry.Invalid, "archive entry %q contains a backslash; use \"/\" as path separator", name)
	case strings.HasPrefix(name, "/"), len(name) >= 2 && name[1] == ':':
		return registry.Errorf(registry.Invalid, "archive entry %q is an absolute path; entries must be relative", name)
	}
	for _, part := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		switch part {
		case "..":
			return registry.Errorf(registry.Invalid, "archive entry %q escapes the archive with \"..\"", name)
		case "", ".":
			return registry.Errorf(registry.Invalid, "archive entry %q has an empty or \".\" path component", name)
		}
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return registry.Errorf(registry.Invalid, "archive entry %q contains a control or invalid character", name)
		}
	}
	return nil
}

// isExecutableName reports whether base names the provider executable as
// Terraform finds it: the exact name, or the name followed by "_" or ".".
func isExecutableName(base, exe string) bool {
	if !strings.HasPrefix(base, exe) {
		return false
	}
	rest := base[len(exe):]
	return rest == "" || rest[0] == '_' || rest[0] == '.'
}

func zipReason(err error) string {
	return strings.TrimPrefix(err.Error(), "zip: ")
}
