package release

import (
	"archive/zip"

	"golang.org/x/mod/sumdb/dirhash"

	"trove.dev/trove/internal/registry"
)

// PackageHash returns the "h1:" hash of the provider package (a zip file)
// at path: the hash Terraform and OpenTofu record in lock files and
// compare with a package they install (dirhash's Hash1 over the files in
// the archive). Unlike the zip's SHA-256 (a "zh:" hash), it does not
// depend on how the archive was compressed.
//
// Hashing unpacks every file, so an archive beyond DefaultLimits (more
// entries, or more unpacked bytes as its directory declares them; the zip
// reader refuses files that unpack to more than they declare) is refused
// before any of it is unpacked.
func PackageHash(path string) (string, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", registry.Wrap(registry.Invalid, err, "hashing the package contents: it is not a valid zip file")
	}
	var unpacked uint64
	for _, f := range zr.File {
		unpacked += f.UncompressedSize64
	}
	zr.Close()
	switch {
	case len(zr.File) > DefaultLimits.MaxEntries:
		return "", registry.Errorf(registry.TooLarge, "hashing the package contents: it has %d entries; the limit is %d", len(zr.File), DefaultLimits.MaxEntries)
	case unpacked > uint64(DefaultLimits.MaxUnpackedBytes):
		return "", registry.Errorf(registry.TooLarge, "hashing the package contents: it unpacks to %d bytes; the limit is %d", unpacked, DefaultLimits.MaxUnpackedBytes)
	}
	h, err := dirhash.HashZip(path, dirhash.Hash1)
	if err != nil {
		return "", registry.Wrap(registry.Invalid, err, "hashing the package contents")
	}
	return h, nil
}
