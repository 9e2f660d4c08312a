package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/registry"
)

// maxLocation bounds an upstream's X-Terraform-Get value.
const maxLocation = 4096

// moduleSource is where an upstream's download answer says a module
// version's files are: a git repository at a ref, or an archive over
// https; in both cases optionally a subdirectory of it.
type moduleSource struct {
	git      bool
	url      *url.URL // without the ref, checksum and archive parameters
	ref      string   // git: the ref to fetch ("" for the default branch)
	subdir   string   // slash-separated, clean, relative; "" for the root
	checksum string   // archive: the SHA-256 the location demands, hex, "" if none
}

// String describes the source for logs and origins, without its query.
func (s moduleSource) String() string {
	out := redact(s.url)
	if s.subdir != "" {
		out += "//" + s.subdir
	}
	if s.git {
		out = "git::" + out
		if s.ref != "" {
			out += "?ref=" + s.ref
		}
	}
	return out
}

// gitRef is what Trove accepts as a ref: a tag, branch or commit name
// without anything git or a shell could read as an option or a range.
var gitRef = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+-]{0,199}$`)

// parseModuleSource reads an upstream's X-Terraform-Get value (relative
// to the download URL doc it answered) the way the clients' go-getter
// does for the forms public registries use: "git::https://host/repo?ref=v1"
// and "https://host/file.tar.gz" (or .tgz, .zip, or ?archive=...), each
// with an optional "//subdir". Anything else is refused: other getters
// (s3::, gcs::, hg::), ssh, git://, file:// and plain http (unless the
// upstream itself is on plain http), credentials in the URL, a subdir or
// ref that is not a plain relative name.
func parseModuleSource(doc *url.URL, raw string, allowHTTP bool) (moduleSource, error) {
	var s moduleSource
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return s, errors.New("the download answer names no location (X-Terraform-Get)")
	case len(raw) > maxLocation:
		return s, fmt.Errorf("the location is longer than %d bytes", maxLocation)
	case strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return s, errors.New("the location contains control characters")
	}
	if getter, rest, ok := strings.Cut(raw, "::"); ok && !strings.Contains(getter, "/") && !strings.Contains(getter, ":") {
		if getter != "git" {
			return s, fmt.Errorf("the location %q uses the %s getter: Trove mirrors git:: and https archive sources only", elide(raw), getter)
		}
		s.git, raw = true, rest
	}
	// go-getter's forge shorthands: "github.com/owner/repo?ref=v1" is a
	// git repository over https.
	if !s.git {
		for _, forge := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
			if strings.HasPrefix(raw, forge) {
				s.git, raw = true, "https://"+raw
				break
			}
		}
	}
	// The subdirectory: "//" after the scheme's "://" (go-getter's rule).
	skip := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		skip = i + 3
	}
	if i := strings.Index(raw[skip:], "//"); i >= 0 {
		i += skip
		sub, query, _ := strings.Cut(raw[i+2:], "?")
		raw = raw[:i]
		if query != "" {
			raw += "?" + query
		}
		s.subdir = sub
	}
	ref, err := url.Parse(raw)
	if err != nil {
		return s, fmt.Errorf("the location %q does not parse: %v", elide(raw), err)
	}
	u := doc.ResolveReference(ref)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	case u.Scheme == "":
		return s, fmt.Errorf("the location %q is not a URL", elide(raw))
	default:
		return s, fmt.Errorf("the location %q is a %s URL: Trove fetches mirrored modules over https only", elide(redact(u)), u.Scheme)
	}
	if u.User != nil {
		return s, fmt.Errorf("the location %q carries credentials: Trove mirrors public modules only", elide(redact(u)))
	}
	if u.Hostname() == "" {
		return s, fmt.Errorf("the location %q names no host", elide(redact(u)))
	}
	if s.subdir != "" {
		if c := path.Clean(s.subdir); c != strings.TrimSuffix(s.subdir, "/") || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(c, `\`) {
			return s, fmt.Errorf("the location's subdirectory %q is not a clean relative path", elide(s.subdir))
		}
		s.subdir = path.Clean(s.subdir)
		if s.subdir == "." {
			s.subdir = ""
		}
	}
	q := u.Query()
	if s.git {
		s.ref = q.Get("ref")
		q.Del("ref")
		q.Del("depth")
		if s.ref != "" && (!gitRef.MatchString(s.ref) || strings.Contains(s.ref, "..")) {
			return s, fmt.Errorf("the location's ref %q is not a tag, branch or commit name Trove accepts", elide(s.ref))
		}
	} else {
		format := q.Get("archive")
		q.Del("archive")
		if c := q.Get("checksum"); c != "" {
			algo, sum, _ := strings.Cut(c, ":")
			if algo != "sha256" || registry.CheckDigest(strings.ToLower(sum)) != nil {
				return s, fmt.Errorf("the location's checksum %q is not sha256:<64 hex digits>, the only kind Trove checks", elide(c))
			}
			s.checksum = strings.ToLower(sum)
			q.Del("checksum")
		}
		p := strings.ToLower(u.Path)
		switch {
		case format == "tar.gz" || format == "tgz" || format == "zip":
		case format != "":
			return s, fmt.Errorf("the location's archive format %q is not tar.gz or zip", elide(format))
		case strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz") || strings.HasSuffix(p, ".zip"):
		default:
			return s, fmt.Errorf("the location %q is neither a git:: source nor a .tar.gz or .zip archive", elide(redact(u)))
		}
		if s.subdir != "" {
			return s, fmt.Errorf("the location %q names a subdirectory of an archive, which Trove does not mirror", elide(redact(u)))
		}
	}
	// Re-encode the query only when a parameter of the getter's was
	// taken out: a signed URL's query stays byte for byte.
	for _, p := range []string{"ref", "depth", "archive", "checksum"} {
		if u.Query().Has(p) {
			u.RawQuery = q.Encode()
			break
		}
	}
	u.Fragment = ""
	s.url = u
	return s, nil
}

// elide shortens s for an error message.
func elide(s string) string { return registry.Elide(s) }

// hostGuard decides which addresses a module source may be fetched from
// (netguard, Trove's one SSRF guard): public ones only, unless the
// upstream itself was configured on a non-public address (a registry on
// the internal network or loopback), whose modules may then live there
// too.
type hostGuard = netguard.Guard

// guardFor returns the guard of an upstream's module sources.
func guardFor(allowPrivate bool) hostGuard { return netguard.Guard{AllowPrivate: allowPrivate} }

// privateUpstream reports whether the upstream's configured service URL
// is on a non-public address (loopback, a private network).
func privateUpstream(ctx context.Context, cfg registry.MirrorUpstream) bool {
	if cfg.ServiceURL == "" {
		return false
	}
	u, err := url.Parse(cfg.ServiceURL)
	if err != nil || u.Hostname() == "" {
		return false
	}
	if netguard.CheckHost(u.Hostname()) != nil {
		return true // a literal non-public address, localhost
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return false
	}
	return slices.ContainsFunc(addrs, func(a netip.Addr) bool { return !netguard.Public(a) })
}

// archiveClient returns the HTTP client archive downloads use: the
// upstream's TLS settings, the guard on every connection, https-only
// redirects (plain http only when the upstream is on it).
func archiveClient(u *upstream, g hostGuard) *http.Client {
	var base *http.Transport
	if t, ok := u.client.Transport.(*userAgentTransport); ok {
		if h, ok := t.next.(*http.Transport); ok {
			base = h.Clone()
		}
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	base.Proxy = nil // the guard judges the address actually dialled
	base.DialContext = g.Dialer(10 * time.Second).DialContext
	return &http.Client{
		Transport: &userAgentTransport{next: base, agent: userAgent(u.client)},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if req.URL.Scheme != "https" && !u.allowHTTP {
				return fmt.Errorf("refusing a redirect to %s: modules are fetched over https only", req.URL.Scheme)
			}
			return nil
		},
	}
}

// gitCheckout is a module version's files fetched from git.
type gitCheckout struct {
	dir    string   // the module directory (the subdirectory if any)
	files  []string // tracked files under dir, relative to it
	commit string
}

// fetchGit fetches src (a git source) into work, a fresh empty directory:
// one commit, the ref's, without tags or history, with git isolated from
// the host's configuration, credentials, hooks and filters, pinned to an
// address the guard allows, within timeout and maxBytes on disk.
func fetchGit(ctx context.Context, src moduleSource, work string, g hostGuard, timeout time.Duration, maxBytes int64) (gitCheckout, error) {
	var co gitCheckout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr, err := g.Resolve(ctx, src.url.Hostname())
	if err != nil {
		return co, err
	}
	port := src.url.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[src.url.Scheme]
	}
	home := filepath.Join(work, "home")
	repo := filepath.Join(work, "repo")
	if err := os.Mkdir(home, 0o700); err != nil {
		return co, err
	}
	protocols := "https"
	if src.url.Scheme == "http" {
		protocols = "https:http"
	}
	env := []string{
		"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false", "GIT_ALLOW_PROTOCOL=" + protocols,
		"GIT_LFS_SKIP_SMUDGE=1", "GIT_NO_REPLACE_OBJECTS=1",
	}
	common := []string{
		"-c", "core.hooksPath=/dev/null", "-c", "core.symlinks=true", "-c", "core.fsmonitor=false",
		"-c", "protocol.allow=never", "-c", "protocol." + src.url.Scheme + ".allow=always",
		"-c", "http.followRedirects=false", "-c", "credential.helper=",
		"-c", "http.curloptResolve=" + netguard.CurlResolve(src.url.Hostname(), port, addr),
		"-c", "submodule.recurse=false", "-c", "advice.detachedHead=false",
	}
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", append(append([]string{"-C", dir}, common...), args...)...)
		cmd.Env = env
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &limitedBuffer{b: &stdout, n: 16 << 20}, &limitedBuffer{b: &stderr, n: 8 << 10}
		err := cmd.Run()
		if errors.Is(err, exec.ErrNotFound) {
			return nil, errors.New("mirroring a git-hosted module needs the git command, which is not installed on the Trove server")
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		if err != nil {
			return nil, fmt.Errorf("git %s failed: %s", args[0], firstLine(stderr.String()+" "+err.Error()))
		}
		return stdout.Bytes(), nil
	}
	if _, err := run(work, "init", "-q", repo); err != nil {
		return co, err
	}
	ref := src.ref
	if ref == "" {
		ref = "HEAD"
	}
	// Watch the size on disk: git has no limit of its own on a fetch.
	tooLarge := make(chan struct{})
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-t.C:
				if dirSize(repo, maxBytes) > maxBytes {
					close(tooLarge)
					cancel()
					return
				}
			}
		}
	}()
	defer func() { close(stopWatch); <-watched }()
	fetchURL := *src.url
	_, err = run(repo, "fetch", "--quiet", "--depth=1", "--no-tags", "--no-recurse-submodules", "--", fetchURL.String(), ref)
	if err == nil {
		_, err = run(repo, "checkout", "--quiet", "--detach", "FETCH_HEAD")
	}
	tooBig := registry.Errorf(registry.TooLarge, "the git repository takes more than %d bytes at ref %q", maxBytes, src.ref)
	select {
	case <-tooLarge:
		return co, tooBig
	default:
	}
	if err == nil && dirSize(repo, maxBytes) > maxBytes { // a fetch faster than the watch
		return co, tooBig
	}
	if err != nil {
		return co, err
	}
	out, err := run(repo, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return co, err
	}
	co.commit = strings.TrimSpace(string(out))
	co.dir = repo
	if src.subdir != "" {
		co.dir = filepath.Join(repo, filepath.FromSlash(src.subdir))
		if fi, err := os.Lstat(co.dir); err != nil || !fi.IsDir() {
			return co, registry.Errorf(registry.UpstreamInvalid, "the repository has no directory %q at ref %q", src.subdir, src.ref)
		}
	}
	list, err := run(co.dir, "ls-files", "-z", "--stage", "--", ".")
	if err != nil {
		return co, err
	}
	for _, rec := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || strings.HasPrefix(meta, "160000 ") { // a submodule
			continue
		}
		co.files = append(co.files, name)
	}
	slices.Sort(co.files)
	co.files = slices.Compact(co.files)
	if len(co.files) == 0 {
		return co, registry.Errorf(registry.UpstreamInvalid, "the repository has no files at ref %q", src.ref)
	}
	return co, nil
}

// dirSize returns the bytes of the files under dir, stopping once it
// passes limit.
func dirSize(dir string, limit int64) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		if n > limit {
			return filepath.SkipAll
		}
		return nil
	})
	return n
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return registry.Elide(line)
}

// packCheckout packs a git checkout deterministically, as a publish from
// git packs it (modules.PackArchiveFiles), into w.
func packCheckout(w io.Writer, co gitCheckout) error {
	_, err := modules.PackArchiveFiles(w, co.dir, co.files)
	return err
}
