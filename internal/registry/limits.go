package registry

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on the names and the free text a request can carry, defined once
// here. The management API enforces them before it stores anything (400
// with a message naming the field and its limit), the Go client (and with
// it the CLI) checks them before it sends a request, and the Terraform
// provider's schema before a plan. Lengths count bytes: names are ASCII by
// their grammar, so for names a byte is a character; free text in UTF-8
// takes up to four bytes a character.
const (
	// MaxNamespaceLength bounds a namespace name. The provider address
	// grammar sets no length; 64 is the limit the module address grammar
	// gives the same name (a namespace holds both).
	MaxNamespaceLength = 64
	// MaxProviderTypeLength bounds a provider type.
	MaxProviderTypeLength = 64
	// MaxModuleNameLength and MaxModuleSystemLength are the limits of the
	// module address grammar the clients apply.
	MaxModuleNameLength   = 64
	MaxModuleSystemLength = 64
	// MaxUserNameLength bounds a user name (see ParseUserName).
	MaxUserNameLength = 64
	// MaxVersionLength bounds a version string, pre-release and build
	// metadata included.
	MaxVersionLength = 128
	// MaxDescriptionLength bounds the description of a namespace and of a
	// token.
	MaxDescriptionLength = 1024
	// MaxOriginLength bounds the origin recorded with a module version
	// (one line, e.g. "git tag v1.2.0, commit 0123abc").
	MaxOriginLength = 512
	// MaxPasswordLength bounds a password (the argon2id input).
	MaxPasswordLength = 512
	// MaxSearchQueryLength bounds a module search query.
	MaxSearchQueryLength = 256
	// MaxTokenIDLength bounds a token ID in a request ("tok_" and 16 hex
	// digits today).
	MaxTokenIDLength = 64
	// MaxKeyIDLength bounds a signing key ID in a request (16 hex digits;
	// 40 leaves room for a fingerprint).
	MaxKeyIDLength = 40
	// MaxAuditFilterLength bounds the actor and action filters of an
	// audit log query.
	MaxAuditFilterLength = 128
	// MaxHostLength bounds the host name of a mirror upstream registry,
	// port included (a DNS name has at most 253 bytes, ":65535" six more).
	MaxHostLength = 259
	// MaxServiceURLLength bounds the service URL of a mirror upstream.
	MaxServiceURLLength = 2048
	// MaxCACertificatesLength bounds the PEM certificates of a mirror
	// upstream (a few dozen certificates).
	MaxCACertificatesLength = 64 << 10
	// MaxMirrorProviderLength bounds the provider pattern of a mirror
	// rule: a namespace, "/" and a type.
	MaxMirrorProviderLength = MaxNamespaceLength + 1 + MaxProviderTypeLength
	// MaxVersionConstraintLength bounds the version constraint of a
	// mirror rule.
	MaxVersionConstraintLength = 256
	// MaxMirrorRules bounds the rules of one mirror upstream, which are
	// matched on every mirror request.
	MaxMirrorRules = 100
	// MaxTokenNamespaces bounds the namespaces one token is bound to,
	// each of which costs checks on every creation.
	MaxTokenNamespaces = 100
	// MaxProviderDocsBytes bounds a provider version's documentation
	// archive as uploaded (compressed). The tfplugindocs tree of the
	// largest public providers packs to a few MiB.
	MaxProviderDocsBytes = 32 << 20
	// MaxArchivePathLength and MaxArchiveNameLength bound the entry
	// names of a provider zip or a module archive: a component longer
	// than 255 bytes is more than Linux, macOS or Windows file systems
	// take, and a whole name stays well inside every system's path
	// limit, so what is published can be unpacked by every client.
	MaxArchivePathLength = 1024
	MaxArchiveNameLength = 255
)

// CheckArchivePath refuses an archive entry name that a client could not
// unpack for its length: over MaxArchivePathLength bytes, or with a
// "/"-separated component over MaxArchiveNameLength.
func CheckArchivePath(name string) error {
	if len(name) > MaxArchivePathLength {
		return Errorf(Invalid, "archive entry %q is %d bytes long; an entry's path may have at most %d", Elide(name), len(name), MaxArchivePathLength)
	}
	for rest := name; rest != ""; {
		part, after, _ := strings.Cut(rest, "/")
		if len(part) > MaxArchiveNameLength {
			return Errorf(Invalid, "archive entry %q has a %d-byte name %q; a file or directory name may have at most %d bytes (what file systems take)",
				Elide(name), len(part), Elide(part), MaxArchiveNameLength)
		}
		rest = after
	}
	return nil
}

// Limit is the longest value a field of a request may hold.
type Limit struct {
	Field string // how messages name the field, e.g. "namespace name"
	Max   int    // bytes
}

// Check returns CheckLength(l.Field, value, l.Max).
func (l Limit) Check(value string) error { return CheckLength(l.Field, value, l.Max) }

// CheckText returns CheckText(l.Field, value, l.Max): the check of a free
// text field such as a description.
func (l Limit) CheckText(value string) error { return CheckText(l.Field, value, l.Max) }

// The limits of the fields a request can carry, each with the name its
// messages use. The Parse functions of this package check the names, the
// API and the client (apispec) the rest.
var (
	NamespaceLimit    = Limit{"namespace name", MaxNamespaceLength}
	ProviderTypeLimit = Limit{"provider type", MaxProviderTypeLength}
	ModuleNameLimit   = Limit{"module name", MaxModuleNameLength}
	ModuleSystemLimit = Limit{"module system", MaxModuleSystemLength}
	UserNameLimit     = Limit{"user name", MaxUserNameLength}
	VersionLimit      = Limit{"version", MaxVersionLength}
	DescriptionLimit  = Limit{"description", MaxDescriptionLength}
	OriginLimit       = Limit{"origin", MaxOriginLength}
	PasswordLimit     = Limit{"password", MaxPasswordLength}
	SearchQueryLimit  = Limit{"search query", MaxSearchQueryLength}
	TokenIDLimit      = Limit{"token ID", MaxTokenIDLength}
	KeyIDLimit        = Limit{"key ID", MaxKeyIDLength}
	AuditActorLimit   = Limit{"actor", MaxAuditFilterLength}
	AuditActionLimit  = Limit{"action", MaxAuditFilterLength}

	HostLimit              = Limit{"host", MaxHostLength}
	ServiceURLLimit        = Limit{"service URL", MaxServiceURLLength}
	CACertificatesLimit    = Limit{"CA certificates", MaxCACertificatesLength}
	MirrorProviderLimit    = Limit{"mirror rule provider", MaxMirrorProviderLength}
	VersionConstraintLimit = Limit{"version constraint", MaxVersionConstraintLength}
	MinAgeLimit            = Limit{"min age", 32}
)

// CheckLines returns CheckLines(l.Field, value, l.Max): the check of a
// multi-line text field such as PEM certificates.
func (l Limit) CheckLines(value string) error { return CheckLines(l.Field, value, l.Max) }

// CheckLength returns an Invalid error that names field and the limit when
// value is longer than max bytes, and nil otherwise. Every limit above is
// checked with it, so that the API, the client and the provider say the
// same thing.
func CheckLength(field, value string, max int) error {
	if len(value) > max {
		return &Error{Kind: Invalid, Message: fmt.Sprintf("%s is too long: %d bytes, the limit is %d", field, len(value), max)}
	}
	return nil
}

// CheckText is the one check of a free-text field (a description, an
// origin): at most max bytes (CheckLength), valid UTF-8, and one line
// without control characters: no C0 control (newline and tab included),
// no DEL and no C1 control, which a terminal listing the text would
// interpret. The API, the client, the provider and the CLI apply it, so
// all refuse the same text with the same message.
func CheckText(field, value string, max int) error {
	if err := CheckLength(field, value, max); err != nil {
		return err
	}
	if !utf8.ValidString(value) {
		return &Error{Kind: Invalid, Message: field + " is not valid UTF-8: write it as UTF-8 text"}
	}
	if i := strings.IndexFunc(value, IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(value[i:])
		return &Error{Kind: Invalid, Message: fmt.Sprintf("%s contains the control character %U at byte %d: write it as one line of text, without newlines, tabs or escape sequences", field, r, i)}
	}
	return nil
}

// CheckLines is CheckText for text of several lines (PEM certificates):
// line breaks (LF, CR) are allowed, every other control character is
// refused as CheckText refuses it.
func CheckLines(field, value string, max int) error {
	if err := CheckLength(field, value, max); err != nil {
		return err
	}
	if !utf8.ValidString(value) {
		return &Error{Kind: Invalid, Message: field + " is not valid UTF-8: write it as UTF-8 text"}
	}
	if i := strings.IndexFunc(value, func(r rune) bool { return r != '\n' && r != '\r' && IsControl(r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(value[i:])
		return &Error{Kind: Invalid, Message: fmt.Sprintf("%s contains the control character %U at byte %d: write it as lines of text, without tabs or escape sequences", field, r, i)}
	}
	return nil
}

// IsControl reports whether r is a C0 control character (newline and tab
// included), DEL or a C1 control character.
func IsControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// maxQuoted bounds how much of a refused value an error message repeats.
const maxQuoted = 64

// quote returns s quoted for an error message, cut to maxQuoted bytes
// (with "..." after the quotes) so that a huge value does not make a huge
// message.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:maxQuoted])
}
