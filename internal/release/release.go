// Package release checks the files of a goreleaser provider release before
// Trove stores them: the SHA256SUMS document, the package file names, the
// zip archives and the optional manifest. Every checking function is pure:
// it reads only the bytes or the reader it is given, and treats them as
// hostile. What passes is served to Terraform and OpenTofu as is, so the
// rules are stricter than the clients' parsers, never looser.
//
// It also writes that layout without goreleaser (Pack, for
// `trove provider package`), from executables whose headers it checks
// against the platform they are packaged for (CheckExecutable).
package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"trove.dev/trove/internal/registry"
)

// Size limits of the small files of a release.
const (
	MaxSHASumsBytes  = 1 << 20  // a SHA256SUMS document
	MaxManifestBytes = 64 << 10 // a _manifest.json document
)

// Sum is one line of a SHA256SUMS document.
type Sum struct {
	Digest   string // 64 lower-case hex digits
	Filename string
}

// ParseSHA256SUMS parses a SHA256SUMS document as sha256sum and goreleaser
// write it: one "<64 lower-case hex digits><two spaces><file name>" line per
// file, each ended by "\n" (the last newline may be missing). Anything else
// is refused with the line number, since the document is served to the
// clients byte for byte: blank lines, the "*" binary marker of sha256sum -b,
// CR LF line ends, upper-case hex, a single space, duplicate names, and
// names with a path separator, white space or control characters.
func ParseSHA256SUMS(data []byte) ([]Sum, error) {
	if len(data) == 0 {
		return nil, registry.Errorf(registry.Invalid, "SHA256SUMS is empty; it must list the release's zip archives (sha256sum *.zip)")
	}
	if len(data) > MaxSHASumsBytes {
		return nil, registry.Errorf(registry.TooLarge, "SHA256SUMS is larger than %d MiB", MaxSHASumsBytes>>20)
	}
	text := string(bytes.TrimSuffix(data, []byte("\n")))
	lines := strings.Split(text, "\n")
	sums := make([]Sum, 0, len(lines))
	seen := make(map[string]int, len(lines))
	for i, line := range lines {
		n := i + 1
		s, err := parseSumLine(line)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "SHA256SUMS line %d: %s", n, err)
		}
		if first, dup := seen[s.Filename]; dup {
			return nil, registry.Errorf(registry.Invalid, "SHA256SUMS line %d: %s is already listed on line %d", n, s.Filename, first)
		}
		seen[s.Filename] = n
		sums = append(sums, s)
	}
	return sums, nil
}

const sumLineShape = `want "<sha256 in lower-case hex><two spaces><file name>" as sha256sum writes it`

func parseSumLine(line string) (Sum, error) {
	switch {
	case line == "" || strings.TrimSpace(line) == "":
		return Sum{}, fmt.Errorf("blank line; the clients may crash on one: remove it")
	case strings.HasSuffix(line, "\r"):
		return Sum{}, fmt.Errorf("ends with CR LF; use Unix line ends (\\n)")
	case len(line) < 64 || registry.CheckDigest(strings.ToLower(line[:64])) != nil:
		return Sum{}, fmt.Errorf("does not start with a 64-digit SHA-256 digest; %s", sumLineShape)
	case strings.ToLower(line[:64]) != line[:64]:
		return Sum{}, fmt.Errorf("digest is in upper-case hex; the clients compare lower-case digests: %s", sumLineShape)
	case len(line) == 64:
		return Sum{}, fmt.Errorf("digest has no file name; %s", sumLineShape)
	case strings.HasPrefix(line[64:], " *"):
		return Sum{}, fmt.Errorf("file name has the \"*\" binary marker produced by sha256sum -b; the clients would not match it: use sha256sum without -b (goreleaser's default)")
	case !strings.HasPrefix(line[64:], "  "):
		return Sum{}, fmt.Errorf("digest and file name must be separated by exactly two spaces; %s", sumLineShape)
	}
	name := line[66:]
	if err := checkSumFilename(name); err != nil {
		return Sum{}, err
	}
	return Sum{Digest: line[:64], Filename: name}, nil
}

func checkSumFilename(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("file name is empty; %s", sumLineShape)
	case !utf8.ValidString(name):
		return fmt.Errorf("file name %q is not valid UTF-8", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("file name %q contains a path separator; list bare file names (run sha256sum inside the dist folder)", name)
	case name == "." || name == "..":
		return fmt.Errorf("file name %q is not a file", name)
	}
	for _, r := range name {
		if unicode.IsSpace(r) {
			return fmt.Errorf("file name %q contains white space, which the clients split lines on; separate digest and name with exactly two spaces and use names without spaces", name)
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("file name %q contains a control character", name)
		}
	}
	return nil
}

// Listing is what the SHA256SUMS of one provider version lists.
type Listing struct {
	Digests  map[string]string      // every file name -> its digest
	Packages map[string]PackageName // the package zips, by file name
	Docs     string                 // the documentation archive's file name; "" for none
}

// CheckSums checks that the files sums (of ParseSHA256SUMS) lists belong
// to version of provider typ: every zip is a package of it
// (ParsePackageFilename), one per platform, and a documentation archive
// is its own (DocsNames), at most one. Other files (the manifest) are
// listed with their digests only.
func CheckSums(sums []Sum, typ, version string) (Listing, error) {
	l := Listing{Digests: make(map[string]string, len(sums)), Packages: make(map[string]PackageName)}
	seenPlatform := make(map[string]string)
	docsNames := DocsNames(typ, version)
	for _, s := range sums {
		l.Digests[s.Filename] = s.Digest
		if IsDocsName(s.Filename) {
			// Only this version's documentation, once: it becomes the
			// version's documentation, covered by the signature.
			if s.Filename != docsNames[0] && s.Filename != docsNames[1] {
				return Listing{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists %s, which is not the documentation of %s %s: name it %s (or .zip)", s.Filename, typ, version, docsNames[0])
			}
			if l.Docs != "" {
				return Listing{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists two documentation archives, %s and %s: a release has one", l.Docs, s.Filename)
			}
			l.Docs = s.Filename
			continue
		}
		if !strings.HasSuffix(s.Filename, ".zip") {
			continue
		}
		pkg, err := ParsePackageFilename(s.Filename)
		if err != nil {
			return Listing{}, err
		}
		if pkg.Type != typ || pkg.Version != version {
			return Listing{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists %s, which is not a package of %s %s", s.Filename, typ, version)
		}
		platform := pkg.OS + "_" + pkg.Arch
		if other, dup := seenPlatform[platform]; dup {
			return Listing{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists two archives for %s: %s and %s", platform, other, s.Filename)
		}
		seenPlatform[platform] = s.Filename
		l.Packages[s.Filename] = pkg
	}
	return l, nil
}

// PackageName is the parsed name of a provider package archive.
type PackageName struct {
	Type    string
	Version string
	OS      string
	Arch    string
}

// ParsePackageFilename parses terraform-provider-<type>_<version>_<os>_<arch>.zip.
// Neither the type nor the version may contain "_" (versions may contain
// "-" and "+"), and every part must be in its canonical form.
func ParsePackageFilename(name string) (PackageName, error) {
	const prefix, suffix = "terraform-provider-", ".zip"
	shape := fmt.Sprintf("want %s<type>_<version>_<os>_<arch>%s, e.g. terraform-provider-example_1.2.3_linux_amd64.zip", prefix, suffix)
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) || len(name) < len(prefix)+len(suffix) {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: %s", name, shape)
	}
	parts := strings.Split(name[len(prefix):len(name)-len(suffix)], "_")
	if len(parts) != 4 {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: %s", name, shape)
	}
	p := PackageName{Type: parts[0], Version: parts[1], OS: parts[2], Arch: parts[3]}
	typ, err := registry.ParseProviderType(p.Type)
	if err != nil {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: %s", name, registry.Message(err))
	}
	if typ != p.Type {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: write the provider type in lower case (%s)", name, typ)
	}
	if _, err := registry.ParseVersion(p.Version); err != nil {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: %s", name, registry.Message(err))
	}
	if err := registry.ValidatePlatform(p.OS, p.Arch); err != nil {
		return PackageName{}, registry.Errorf(registry.Invalid, "invalid package file name %q: %s", name, registry.Message(err))
	}
	return p, nil
}

// defaultProtocols are the plugin protocol versions of a release without a
// manifest, as Terraform assumes.
var defaultProtocols = []string{"5.0"}

const maxProtocols = 16

var protocolShape = regexp.MustCompile(`^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$`)

// ParseManifest reads goreleaser's terraform-provider-<type>_<version>_manifest.json,
// {"version":1,"metadata":{"protocol_versions":["5.0"]}}, and returns the
// plugin protocol versions it declares. A missing document (nil or empty)
// or an empty list means ["5.0"]. Every entry must be MAJOR.MINOR and one
// must be 5.x or 6.x, else Terraform and OpenTofu would refuse the package.
func ParseManifest(data []byte) ([]string, error) {
	if len(data) == 0 {
		return append([]string(nil), defaultProtocols...), nil
	}
	if len(data) > MaxManifestBytes {
		return nil, registry.Errorf(registry.TooLarge, "manifest is larger than %d KiB", MaxManifestBytes>>10)
	}
	var doc struct {
		Version  *int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		reason := strings.TrimPrefix(err.Error(), "json: ")
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			reason = "wrong type"
			if typeErr.Field != "" {
				reason += " for " + strings.TrimPrefix(typeErr.Field, ".")
			}
		}
		return nil, registry.Errorf(registry.Invalid, `manifest is not of the form {"version":1,"metadata":{"protocol_versions":["5.0"]}} (%s)`, reason)
	}
	if dec.More() {
		return nil, registry.Errorf(registry.Invalid, "manifest has data after its JSON object")
	}
	if doc.Version == nil {
		return nil, registry.Errorf(registry.Invalid, `manifest has no "version"; want 1`)
	}
	if *doc.Version != 1 {
		return nil, registry.Errorf(registry.Invalid, "manifest version %d is not supported; want 1", *doc.Version)
	}
	return CheckProtocols(doc.Metadata.ProtocolVersions)
}

// CheckProtocols checks the plugin protocol versions of a release, as its
// manifest declares them (ParseManifest) or a bundle carries them, and
// returns them: none means ["5.0"]; at most 16, each MAJOR.MINOR, none
// twice, and one 5.x or 6.x, else Terraform and OpenTofu would refuse the
// package.
func CheckProtocols(protocols []string) ([]string, error) {
	if len(protocols) == 0 {
		return append([]string(nil), defaultProtocols...), nil
	}
	if len(protocols) > maxProtocols {
		return nil, registry.Errorf(registry.Invalid, "manifest lists %d protocol versions; at most %d are allowed", len(protocols), maxProtocols)
	}
	supported := false
	seen := make(map[string]bool, len(protocols))
	for _, p := range protocols {
		if !protocolShape.MatchString(p) {
			return nil, registry.Errorf(registry.Invalid, "manifest protocol version %q is not MAJOR.MINOR, e.g. \"5.0\" or \"6.0\"", p)
		}
		if seen[p] {
			return nil, registry.Errorf(registry.Invalid, "manifest lists protocol version %s twice", p)
		}
		seen[p] = true
		major, _ := strconv.Atoi(p[:strings.IndexByte(p, '.')])
		if major == 5 || major == 6 {
			supported = true
		}
	}
	if !supported {
		return nil, registry.Errorf(registry.Invalid, "manifest protocol versions %s include neither 5.x nor 6.x; Terraform and OpenTofu would refuse the provider", strings.Join(protocols, ", "))
	}
	return append([]string(nil), protocols...), nil
}
