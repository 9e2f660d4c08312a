// Package modules owns Terraform module archives: packing a directory into
// a deterministic .tar.gz (PackArchive, PackArchiveFiles), checking an
// uploaded .tar.gz or .zip before it is stored (CheckArchive), extracting
// the metadata people browse (Inspect: README, inputs, outputs, required
// providers, submodules and examples, read with terraform-config-inspect),
// and the publish and delete transactions of module versions (Publisher,
// staging uploads with internal/staging).
//
// Archives are hostile input. CheckArchive never trusts an entry name: it refuses
// absolute paths, "..", links that leave the archive, special files and
// duplicate names, bounds the entry count and the unpacked size while it
// reads, and copies only the files metadata extraction needs into a fresh
// staging directory, under names it has validated.
package modules

import (
	"strings"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
)

// Archive formats Trove stores. Each is also the suffix of the download
// URL, from which Terraform and OpenTofu recognise how to unpack it.
const (
	FormatTarGz = "tar.gz"
	FormatZip   = "zip"
)

// Limits bounds what one module archive may unpack to.
type Limits struct {
	MaxEntries       int   // files, directories and links in the archive
	MaxUnpackedBytes int64 // total uncompressed size of its files
}

// DefaultLimits are generous for any module: real ones hold tens of files
// and unpack to a few MiB.
var DefaultLimits = Limits{MaxEntries: 1000, MaxUnpackedBytes: 1 << 30}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxUnpackedBytes <= 0 {
		l.MaxUnpackedBytes = DefaultLimits.MaxUnpackedBytes
	}
	return l
}

// Filename returns the file name under which a module version's archive
// is served: <name>-<system>-<version>.<format>.
func Filename(v registry.ModuleVersion) string {
	return v.Name + "-" + v.System + "-" + v.Version + "." + v.ArchiveFormat
}

// Release returns what a module version's provenance statement is about:
// the module and its one archive, named Filename(v), with its digest.
func Release(v registry.ModuleVersion) provenance.Release {
	return provenance.Release{Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version,
		Archives: map[string]string{Filename(v): v.ArchiveDigest}, PublishedAt: v.PublishedAt}
}

// isConfigFile reports whether base is a Terraform configuration file that
// Terraform loads: *.tf or *.tf.json, not hidden.
func isConfigFile(base string) bool {
	return !strings.HasPrefix(base, ".") && (strings.HasSuffix(base, ".tf") || strings.HasSuffix(base, ".tf.json"))
}

// isReadme reports whether base names a module's README.md (any case).
func isReadme(base string) bool { return strings.EqualFold(base, "README.md") }
