package registry

import (
	"net/url"
	"strings"
	"time"
	"unicode"
)

// GitSource makes a module's versions come from the semver tags of a Git
// repository (docs/modules.md#git-repositories-as-modules): every tag
// that names a version becomes an ordinary module version, packed from
// the tagged commit's Subdir.
type GitSource struct {
	Namespace, Name, System string
	// URL is the repository (see ParseGitURL); it never carries
	// credentials.
	URL string
	// Subdir is the module's directory in the repository, slash-separated
	// and relative ("" for the root; see ParseGitSubdir).
	Subdir string
	// TagPrefix is what a tag starts with before its version ("" for
	// tags such as v1.2.0; "network/" for network/v1.2.0).
	TagPrefix string
	// Auth is how Trove authenticates to the repository: GitAuthNone,
	// GitAuthBasic or GitAuthSSH.
	Auth string
	// Username is the basic-auth user name (GitAuthBasic) or the SSH
	// user when the URL names none.
	Username string
	// KnownHosts are the known_hosts lines of the SSH server (GitAuthSSH).
	KnownHosts string
	// SealedSecrets are the encrypted credentials and webhook secret;
	// only the git source syncer opens them.
	SealedSecrets []byte
	// PollInterval is how often the repository is polled; 0 means the
	// server's default, a negative value never (webhooks only).
	PollInterval time.Duration
	CreatedAt    time.Time
	CreatedBy    string
	// LastSyncAt is when the last sync ended (zero before the first),
	// LastError its failure ("" for success) and NextSyncAt when the
	// poller syncs next.
	LastSyncAt time.Time
	LastError  string
	NextSyncAt time.Time
}

// Authentication kinds of a git source.
const (
	GitAuthNone  = "none"
	GitAuthBasic = "basic"
	GitAuthSSH   = "ssh"
)

// GitTag is a tag of a git source that Trove took as a version: the
// commit it pointed to when first seen, which it must keep pointing to.
type GitTag struct {
	Tag, Version, Commit string
	SeenAt               time.Time
	// PublishedAt is when its version was published (zero while not yet,
	// e.g. after an archive Trove refused).
	PublishedAt time.Time
}

// Audit actions of git sources.
const (
	AuditGitSourceCreate   = "git_source.create"
	AuditGitSourceDelete   = "git_source.delete"
	AuditGitSourceSync     = "git_source.sync"
	AuditGitSourceTagMoved = "git_source.tag_moved" // a tag now names another commit: refused
)

// Limits of a git source.
const (
	MaxGitURLLength       = 2048
	MaxGitSubdirLength    = 512
	MaxGitTagPrefixLength = 128
	MaxGitCredentialBytes = 16 << 10
	MaxKnownHostsLength   = 16 << 10
	// MinGitPollInterval bounds how often a repository may be polled.
	MinGitPollInterval = time.Minute
)

// ParseGitURL checks the URL of a repository to take versions from and
// returns it. Accepted: https://, http://, git:// and ssh:// URLs, and
// the scp-like form user@host:path. Refused, because they run programs
// or read the server's own files: file:// and local paths, the
// "transport::address" form (ext::, fd::), anything that starts with "-"
// or whose host, user or path component does (an ssh option such as
// -oProxyCommand), user information in an http(s) URL (give credentials
// separately, they are kept encrypted), and control or space characters.
func ParseGitURL(raw string) (string, error) {
	if raw == "" {
		return "", Errorf(Invalid, "a git source needs the repository URL, e.g. https://git.example.com/acme/network.git")
	}
	if len(raw) > MaxGitURLLength {
		return "", Errorf(Invalid, "the repository URL is longer than %d bytes", MaxGitURLLength)
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return "", Errorf(Invalid, "the repository URL contains a space or control character")
		}
	}
	bad := func(why string) (string, error) {
		return "", Errorf(Invalid, "repository URL %q refused: %s; use https://, http://, git://, ssh:// or user@host:path", Elide(raw), why)
	}
	if strings.HasPrefix(raw, "-") {
		return bad("it starts with \"-\" (it would be read as an option)")
	}
	if strings.Contains(raw, "::") {
		return bad("the transport::address form (such as ext::) runs commands")
	}
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		// scp-like: [user@]host:path, with no "/" before the ":".
		hostPart, path, ok := strings.Cut(raw, ":")
		if !ok || hostPart == "" || strings.Contains(hostPart, "/") || path == "" {
			return bad("it is not a URL (a local path or file is not allowed)")
		}
		user, host, hasUser := strings.Cut(hostPart, "@")
		if !hasUser {
			host, user = user, ""
		}
		if host == "" || strings.HasPrefix(host, "-") || strings.HasPrefix(user, "-") || strings.HasPrefix(path, "-") {
			return bad("a host, user or path starting with \"-\" would be read as an ssh option")
		}
		return raw, nil
	}
	switch strings.ToLower(scheme) {
	case "https", "http", "git", "ssh":
	default:
		return bad("scheme " + scheme + " is not allowed")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return bad("it is not a valid URL with a host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return bad("it has a query or fragment")
	}
	if strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-") {
		return bad("a host or user starting with \"-\" would be read as an ssh option")
	}
	if _, hasPw := u.User.Password(); hasPw || (u.User != nil && u.Scheme != "ssh") {
		return bad("it carries user information; give the user name and token as credentials, which Trove keeps encrypted")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if strings.HasPrefix(seg, "-") {
			return bad("a path component starting with \"-\" could be read as an option")
		}
	}
	_ = rest
	return raw, nil
}

// ParseGitSubdir checks a module directory inside a repository: "" or
// "." for the root, else a relative slash-separated path without "..",
// empty or "." components, backslashes or control characters. It
// returns the path cleaned of a trailing "/" ("" for the root).
func ParseGitSubdir(dir string) (string, error) {
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || dir == "." {
		return "", nil
	}
	if len(dir) > MaxGitSubdirLength {
		return "", Errorf(Invalid, "the sub-directory is longer than %d bytes", MaxGitSubdirLength)
	}
	if strings.HasPrefix(dir, "/") || strings.ContainsRune(dir, '\\') {
		return "", Errorf(Invalid, "sub-directory %q must be a relative path with \"/\" separators, e.g. modules/network", Elide(dir))
	}
	for _, r := range dir {
		if unicode.IsControl(r) {
			return "", Errorf(Invalid, "the sub-directory contains a control character")
		}
	}
	for _, part := range strings.Split(dir, "/") {
		if part == "" || part == "." || part == ".." || part == ".git" {
			return "", Errorf(Invalid, "sub-directory %q may not contain empty, \".\", \"..\" or \".git\" components", Elide(dir))
		}
	}
	return dir, nil
}

// CheckGitTagPrefix checks a tag prefix: at most MaxGitTagPrefixLength
// bytes of printable characters without spaces.
func CheckGitTagPrefix(p string) error {
	if len(p) > MaxGitTagPrefixLength {
		return Errorf(Invalid, "the tag prefix is longer than %d bytes", MaxGitTagPrefixLength)
	}
	for _, r := range p {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '*' || r == '?' || r == '[' || r == '\\' {
			return Errorf(Invalid, "the tag prefix may not contain spaces, control characters or the patterns * ? [ \\")
		}
	}
	return nil
}

// GitTagVersion returns the module version a tag names, after prefix:
// "v1.2.0" and "1.2.0" both name 1.2.0 (one leading "v" is dropped),
// pre-release and build parts included. ok is false for a tag that
// names no version (it is ignored).
func GitTagVersion(tag, prefix string) (version string, ok bool) {
	rest, found := strings.CutPrefix(tag, prefix)
	if !found {
		return "", false
	}
	rest = strings.TrimPrefix(rest, "v")
	if rest == "" || len(rest) > MaxVersionLength {
		return "", false
	}
	if _, err := ParseVersion(rest); err != nil {
		return "", false
	}
	return rest, true
}
