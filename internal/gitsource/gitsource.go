// Package gitsource makes modules whose versions come from the semver
// tags of a Git repository (docs/modules.md#git-repositories-as-modules):
// it keeps each module's git source (URL, sub-directory, credentials
// sealed with the signing secret), lists the repository's tags, and
// publishes every new version tag through the module publish path
// (modules.Publisher: the tagged commit's files packed deterministically,
// checked and stored like any upload), recording the commit of each tag so
// that a tag moved later is refused instead of changing a version. It
// runs syncs on demand, when a push webhook arrives (Verify) and every
// poll interval, one sync of a source at a time on all replicas (a lease
// in the index).
//
// Every connection is guarded against server-side request forgery
// (netguard): a URL naming a literal non-public address is refused at
// creation, and each sync resolves the host once, refuses it if it
// resolves to non-public addresses only, and pins git to the address
// allowed (pin), unless Options.Guard allows private addresses.
//
// Git is run as a program with none of the server's git configuration,
// only network transports (GIT_ALLOW_PROTOCOL), no prompts, credentials
// passed in its environment rather than its arguments, a disk budget per
// sync and a time limit.
package gitsource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
)

// Index is the part of the index the Service uses.
type Index interface {
	store.GitSources
	store.Namespaces
}

// Defaults of Options.
const (
	DefaultPollInterval = 5 * time.Minute
	DefaultSyncTimeout  = 10 * time.Minute
	DefaultMaxRepoBytes = 512 << 20
)

// Options configures a Service.
type Options struct {
	Index   Index
	Modules *modules.Publisher
	// Secret seals the credentials and webhook secrets (the signing
	// secret of managed keys).
	Secret signing.SecretFile
	// TempDir holds the checkouts of running syncs.
	TempDir string
	// PollInterval is the default interval of sources that name none;
	// <= 0 disables polling (webhooks and manual syncs still work).
	PollInterval time.Duration
	// SyncTimeout bounds one sync; MaxRepoBytes what its checkouts may
	// take on disk.
	SyncTimeout  time.Duration
	MaxRepoBytes int64
	// Publish publishes a tag's module version as actor (the sync, named
	// after its source) through the one publish path, which commits the
	// audit entry and webhook event with it (operations.PublishModule);
	// nil publishes through Modules with neither.
	Publish func(ctx context.Context, actor string, up modules.Upload) (modules.Result, error)
	// Record appends an audit event that goes with no change (a moved
	// tag refused); nil records none.
	Record func(ctx context.Context, e registry.AuditEvent)
	// Guard judges the addresses syncs connect to (netguard): public
	// ones only, unless AllowPrivate (--git-source-allow-private). Its
	// Flag defaults to AllowPrivateFlag.
	Guard  netguard.Guard
	Logger *slog.Logger
	Now    func() time.Time
}

// Service creates, syncs and deletes git sources. It is safe for
// concurrent use.
type Service struct {
	opt     Options
	trigger chan key
	mu      sync.Mutex
	pending map[key]bool
}

type key struct{ Namespace, Name, System string }

// New returns a Service.
func New(opt Options) *Service {
	if opt.SyncTimeout <= 0 {
		opt.SyncTimeout = DefaultSyncTimeout
	}
	if opt.MaxRepoBytes <= 0 {
		opt.MaxRepoBytes = DefaultMaxRepoBytes
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Guard.Flag == "" {
		opt.Guard.Flag = AllowPrivateFlag
	}
	if opt.Publish == nil {
		opt.Publish = func(ctx context.Context, _ string, up modules.Upload) (modules.Result, error) {
			return opt.Modules.Publish(ctx, up)
		}
	}
	if opt.Record == nil {
		opt.Record = func(context.Context, registry.AuditEvent) {}
	}
	return &Service{opt: opt, trigger: make(chan key, 64), pending: map[key]bool{}}
}

// Source is a git source to create.
type Source struct {
	Namespace, Name, System string
	URL, Subdir, TagPrefix  string
	Auth                    string // registry.GitAuthNone (""), GitAuthBasic or GitAuthSSH
	Username, Password      string // basic auth
	SSHKey, KnownHosts      string // ssh
	PollInterval            time.Duration
	CreatedBy               string
}

// Created is a created source and its webhook secret, shown once.
type Created struct {
	Source        registry.GitSource
	WebhookSecret string
}

// Create validates src, seals its credentials with a new webhook secret,
// and stores it with the effects in ctx. Nothing is stored on a refusal.
func (s *Service) Create(ctx context.Context, src Source) (Created, error) {
	v, err := modules.ParseAddress(src.Namespace, src.Name, src.System, "0.0.0")
	if err != nil {
		return Created{}, err
	}
	g := registry.GitSource{Namespace: v.Namespace, Name: v.Name, System: v.System, TagPrefix: src.TagPrefix,
		Auth: src.Auth, Username: src.Username, KnownHosts: src.KnownHosts, PollInterval: src.PollInterval, CreatedBy: src.CreatedBy}
	if g.URL, err = registry.ParseGitURL(src.URL); err != nil {
		return Created{}, err
	}
	if err := checkHost(s.opt.Guard, g.URL); err != nil {
		return Created{}, err
	}
	if g.Subdir, err = registry.ParseGitSubdir(src.Subdir); err != nil {
		return Created{}, err
	}
	if err := registry.CheckGitTagPrefix(src.TagPrefix); err != nil {
		return Created{}, err
	}
	if g.PollInterval > 0 && g.PollInterval < registry.MinGitPollInterval {
		return Created{}, registry.Errorf(registry.Invalid, "the poll interval must be at least %s (or 0 for the server's default, -1 for webhooks only)", registry.MinGitPollInterval)
	}
	creds := credentials{Webhook: newWebhookSecret()}
	if g.Auth == "" {
		g.Auth = registry.GitAuthNone
	}
	if len(src.Password) > registry.MaxGitCredentialBytes || len(src.SSHKey) > registry.MaxGitCredentialBytes || len(src.Username) > 256 ||
		len(src.KnownHosts) > registry.MaxKnownHostsLength {
		return Created{}, registry.Errorf(registry.Invalid, "a credential is longer than %d bytes", registry.MaxGitCredentialBytes)
	}
	if strings.ContainsAny(src.Username, ":\r\n\x00") || strings.ContainsAny(src.Password, "\r\n\x00") {
		return Created{}, registry.Errorf(registry.Invalid, "the user name may not contain \":\" or line breaks, nor the password line breaks")
	}
	isSSH := strings.HasPrefix(g.URL, "ssh://") || !strings.Contains(g.URL, "://")
	switch g.Auth {
	case registry.GitAuthNone:
		if src.Password != "" || src.SSHKey != "" {
			return Created{}, registry.Errorf(registry.Invalid, "credentials were given without an auth kind: set auth to basic (user name and token) or ssh (private key)")
		}
	case registry.GitAuthBasic:
		if isSSH || strings.HasPrefix(g.URL, "git://") {
			return Created{}, registry.Errorf(registry.Invalid, "basic auth (a user name and token) needs an https:// or http:// URL")
		}
		if src.Username == "" || src.Password == "" {
			return Created{}, registry.Errorf(registry.Invalid, "basic auth needs a user name and a password or token")
		}
		creds.Password = src.Password
	case registry.GitAuthSSH:
		if !isSSH {
			return Created{}, registry.Errorf(registry.Invalid, "ssh auth needs an ssh:// or user@host:path URL")
		}
		if !strings.Contains(src.SSHKey, "PRIVATE KEY-----") {
			return Created{}, registry.Errorf(registry.Invalid, "ssh auth needs a private key in OpenSSH or PEM form (-----BEGIN ... PRIVATE KEY-----)")
		}
		if strings.TrimSpace(src.KnownHosts) == "" {
			return Created{}, registry.Errorf(registry.Invalid, "ssh auth needs the server's known_hosts lines (ssh-keyscan HOST), so that Trove talks to no other server")
		}
		creds.SSHKey = src.SSHKey
	default:
		return Created{}, registry.Errorf(registry.Invalid, "unknown auth %q: use none, basic or ssh", src.Auth)
	}
	plain, err := json.Marshal(creds)
	if err != nil {
		return Created{}, err
	}
	defer clear(plain)
	if g.SealedSecrets, err = s.opt.Secret.Seal(plain, bind(g)); err != nil {
		return Created{}, err
	}
	g.CreatedAt = s.opt.Now().UTC().Truncate(time.Second)
	g.NextSyncAt = g.CreatedAt // the poller syncs a new source at once
	if err := s.opt.Index.CreateGitSource(ctx, g); err != nil {
		return Created{}, err
	}
	return Created{Source: g, WebhookSecret: creds.Webhook}, nil
}

// bind names what a source's sealed secrets belong to.
func bind(g registry.GitSource) string {
	return "git source of module " + g.Namespace + "/" + g.Name + "/" + g.System
}

func newWebhookSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "gitsec_" + hex.EncodeToString(b)
}

// open returns the credentials of g.
func (s *Service) open(g registry.GitSource) (credentials, error) {
	plain, err := s.opt.Secret.Open(g.SealedSecrets, bind(g))
	if err != nil {
		return credentials{}, err
	}
	defer clear(plain)
	var c credentials
	if err := json.Unmarshal(plain, &c); err != nil {
		return credentials{}, registry.Errorf(registry.Internal, "the secrets of the %s do not decode", bind(g))
	}
	return c, nil
}

// Report is the outcome of a sync.
type Report struct {
	// Published are the versions published by this sync, oldest first.
	Published []string
	// Current counts the version tags already published.
	Current int
	// Ignored counts the tags that name no version.
	Ignored int
	// Refused are the tags that moved to another commit after their
	// version was published, and other tags not published, with why.
	Refused []string
}

// Sync reads the repository of a module's git source and publishes every
// version tag not published yet, as actor. Conflict if a sync of the
// source is running (on any replica). A tag Trove cannot publish is
// reported (Refused) and recorded as the source's last error; the others
// are published all the same.
func (s *Service) Sync(ctx context.Context, namespace, name, system, actor string) (Report, error) {
	ctx, cancel := context.WithTimeout(store.WithoutEffects(ctx), s.opt.SyncTimeout)
	defer cancel()
	holder := "sync_" + newWebhookSecret()[7:23]
	now := s.opt.Now()
	if err := s.opt.Index.ClaimGitSource(ctx, namespace, name, system, holder, now, now.Add(s.opt.SyncTimeout+time.Minute)); err != nil {
		return Report{}, err
	}
	g, err := s.opt.Index.GetGitSource(ctx, namespace, name, system)
	var rep Report
	if err == nil {
		rep, err = s.sync(ctx, g, actor)
	}
	lastErr := ""
	switch {
	case err != nil:
		lastErr = registry.Message(err)
	case len(rep.Refused) > 0:
		lastErr = strings.Join(rep.Refused, "; ")
	}
	next := time.Time{}
	if iv := s.interval(g); iv > 0 {
		next = s.opt.Now().Add(iv)
	}
	finishCtx, finishCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer finishCancel()
	if ferr := s.opt.Index.FinishGitSourceSync(finishCtx, namespace, name, system, holder, s.opt.Now(), truncate(lastErr, 2000), next); ferr != nil && err == nil && !registry.IsKind(ferr, registry.NotFound) {
		err = ferr
	}
	return rep, err
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// SyncWait is Sync, but waits for a sync of the source running
// elsewhere (Conflict) to end first, until ctx ends.
func (s *Service) SyncWait(ctx context.Context, namespace, name, system, actor string) (Report, error) {
	for {
		rep, err := s.Sync(ctx, namespace, name, system, actor)
		if !registry.IsKind(err, registry.Conflict) || !strings.HasPrefix(registry.Message(err), "a sync of the git source") {
			return rep, err
		}
		select {
		case <-ctx.Done():
			return rep, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// interval is the poll interval of g, 0 for none.
func (s *Service) interval(g registry.GitSource) time.Duration {
	switch {
	case g.PollInterval < 0:
		return 0
	case g.PollInterval > 0:
		return g.PollInterval
	}
	return max(s.opt.PollInterval, 0)
}

func (s *Service) sync(ctx context.Context, g registry.GitSource, actor string) (Report, error) {
	var rep Report
	creds, err := s.open(g)
	if err != nil {
		return rep, err
	}
	if err := os.MkdirAll(s.opt.TempDir, 0o700); err != nil {
		return rep, err
	}
	dir, err := os.MkdirTemp(s.opt.TempDir, "gitsource-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	p, err := pinTo(ctx, s.opt.Guard, g.URL)
	if err != nil {
		return rep, err
	}
	run, err := newRunner(dir, g, p, creds, s.opt.MaxRepoBytes)
	if err != nil {
		return rep, err
	}
	tags, err := run.listTags(ctx)
	if err != nil {
		return rep, registry.Wrap(registry.KindOf(err), err, "reading the tags of "+g.URL)
	}
	recorded, err := s.opt.Index.GitTags(ctx, g.Namespace, g.Name, g.System)
	if err != nil {
		return rep, err
	}
	known := map[string]registry.GitTag{}        // by tag
	knownVersion := map[string]registry.GitTag{} // by version
	for _, t := range recorded {
		known[t.Tag] = t
		if have, ok := knownVersion[t.Version]; !ok || !have.PublishedAt.IsZero() {
			knownVersion[t.Version] = t
		}
	}
	// One tag per version: v1.2.0 and 1.2.0 naming one commit are one
	// version; naming two commits, neither is taken.
	type candidate struct {
		remoteTag
		Version string
	}
	byVersion := map[string][]candidate{}
	for _, t := range tags {
		v, ok := registry.GitTagVersion(t.Tag, g.TagPrefix)
		if !ok {
			rep.Ignored++
			continue
		}
		byVersion[v] = append(byVersion[v], candidate{t, v})
	}
	var todo []candidate
	for v, cs := range byVersion {
		if slices.ContainsFunc(cs, func(c candidate) bool { return c.Commit != cs[0].Commit }) {
			rep.Refused = append(rep.Refused, fmt.Sprintf("version %s: tags %s name different commits", v, joinTags(cs, func(c candidate) string { return c.Tag })))
			continue
		}
		// Prefer a tag already recorded, else one with a "v".
		pick := cs[0]
		for _, c := range cs {
			if strings.HasPrefix(strings.TrimPrefix(c.Tag, g.TagPrefix), "v") {
				pick = c
			}
		}
		for _, c := range cs {
			if _, ok := known[c.Tag]; ok {
				pick = c
			}
		}
		todo = append(todo, pick)
	}
	registry.SortNewestFirst(todo, func(c candidate) string { return c.Version })
	slices.Reverse(todo) // oldest first
	for _, c := range todo {
		have, ok := known[c.Tag]
		if !ok {
			// Another tag of the same version (1.2.0 for v1.2.0) was taken.
			have, ok = knownVersion[c.Version]
		}
		if ok {
			if have.Commit != c.Commit {
				msg := fmt.Sprintf("tag %s moved: it names commit %s, but version %s was taken from commit %s (tag %s); versions are immutable: not published again (tag a new version instead)",
					c.Tag, short(c.Commit), have.Version, short(have.Commit), have.Tag)
				rep.Refused = append(rep.Refused, msg)
				if strings.Contains(g.LastError, msg) {
					continue // refused and audited by an earlier sync already
				}
				s.opt.Logger.WarnContext(ctx, "git source tag moved: refused", "namespace", g.Namespace, "name", g.Name, "system", g.System,
					"tag", c.Tag, "recorded_commit", have.Commit, "commit", c.Commit)
				s.opt.Record(ctx, registry.AuditEvent{Action: registry.AuditGitSourceTagMoved, Actor: actor, Namespace: g.Namespace,
					Target:  g.Namespace + "/" + g.Name + "/" + g.System + " " + have.Version,
					Details: fmt.Sprintf("tag %s: recorded commit %s, now %s; refused", c.Tag, have.Commit, c.Commit)})
				continue
			}
			if !have.PublishedAt.IsZero() {
				rep.Current++
				continue
			}
		}
		if err := s.publishTag(ctx, g, run, c.remoteTag, c.Version, actor); err != nil {
			if ctx.Err() != nil {
				return rep, err
			}
			rep.Refused = append(rep.Refused, fmt.Sprintf("tag %s: %s", c.Tag, registry.Message(err)))
			continue
		}
		rep.Published = append(rep.Published, c.Version)
	}
	return rep, nil
}

func joinTags[T any](xs []T, f func(T) string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// publishTag records the commit of tag t (pinning it), then packs the
// module from that commit and publishes it as version.
func (s *Service) publishTag(ctx context.Context, g registry.GitSource, run *gitRunner, t remoteTag, version, actor string) error {
	now := s.opt.Now().UTC()
	if err := s.opt.Index.RecordGitTag(ctx, g.Namespace, g.Name, g.System, registry.GitTag{Tag: t.Tag, Version: version, Commit: t.Commit, SeenAt: now}); err != nil {
		return err
	}
	wt, err := run.checkout(ctx, t.Tag, "v"+version, t.Commit)
	if err != nil {
		return err
	}
	defer os.RemoveAll(wt)
	moduleDir, err := moduleDirectory(wt, g.Subdir, t.Tag)
	if err != nil {
		return err
	}
	rel, err := modules.FromGit(ctx, moduleDir)
	if err != nil {
		return err
	}
	archive, err := os.CreateTemp(run.dir, "archive-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(archive.Name()) // within the sync's disk budget
	defer archive.Close()
	if _, err := modules.PackArchiveFiles(archive, moduleDir, rel.Files); err != nil {
		return err
	}
	if _, err := archive.Seek(0, 0); err != nil {
		return err
	}
	origin := modules.GitRelease{Tag: t.Tag, Commit: t.Commit}.Origin()
	if o := origin + " of " + g.URL; len(o) <= modules.MaxOriginBytes {
		origin = o
	}
	if _, err := s.opt.Publish(ctx, actor, modules.Upload{
		Namespace: g.Namespace, Name: g.Name, System: g.System, Version: version, Origin: origin, Archive: archive,
	}); err != nil {
		return err
	}
	return s.opt.Index.MarkGitTagPublished(ctx, g.Namespace, g.Name, g.System, t.Tag, s.opt.Now().UTC())
}

// moduleDirectory returns the module directory subdir of the working
// tree wt, refusing one that is missing, not a directory, or a symbolic
// link (or under one) that leaves the working tree.
func moduleDirectory(wt, subdir, tag string) (string, error) {
	root, err := filepath.EvalSymlinks(wt)
	if err != nil {
		return "", err
	}
	if subdir == "" {
		return root, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(subdir)))
	if err != nil {
		return "", registry.Errorf(registry.Invalid, "tag %s has no directory %s", tag, subdir)
	}
	if dir == root || !strings.HasPrefix(dir, root+string(filepath.Separator)) || strings.HasPrefix(dir, filepath.Join(root, ".git")+string(filepath.Separator)) {
		return "", registry.Errorf(registry.Invalid, "directory %s of tag %s is a symbolic link that leaves the module's place in the repository; Trove packs nothing from outside it", subdir, tag)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", registry.Errorf(registry.Invalid, "%s of tag %s is not a directory", subdir, tag)
	}
	return dir, nil
}

// Get returns the git source of a module, or NotFound.
func (s *Service) Get(ctx context.Context, namespace, name, system string) (registry.GitSource, error) {
	return s.opt.Index.GetGitSource(ctx, namespace, name, system)
}

// List returns the git sources of a namespace ("" for all).
func (s *Service) List(ctx context.Context, namespace string) ([]registry.GitSource, error) {
	return s.opt.Index.ListGitSources(ctx, namespace)
}

// Delete removes the git source of a module with the effects in ctx. The
// versions it published stay.
func (s *Service) Delete(ctx context.Context, namespace, name, system string) error {
	return s.opt.Index.DeleteGitSource(ctx, namespace, name, system)
}

// Tags returns the tags recorded for a module's git source: the versions
// it found, published or not yet.
func (s *Service) Tags(ctx context.Context, namespace, name, system string) ([]registry.GitTag, error) {
	return s.opt.Index.GitTags(ctx, namespace, name, system)
}
