package gitsource

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
)

// credentials are the secrets of a source, opened for one sync.
type credentials struct {
	Password string `json:"password,omitempty"` // basic auth: password or token
	SSHKey   string `json:"ssh_key,omitempty"`  // ssh: a private key (OpenSSH or PEM)
	Webhook  string `json:"webhook_secret"`     // verifies push webhooks
}

// remoteTag is a tag the repository lists and the commit it names.
type remoteTag struct{ Tag, Commit string }

// gitRunner runs git against one source in a private directory, with
// nothing of the server's git configuration and only network transports.
type gitRunner struct {
	dir      string // private: HOME, ssh key, known_hosts, checkouts
	url      string
	env      []string
	maxBytes int64 // what the checkouts of the directory may take on disk
}

// allowedProtocols are the only transports git may use (GIT_ALLOW_PROTOCOL):
// never file, ext or fd, whatever the URL or a redirect says.
const allowedProtocols = "http:https:git:ssh"

// newRunner prepares dir for syncing src with creds.
func newRunner(dir string, src registry.GitSource, p pin, creds credentials, maxBytes int64) (*gitRunner, error) {
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	config := [][2]string{
		{"credential.helper", ""},
		{"core.hooksPath", os.DevNull},
		{"core.fsmonitor", "false"},
		{"core.askPass", ""},
		{"http.followRedirects", "false"},
		{"transfer.fsckObjects", "true"},
		{"fetch.recurseSubmodules", "false"},
		{"submodule.recurse", "false"},
		{"protocol.allow", "never"},
		{"protocol.http.allow", "always"},
		{"protocol.https.allow", "always"},
		{"protocol.git.allow", "always"},
		{"protocol.ssh.allow", "always"},
		{"init.defaultBranch", "main"},
		{"advice.detachedHead", "false"},
		{"gc.auto", "0"},
	}
	switch src.Auth {
	case registry.GitAuthBasic:
		token := base64.StdEncoding.EncodeToString([]byte(src.Username + ":" + creds.Password))
		config = append(config, [2]string{"http.extraHeader", "Authorization: Basic " + token})
	case registry.GitAuthSSH:
		keyFile := filepath.Join(dir, "ssh-key")
		key := creds.SSHKey
		if !strings.HasSuffix(key, "\n") {
			key += "\n"
		}
		if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
			return nil, err
		}
		known := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(known, []byte(src.KnownHosts+"\n"), 0o600); err != nil {
			return nil, err
		}
		config = append(config, [2]string{"core.sshCommand", "ssh -F " + os.DevNull + " -i " + shellQuote(keyFile) +
			" -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + shellQuote(known) +
			" -o ProxyCommand=none -o ProxyJump=none -o PermitLocalCommand=no -o ClearAllForwardings=yes" + p.sshOpts})
	default:
		config = append(config, [2]string{"core.sshCommand", "ssh -F " + os.DevNull + " -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + os.DevNull +
			" -o ProxyCommand=none -o ProxyJump=none -o PermitLocalCommand=no" + p.sshOpts})
	}
	config = append(config, p.config...)
	// The configuration travels in the environment (GIT_CONFIG_*), never
	// in the arguments, which other local users can read in ps.
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_ALLOW_PROTOCOL=" + allowedProtocols,
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_SSH_VARIANT=ssh",
		"LC_ALL=C",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(config)),
	}
	for i, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return &gitRunner{dir: dir, url: p.url, env: env, maxBytes: maxBytes}, nil
}

// shellQuote quotes s for the shell git runs core.sshCommand with.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// maxListBytes bounds what ls-remote may print; maxTags the tags listed.
const (
	maxListBytes = 8 << 20
	maxTags      = 10000
)

// run runs git with args in dir (the runner's directory if ""), stdout
// capped at limit bytes, and fails with git's first line of error with
// every credential removed. While it runs, the runner's directory may
// not grow beyond maxBytes.
func (g *gitRunner) run(ctx context.Context, dir string, limit int64, args ...string) ([]byte, error) {
	if dir == "" {
		dir = g.dir
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = g.env
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
	var stdout capped
	stdout.limit = limit
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limitedWriter{w: &stderr, n: 64 << 10}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, registry.Errorf(registry.Unavailable, "git sources need the git command, which is not installed on this Trove's PATH")
		}
		return nil, err
	}
	var tooBig atomic.Bool
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if dirSize(g.dir) > g.maxBytes {
					tooBig.Store(true)
					cancel(errTooBig)
					return
				}
			}
		}
	}()
	err := cmd.Wait()
	cancel(nil)
	<-watchDone
	if tooBig.Load() || dirSize(g.dir) > g.maxBytes {
		return nil, registry.Errorf(registry.TooLarge, "the repository takes more than %d bytes on disk, the limit of a git source (--git-max-repo-bytes)", g.maxBytes)
	}
	if stdout.over {
		return nil, registry.Errorf(registry.TooLarge, "git %s printed more than %d bytes", args[0], limit)
	}
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
			return nil, registry.Errorf(registry.Unavailable, "git %s did not finish in time", args[0])
		}
		return nil, classify(args[0], g.scrub(stderr.String()), g.scrub(firstLines(stderr.String())))
	}
	return stdout.Bytes(), nil
}

var errTooBig = errors.New("repository too large")

// classify turns git's error (all of stderr, and msg, its first lines)
// into one that says what to do.
func classify(op, stderr, msg string) error {
	lower := strings.ToLower(stderr)
	switch {
	case strings.Contains(lower, "could not read username") || strings.Contains(lower, "authentication failed") ||
		strings.Contains(lower, "returned error: 401") || strings.Contains(lower, "returned error: 403"):
		return registry.Errorf(registry.Invalid, "git %s: authentication failed: the repository refused Trove's credentials (or needs some): check the user name and token of the git source, then add it again (%s)", op, msg)
	case strings.Contains(lower, "permission denied (publickey"):
		return registry.Errorf(registry.Invalid, "git %s: authentication failed: the SSH server refused the git source's key (%s)", op, msg)
	case strings.Contains(lower, "host key verification failed") || strings.Contains(lower, "remote host identification has changed"):
		return registry.Errorf(registry.Invalid, "git %s: the SSH server's host key is not in the git source's known_hosts (%s)", op, msg)
	case strings.Contains(lower, "could not resolve host") || strings.Contains(lower, "connection refused") ||
		strings.Contains(lower, "unable to connect") || strings.Contains(lower, "timed out"):
		return registry.Errorf(registry.Unavailable, "git %s: the repository is unreachable (%s)", op, msg)
	}
	return registry.Errorf(registry.Invalid, "git %s failed: %s", op, msg)
}

// scrub removes what could be a credential from git's output.
func (g *gitRunner) scrub(s string) string {
	for _, kv := range g.env {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GIT_CONFIG_VALUE_") && strings.HasPrefix(v, "Authorization:") {
			s = strings.ReplaceAll(s, v, "Authorization: [redacted]")
			s = strings.ReplaceAll(s, strings.TrimPrefix(v, "Authorization: Basic "), "[redacted]")
		}
	}
	return s
}

// firstLines returns the meaningful error lines of git's stderr, at most
// three, joined.
func firstLines(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") || strings.HasPrefix(line, "@") {
			continue
		}
		out = append(out, line)
		if len(out) == 3 {
			break
		}
	}
	if len(out) == 0 {
		return "no error message"
	}
	return truncate(strings.Join(out, "; "), 600)
}

// listTags lists the repository's tags with the commits they name
// (annotated tags peeled).
func (g *gitRunner) listTags(ctx context.Context) ([]remoteTag, error) {
	out, err := g.run(ctx, "", maxListBytes, "ls-remote", "--tags", "--end-of-options", g.url)
	if err != nil {
		return nil, err
	}
	commits := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		oid, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || !isObjectID(oid) {
			continue
		}
		name, ok := strings.CutPrefix(ref, "refs/tags/")
		if !ok {
			continue
		}
		if base, peeled := strings.CutSuffix(name, "^{}"); peeled {
			commits[base] = oid // the commit an annotated tag names
		} else if _, seen := commits[name]; !seen {
			commits[name] = oid
		}
	}
	if len(commits) > maxTags {
		return nil, registry.Errorf(registry.TooLarge, "the repository has %d tags, more than the %d a git source reads", len(commits), maxTags)
	}
	tags := make([]remoteTag, 0, len(commits))
	for t, c := range commits {
		tags = append(tags, remoteTag{Tag: t, Commit: c})
	}
	slices.SortFunc(tags, func(a, b remoteTag) int { return strings.Compare(a.Tag, b.Tag) })
	return tags, nil
}

// checkout fetches tag (only its commit, no history) into a new working
// tree under the runner's directory, as the local tag localTag, checks
// that it names commit, and returns the working tree.
func (g *gitRunner) checkout(ctx context.Context, tag, localTag, commit string) (string, error) {
	wt, err := os.MkdirTemp(g.dir, "checkout-")
	if err != nil {
		return "", err
	}
	if _, err := g.run(ctx, wt, 1<<20, "init", "-q"); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, wt, 1<<20, "fetch", "-q", "--no-tags", "--no-recurse-submodules", "--depth=1", "--end-of-options", g.url,
		"+refs/tags/"+tag+":refs/tags/"+localTag); err != nil {
		return "", err
	}
	got, err := g.run(ctx, wt, 1<<10, "rev-parse", "--verify", "--end-of-options", "refs/tags/"+localTag+"^{commit}")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(string(got)) != commit {
		return "", registry.Errorf(registry.Conflict, "tag %s moved while Trove read it (now %s); sync again", tag, short(strings.TrimSpace(string(got))))
	}
	if _, err := g.run(ctx, wt, 1<<20, "-c", "core.symlinks=true", "checkout", "-q", "--detach", "refs/tags/"+localTag); err != nil {
		return "", err
	}
	return wt, nil
}

func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func short(commit string) string { return commit[:min(12, len(commit))] }

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// capped keeps at most limit bytes and notes an overflow.
type capped struct {
	bytes.Buffer
	limit int64
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(c.Len()+len(p)) > c.limit {
		c.over = true
		return 0, errTooBig
	}
	return c.Buffer.Write(p)
}

// limitedWriter keeps the first n bytes and discards the rest.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}
