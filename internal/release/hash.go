package release

import (
	"golang.org/x/mod/sumdb/dirhash"

	"trove.dev/trove/internal/registry"
)

// PackageHash returns the "h1:" hash of the provider package (a zip file)
// at path: the hash Terraform and OpenTofu record in lock files and
// compare with a package they install (dirhash's Hash1 over the files in
// the archive). Unlike the zip's SHA-256 (a "zh:" hash), it does not
// depend on how the archive was compressed.
func PackageHash(path string) (string, error) {
	h, err := dirhash.HashZip(path, dirhash.Hash1)
	if err != nil {
		return "", registry.Wrap(registry.Invalid, err, "hashing the package contents")
	}
	return h, nil
}
