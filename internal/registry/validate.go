package registry

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	version "github.com/hashicorp/go-version"
	tfaddr "github.com/hashicorp/terraform-registry-address"
)

// ParseNamespace validates a namespace name with the provider address rules
// the clients apply, at most MaxNamespaceLength bytes, and returns its
// normalized (lowercase) form.
func ParseNamespace(name string) (string, error) {
	if name == "" {
		return "", Errorf(Invalid, "namespace name is empty")
	}
	if err := NamespaceLimit.Check(name); err != nil {
		return "", err
	}
	norm, err := tfaddr.ParseProviderPart(name)
	if err != nil {
		return "", Errorf(Invalid, "invalid namespace %q: %s", name, err)
	}
	return norm, nil
}

// ParseNewNamespace is ParseNamespace for a namespace to create: its
// normalized name must also be ASCII. Names already stored keep being
// found (and deleted) through ParseNamespace.
func ParseNewNamespace(name string) (string, error) {
	norm, err := ParseNamespace(name)
	if err != nil {
		return "", err
	}
	if !isASCII(norm) {
		return "", Errorf(Invalid, "invalid namespace %q: %s", name, notASCII)
	}
	return norm, nil
}

// notASCII says why a name the provider address grammar allows is
// refused: it allows letters of every script, and "аcme" with a Cyrillic
// "а" would be a second namespace that reads as "acme".
const notASCII = "use the ASCII letters a-z, digits and dashes (letters of other scripts can pass for them)"

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// ParseNamespaces validates the namespace names of a token binding with
// ParseNamespace and returns them normalized, sorted and without
// duplicates; nil for none (a global binding).
func ParseNamespaces(names []string) ([]string, error) {
	var out []string
	for _, name := range names {
		norm, err := ParseNamespace(name)
		if err != nil {
			return nil, err
		}
		out = append(out, norm)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ParseProviderType validates a provider type name (at most
// MaxProviderTypeLength bytes) and returns its normalized (lowercase)
// form. Types may not start with "terraform-".
func ParseProviderType(name string) (string, error) {
	if name == "" {
		return "", Errorf(Invalid, "provider type is empty")
	}
	if err := ProviderTypeLimit.Check(name); err != nil {
		return "", err
	}
	norm, err := tfaddr.ParseProviderPart(name)
	if err != nil {
		return "", Errorf(Invalid, "invalid provider type %q: %s", name, err)
	}
	if strings.HasPrefix(norm, "terraform-") {
		return "", Errorf(Invalid, "invalid provider type %q: a type may not start with \"terraform-\"", name)
	}
	return norm, nil
}

// preIdent is a pre-release identifier as semver allows it: numeric
// without leading zeros, or alphanumeric. Leading zeros would also make
// versions the clients rank as equal ("rc.1" and "rc.01").
const preIdent = `(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)`

var semverShape = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-` + preIdent + `(\.` + preIdent + `)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// ParseVersion checks that v is a canonical semantic version as both
// Terraform and OpenTofu parse it: MAJOR.MINOR.PATCH with optional
// -prerelease and +build parts, no leading "v", no leading zeros (in the
// numbers nor in numeric pre-release identifiers), at most
// MaxVersionLength bytes.
func ParseVersion(v string) (*version.Version, error) {
	if err := VersionLimit.Check(v); err != nil {
		return nil, err
	}
	if strings.HasPrefix(v, "v") || strings.HasPrefix(v, "V") {
		return nil, Errorf(Invalid, "invalid version %q: drop the leading \"v\" (use %q)", v, v[1:])
	}
	if !semverShape.MatchString(v) {
		return nil, Errorf(Invalid, "invalid version %q: want MAJOR.MINOR.PATCH[-prerelease][+build], e.g. 1.2.3 or 1.2.3-rc.1, with no leading zeros in numbers", v)
	}
	parsed, err := version.NewSemver(v)
	if err != nil {
		// The shape is right, so a number overflowed (the library's own
		// words would be strconv's).
		return nil, Errorf(Invalid, "invalid version %q: a number in it is too large; MAJOR, MINOR and PATCH must each fit in 64 bits, as the clients read them", v)
	}
	return parsed, nil
}

// VersionPrecedence returns the part of a canonical version that decides
// its precedence: the version without its "+build" metadata. Terraform and
// OpenTofu ignore build metadata when they compare versions, so two
// versions of one package with the same precedence could not be told apart
// by a constraint; the stores refuse the second one.
func VersionPrecedence(v string) string {
	core, _, _ := strings.Cut(v, "+")
	return core
}

// SamePrecedence returns the first stored version (read from each element
// by version) whose precedence equals that of v.
func SamePrecedence[T any](v string, stored []T, version func(T) string) (string, bool) {
	core := VersionPrecedence(v)
	for _, s := range stored {
		if sv := version(s); VersionPrecedence(sv) == core {
			return sv, true
		}
	}
	return "", false
}

// PrecedenceConflict is the error for a new version whose precedence equals
// that of the stored version existing (what names the package, such as
// "provider acme/cloud").
func PrecedenceConflict(what, v, existing string) error {
	if v == existing {
		return Errorf(Conflict, "%s version %s exists already; published versions are immutable", what, v)
	}
	return Errorf(Conflict, "%s version %s has the same precedence as the published version %s: "+
		"Terraform and OpenTofu ignore build metadata (+...) when comparing versions, so the two could not be told apart; "+
		"published versions are immutable, so publish a new version number instead", what, v, existing)
}

var platformPart = regexp.MustCompile(`^[a-z0-9]{1,32}$`)

// ValidatePlatform checks an OS or architecture keyword (e.g. "linux", "amd64").
func ValidatePlatform(os, arch string) error {
	if !platformPart.MatchString(os) {
		return Errorf(Invalid, "invalid operating system %s", quote(os))
	}
	if !platformPart.MatchString(arch) {
		return Errorf(Invalid, "invalid architecture %s", quote(arch))
	}
	return nil
}

// SortNewestFirst orders vs, provider or module versions, by descending
// semver precedence of the version that versionOf reads from each element.
// Versions that do not parse (none should be stored) sort last, by name.
// Each version is parsed once and the comparisons of versions without a
// pre-release compare numbers (go-version's Compare formats both versions
// on each call); the elements are moved once, after sorting their keys.
func SortNewestFirst[T any](vs []T, versionOf func(T) string) {
	type key struct {
		i      int
		name   string
		parsed *version.Version // nil: does not parse
		segs   []int64
		pre    bool
	}
	keys := make([]key, len(vs))
	backing := make([]int64, 3*len(vs)) // the segments of plain versions
	for i, v := range vs {
		k := key{i: i, name: versionOf(v)}
		if segs, ok := plainVersion(k.name, backing[3*i:3*i:3*i+3]); ok {
			k.parsed, k.segs = plainParsed, segs
		} else if p, err := version.NewSemver(k.name); err == nil {
			k.parsed, k.segs, k.pre = p, p.Segments64(), p.Prerelease() != ""
		}
		keys[i] = k
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		switch {
		case a.parsed == nil && b.parsed == nil:
			return strings.Compare(a.name, b.name)
		case a.parsed == nil:
			return 1
		case b.parsed == nil:
			return -1
		}
		for i := range max(len(a.segs), len(b.segs)) {
			var x, y int64
			if i < len(a.segs) {
				x = a.segs[i]
			}
			if i < len(b.segs) {
				y = b.segs[i]
			}
			if x != y {
				return cmp.Compare(y, x)
			}
		}
		switch {
		case a.pre && b.pre:
			return b.parsed.Compare(a.parsed)
		case a.pre:
			return 1 // a pre-release precedes its release
		case b.pre:
			return -1
		}
		return 0
	})
	if slices.IsSortedFunc(keys, func(a, b key) int { return cmp.Compare(a.i, b.i) }) {
		return
	}
	sorted := make([]T, len(vs))
	for i, k := range keys {
		sorted[i] = vs[k.i]
	}
	copy(vs, sorted)
}

// plainParsed marks, in SortNewestFirst, a version plainVersion parsed.
var plainParsed = &version.Version{}

// plainVersion parses the common shape of a version, MAJOR.MINOR.PATCH in
// decimal without leading zeros or anything else, appending its numbers
// to segs without allocating; ok is false for any other string, which
// go-version then parses.
func plainVersion(v string, segs []int64) (_ []int64, ok bool) {
	for part := range 3 {
		n, digits := int64(0), 0
		for digits < len(v) && v[digits] >= '0' && v[digits] <= '9' {
			if digits == 18 {
				return nil, false
			}
			n = n*10 + int64(v[digits]-'0')
			digits++
		}
		if digits == 0 || digits > 1 && v[0] == '0' {
			return nil, false
		}
		segs = append(segs, n)
		v = v[digits:]
		switch {
		case part < 2 && len(v) > 0 && v[0] == '.':
			v = v[1:]
		case part < 2 || len(v) > 0:
			return nil, false
		}
	}
	return segs, true
}

// CheckDigest accepts a SHA-256 digest as Trove names blobs and writes
// them in SHA256SUMS: exactly 64 lower-case hex digits, so that a digest
// can never name a path outside a blob store.
func CheckDigest(digest string) error {
	if len(digest) != 64 {
		return Errorf(Invalid, "invalid blob digest %.80q: want 64 lower-case hex digits of a SHA-256", digest)
	}
	for i := range len(digest) {
		if c := digest[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return Errorf(Invalid, "invalid blob digest %.80q: want 64 lower-case hex digits of a SHA-256", digest)
		}
	}
	return nil
}
