// Package mirror is Trove's pull-through cache of upstream provider
// registries: it supplies the network mirror routes (internal/protocol/
// providers) with the providers of other hosts, fetched from the
// upstreams the operator configured (store.MirrorUpstreams) on a client's
// first request and kept in the index and the blob store.
//
// What is kept is what the upstream published, checked before anything is
// stored or served: SHA256SUMS and its signature are verified with the
// keys of the upstream's own download document (as the clients do), each
// package's SHA-256 against that SHA256SUMS. The original SHA256SUMS,
// signature and key are stored with the version, so that a mirrored
// provider can be verified again later (and exported).
//
// A version is fetched (its SHA256SUMS, signature and platforms) when a
// client first asks for its mirror document; each package when a client
// first downloads it, through the signed file URL of that document, which
// names the provider version and platform it was listed for (OpenPackage,
// FetchPackage): a package is fetched from the upstream of the provider
// asked for. However many clients ask at once, each version and each
// package is fetched from the upstream once, and every client gets the
// package's bytes as they arrive; the end of them only once all matched
// the signed SHA256SUMS (download.go).
//
// When an upstream cannot be reached, the versions the mirror holds a
// package of keep being listed and installed; anything else fails with an
// error that names the upstream.
//
// New upstream versions may be held back (hold.go): a rule's minimum age,
// counted from the upstream's publish time or this Trove's first sight of
// the version (recorded in the index), operators' approvals and denials;
// Judge decides, and every listing, version document, fetch and package
// download of a mirrored provider asks it.
package mirror

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	goversion "github.com/hashicorp/go-version"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/staging"
	"trove.dev/trove/internal/store"
)

// Index is what the mirror needs of the index.
type Index interface {
	store.Mirror
	store.MirrorUpstreams
	store.MirrorHolds
}

// Defaults of Options.
const (
	DefaultConfigTTL    = 5 * time.Second
	DefaultVersionsTTL  = time.Minute
	DefaultFetchTimeout = 30 * time.Minute
	DefaultIdleTimeout  = time.Minute
)

// Options configures a Mirror.
type Options struct {
	Index Index
	Blobs store.Blobs
	// TempDir is the staging directory packages are downloaded into
	// before they are checked and stored.
	TempDir string
	// MaxPackageBytes bounds a package's size.
	MaxPackageBytes int64
	// UserAgent names Trove in upstream requests.
	UserAgent string
	// ConfigTTL is how long the upstream configuration read from the
	// index is used before it is read again (DefaultConfigTTL); Reload
	// reads it at once.
	ConfigTTL time.Duration
	// VersionsTTL is how long an upstream's versions document is used
	// before it is fetched again (DefaultVersionsTTL).
	VersionsTTL time.Duration
	// IdleTimeout is how long a package download waits for the
	// upstream's next bytes (or its answer) before it gives up
	// (DefaultIdleTimeout). A download takes DefaultFetchTimeout at most.
	IdleTimeout time.Duration
	// RefusalTTL is how long a package refused for its bytes is answered
	// with the same refusal without asking the upstream again
	// (DefaultRefusalTTL; negative: never, every request asks the
	// upstream). See refusals.go.
	RefusalTTL time.Duration
	Logger     *slog.Logger
	// Metrics receives the mirror's collectors (nil: none).
	Metrics prometheus.Registerer
	// Now is the mirror's clock (time.Now).
	Now func() time.Time
}

// Mirror fetches providers from upstream registries and keeps them. It is
// safe for concurrent use.
type Mirror struct {
	opt   Options
	log   *slog.Logger
	stage staging.Dir

	cfgMu     sync.Mutex
	cfgRead   time.Time
	upstreams map[string]*upstream // by normalized host

	verMu    sync.Mutex
	versions map[provider]cachedVersions

	flights  singleflight.Group
	metrics  *metrics
	refusals *refusals // packages refused for their bytes, not asked for again for a while

	fetchTimeout time.Duration
	dlMu         sync.Mutex
	downloads    map[string]*download // running package downloads by origin
	running      sync.WaitGroup       // the downloads' goroutines
	stop         context.Context      // ended by Close: the downloads give up
	cancel       context.CancelFunc
}

type provider struct{ host, namespace, typ string }

type cachedVersions struct {
	doc     versionsDoc
	fetched time.Time
	// seen is when this Trove first saw each version of doc (recorded in
	// the index when doc was fetched; nil if that failed).
	seen map[string]time.Time
}

// maxCachedVersionDocs bounds the versions documents kept in memory.
const maxCachedVersionDocs = 1000

// New returns a Mirror.
func New(opt Options) (*Mirror, error) {
	if opt.ConfigTTL <= 0 {
		opt.ConfigTTL = DefaultConfigTTL
	}
	if opt.VersionsTTL <= 0 {
		opt.VersionsTTL = DefaultVersionsTTL
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = DefaultIdleTimeout
	}
	if opt.RefusalTTL == 0 {
		opt.RefusalTTL = DefaultRefusalTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.UserAgent == "" {
		opt.UserAgent = userAgentPrefix + "dev"
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mirror{
		opt: opt, log: log, stage: staging.Dir{Path: opt.TempDir, Prefix: "mirror-"},
		versions: make(map[provider]cachedVersions), fetchTimeout: DefaultFetchTimeout,
		downloads: make(map[string]*download), refusals: newRefusals(opt.RefusalTTL, maxRefusals),
	}
	m.stop, m.cancel = context.WithCancel(context.Background())
	var err error
	if m.metrics, err = newMetrics(opt.Metrics); err != nil {
		return nil, err
	}
	return m, nil
}

// Close ends the package downloads that are running (their readers get
// an error) and waits for them to finish, so that none writes to the
// index or the blob store after the caller closed them. The Mirror must
// not be used afterwards.
func (m *Mirror) Close() {
	m.cancel()
	m.running.Wait()
}

// RemoveStaleDownloads deletes what package downloads that never finished
// left in the staging directory. Call it at start-up, before serving.
func (m *Mirror) RemoveStaleDownloads() error { return m.stage.RemoveStale() }

// Reload makes the next request read the upstream configuration again
// (after it was changed through this process).
func (m *Mirror) Reload() {
	m.cfgMu.Lock()
	m.cfgRead = time.Time{}
	m.cfgMu.Unlock()
}

// upstream returns the configured upstream of host, and the rule that
// allows namespace/typ there: nil and no error when host is not an
// upstream (what the mirror holds of it is still served), NotFound when
// no rule of the upstream allows the provider.
func (m *Mirror) upstream(ctx context.Context, p provider) (*upstream, registry.MirrorRule, error) {
	ups, err := m.config(ctx)
	if err != nil {
		return nil, registry.MirrorRule{}, err
	}
	u := ups[p.host]
	if u == nil {
		return nil, registry.MirrorRule{}, nil
	}
	for _, rule := range u.cfg.Allow {
		if MatchProvider(rule.Provider, p.namespace, p.typ) {
			return u, rule, nil
		}
	}
	return nil, registry.MirrorRule{}, registry.Errorf(registry.NotFound, "provider %s/%s/%s is not mirrored: no rule of upstream %s allows it", p.host, p.namespace, p.typ, p.host)
}

// config returns the upstreams, read from the index at most every
// ConfigTTL. An upstream whose configuration did not change keeps its
// client and discovered base URL.
func (m *Mirror) config(ctx context.Context) (map[string]*upstream, error) {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	now := m.opt.Now()
	if m.upstreams != nil && now.Sub(m.cfgRead) < m.opt.ConfigTTL {
		return m.upstreams, nil
	}
	list, err := m.opt.Index.ListMirrorUpstreams(ctx)
	if err != nil {
		if m.upstreams != nil {
			return m.upstreams, nil // keep serving with what was read last
		}
		return nil, err
	}
	ups := make(map[string]*upstream, len(list))
	for _, cfg := range list {
		if old := m.upstreams[cfg.Host]; old != nil && sameConfig(old.cfg, cfg) {
			ups[cfg.Host] = old
			continue
		}
		u, err := newUpstream(cfg, m.opt.UserAgent)
		if err != nil {
			m.log.WarnContext(ctx, "mirror upstream skipped", "host", cfg.Host, "error", registry.Message(err), "cause", causeText(err))
			continue
		}
		ups[cfg.Host] = u
	}
	m.upstreams, m.cfgRead = ups, now
	return ups, nil
}

func sameConfig(a, b registry.MirrorUpstream) bool {
	return a.ServiceURL == b.ServiceURL && a.CACertificates == b.CACertificates && slices.Equal(a.Allow, b.Allow)
}

// MatchProvider reports whether pattern ("namespace/type", where "*"
// stands for any one namespace or type) matches namespace/typ.
func MatchProvider(pattern, namespace, typ string) bool {
	return registry.MatchMirrorRule(pattern, namespace, typ)
}

// CheckRule validates a rule as an operator writes it.
func CheckRule(r registry.MirrorRule) error { return registry.CheckMirrorRule(r) }

// allows reports whether rule allows version.
func allows(rule registry.MirrorRule, version string) bool {
	if rule.Versions == "" {
		return true
	}
	c, err := goversion.NewConstraint(rule.Versions)
	if err != nil {
		return false // CheckRule refused it when it was configured
	}
	v, err := goversion.NewSemver(version)
	return err == nil && c.Check(v)
}

// MirroredVersions returns the versions of a provider of host that may be
// installed through the mirror: those the upstream lists that its rule
// allows or, when the upstream cannot be reached, those the mirror holds
// a package of.
func (m *Mirror) MirroredVersions(ctx context.Context, host, namespace, typ string) ([]string, error) {
	p := provider{host, namespace, typ}
	u, rule, err := m.upstream(ctx, p)
	if err != nil {
		return nil, err
	}
	if u == nil {
		held, err := m.heldVersions(ctx, p, rule)
		if err != nil && !registry.IsKind(err, registry.NotFound) {
			return nil, err
		}
		if len(held) == 0 {
			return nil, notUpstream(p)
		}
		return m.available(ctx, nil, p, rule, held)
	}
	doc, err := m.upstreamVersions(ctx, u, p)
	if errors.Is(err, errNotFound) {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s/%s not found: upstream %s does not know it", host, namespace, typ, host)
	}
	if err != nil {
		held, herr := m.heldVersions(ctx, p, rule)
		if herr != nil || len(held) == 0 {
			return nil, withCause(registry.Unavailable, err, fmt.Sprintf("%s, and this mirror holds no version of %s/%s/%s", registry.Message(err), host, namespace, typ))
		}
		m.log.WarnContext(ctx, "mirror upstream unreachable: listing the versions held", "host", host, "provider", namespace+"/"+typ, "versions", len(held), "error", registry.Message(err), "cause", causeText(err))
		return m.available(ctx, u, p, rule, held)
	}
	var versions []string
	for _, v := range doc.Versions {
		if allows(rule, v.Version) {
			versions = append(versions, v.Version)
		}
	}
	if len(versions) == 0 {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s/%s has no version this mirror may serve (rule %s %s)", host, namespace, typ, rule.Provider, rule.Versions)
	}
	return m.available(ctx, u, p, rule, versions)
}

// notUpstream is the answer for a provider of a host that is not an
// upstream and of which the mirror holds nothing.
func notUpstream(p provider) error {
	return registry.Errorf(registry.NotFound, "provider %s/%s/%s is not mirrored: %s is not an upstream registry of this mirror", p.host, p.namespace, p.typ, p.host)
}

// heldVersions returns the versions of p the mirror holds a package of.
func (m *Mirror) heldVersions(ctx context.Context, p provider, rule registry.MirrorRule) ([]string, error) {
	vs, err := m.opt.Index.ListMirroredVersions(ctx, p.host, p.namespace, p.typ)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, v := range vs {
		if allows(rule, v.Version) && slices.ContainsFunc(v.Platforms, registry.Platform.Held) {
			held = append(held, v.Version)
		}
	}
	return held, nil
}

// upstreamVersions returns the upstream's versions document of p, fetched
// at most every VersionsTTL (once for concurrent callers).
func (m *Mirror) upstreamVersions(ctx context.Context, u *upstream, p provider) (versionsDoc, error) {
	c, err := m.upstreamVersionsSeen(ctx, u, p)
	return c.doc, err
}

// upstreamVersionsSeen is upstreamVersions with the first sight of each
// version, recorded in the index when the document is fetched.
func (m *Mirror) upstreamVersionsSeen(ctx context.Context, u *upstream, p provider) (cachedVersions, error) {
	now := m.opt.Now()
	m.verMu.Lock()
	c, ok := m.versions[p]
	m.verMu.Unlock()
	if ok && now.Sub(c.fetched) < m.opt.VersionsTTL {
		return c, nil
	}
	v, err, _ := m.flights.Do("versions "+p.host+"/"+p.namespace+"/"+p.typ, func() (any, error) {
		doc, err := u.versions(context.WithoutCancel(ctx), p.namespace, p.typ)
		m.metrics.upstream(p.host, "versions", err)
		if err != nil {
			return cachedVersions{}, err
		}
		c := cachedVersions{doc: doc, fetched: m.opt.Now()}
		names := make([]string, 0, len(doc.Versions))
		for _, v := range doc.Versions {
			names = append(names, v.Version)
		}
		// First sight is recorded for every version listed, with or
		// without a minimum age, so that a rule given one later counts
		// from when the version really appeared.
		if c.seen, err = m.opt.Index.SeeMirroredVersions(context.WithoutCancel(ctx), p.host, p.namespace, p.typ, names, c.fetched); err != nil {
			m.log.WarnContext(ctx, "mirror: recording the first sight of upstream versions failed; a minimum age counts from now", "host", p.host,
				"provider", p.namespace+"/"+p.typ, "error", registry.Message(err))
		}
		m.verMu.Lock()
		if len(m.versions) >= maxCachedVersionDocs {
			for k := range m.versions { // drop any one: a miss costs one fetch
				delete(m.versions, k)
				break
			}
		}
		m.versions[p] = c
		m.verMu.Unlock()
		return c, nil
	})
	return v.(cachedVersions), err
}

// MirroredVersion returns one version of a provider of host with its
// platforms, fetching its SHA256SUMS and signature from the upstream and
// verifying them on first request.
func (m *Mirror) MirroredVersion(ctx context.Context, host, namespace, typ, version string) (registry.ProviderVersion, error) {
	p := provider{host, namespace, typ}
	u, rule, err := m.upstream(ctx, p)
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	if u == nil {
		mv, err := m.opt.Index.GetMirroredVersion(ctx, host, namespace, typ, version)
		if registry.IsKind(err, registry.NotFound) {
			return registry.ProviderVersion{}, notUpstream(p)
		}
		if err == nil {
			err = m.check(ctx, nil, p, rule, version)
		}
		return mv.ProviderVersion, err
	}
	if !allows(rule, version) {
		return registry.ProviderVersion{}, registry.Errorf(registry.NotFound, "provider %s/%s/%s %s is not mirrored: rule %s allows %s only", host, namespace, typ, version, rule.Provider, rule.Versions)
	}
	// Held and denied versions are neither served nor fetched.
	if err := m.check(ctx, u, p, rule, version); err != nil {
		return registry.ProviderVersion{}, err
	}
	mv, err := m.opt.Index.GetMirroredVersion(ctx, host, namespace, typ, version)
	if err == nil {
		m.metrics.versions.WithLabelValues("held").Inc()
		return mv.ProviderVersion, nil
	}
	if !registry.IsKind(err, registry.NotFound) {
		return registry.ProviderVersion{}, err
	}
	v, err, _ := m.flights.Do("version "+host+"/"+namespace+"/"+typ+"/"+version, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*requestTimeout)
		defer cancel()
		return m.fetchVersion(fctx, u, p, version)
	})
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	m.metrics.versions.WithLabelValues("fetched").Inc()
	return v.(registry.MirroredVersion).ProviderVersion, nil
}

// fetchVersion fetches one version from the upstream: its entry in the
// versions document, the download document of one of its packages (for
// the SHA256SUMS URLs and signing keys), SHA256SUMS and its signature;
// verifies them; stores the two files and the version.
func (m *Mirror) fetchVersion(ctx context.Context, u *upstream, p provider, version string) (registry.MirroredVersion, error) {
	doc, err := m.upstreamVersions(ctx, u, p)
	if errors.Is(err, errNotFound) {
		return registry.MirroredVersion{}, registry.Errorf(registry.NotFound, "provider %s/%s/%s not found: upstream %s does not know it", p.host, p.namespace, p.typ, p.host)
	}
	if err != nil {
		return registry.MirroredVersion{}, withCause(registry.Unavailable, err, fmt.Sprintf("%s; %s/%s/%s %s is not held by this mirror", registry.Message(err), p.host, p.namespace, p.typ, version))
	}
	i := slices.IndexFunc(doc.Versions, func(v versionEntry) bool { return v.Version == version })
	if i < 0 || len(doc.Versions[i].Platforms) == 0 {
		return registry.MirroredVersion{}, registry.Errorf(registry.NotFound, "provider %s/%s/%s has no version %s upstream", p.host, p.namespace, p.typ, version)
	}
	entry := doc.Versions[i]
	first := entry.Platforms[0]
	dl, dlURL, err := u.download(ctx, p.namespace, p.typ, version, first.OS, first.Arch)
	m.metrics.upstream(p.host, "download", err)
	if err != nil {
		return registry.MirroredVersion{}, m.fetchErr(p, version, "its download document", err)
	}
	sums, sig, key, err := m.fetchSums(ctx, u, p, version, dl, dlURL)
	if err != nil {
		return registry.MirroredVersion{}, err
	}
	listed, err := release.ParseSHA256SUMS(sums)
	if err != nil {
		return registry.MirroredVersion{}, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the SHA256SUMS of %s/%s %s does not parse: %s", p.host, p.namespace, p.typ, version, registry.Message(err))
	}
	byName := make(map[string]string, len(listed))
	for _, s := range listed {
		byName[s.Filename] = s.Digest
	}
	mv := registry.MirroredVersion{Host: p.host, ProviderVersion: registry.ProviderVersion{
		Namespace: p.namespace, Type: p.typ, Version: version, Protocols: entry.Protocols,
		SHASumsDigest: digestOf(sums), SHASumsSignatureDigest: digestOf(sig), SigningKey: key,
		PublishedAt: m.opt.Now().UTC(),
	}}
	for _, pl := range entry.Platforms {
		name := fmt.Sprintf("terraform-provider-%s_%s_%s_%s.zip", p.typ, version, pl.OS, pl.Arch)
		if pl.OS == first.OS && pl.Arch == first.Arch && dl.Filename != "" {
			if pkg, err := release.ParsePackageFilename(dl.Filename); err == nil && pkg.OS == pl.OS && pkg.Arch == pl.Arch {
				name = dl.Filename
			}
		}
		sum, ok := byName[name]
		if !ok {
			m.log.WarnContext(ctx, "mirror: a platform has no package in SHA256SUMS; left out", "host", p.host,
				"provider", p.namespace+"/"+p.typ, "version", version, "platform", pl.OS+"_"+pl.Arch, "file", name)
			continue
		}
		mv.Platforms = append(mv.Platforms, registry.Platform{OS: pl.OS, Arch: pl.Arch, Filename: name, SHA256: sum})
	}
	if len(mv.Platforms) == 0 {
		return registry.MirroredVersion{}, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the SHA256SUMS of %s/%s %s lists none of its platforms' packages", p.host, p.namespace, p.typ, version)
	}
	for _, b := range [][]byte{sums, sig} {
		if err := m.opt.Blobs.Put(ctx, digestOf(b), int64(len(b)), strings.NewReader(string(b))); err != nil {
			return registry.MirroredVersion{}, err
		}
	}
	stored, err := m.opt.Index.PutMirroredVersion(ctx, mv)
	if err != nil {
		return registry.MirroredVersion{}, err
	}
	m.log.InfoContext(ctx, "mirrored a provider version", "host", p.host, "provider", p.namespace+"/"+p.typ, "version", version,
		"platforms", len(stored.Platforms), "key", key.KeyID)
	return stored, nil
}

// fetchSums fetches SHA256SUMS and its signature named by dl and
// verifies the signature with one of dl's keys, judged when it was made
// (as the clients judge it: an upstream key that expired since still
// verifies its releases).
func (m *Mirror) fetchSums(ctx context.Context, u *upstream, p provider, version string, dl downloadDoc, dlURL *url.URL) (sums, sig []byte, key registry.SigningKey, err error) {
	sumsURL, err1 := u.resolve(dlURL, dl.SHASumsURL)
	sigURL, err2 := u.resolve(dlURL, dl.SHASumsSignatureURL)
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, key, registry.Errorf(registry.Unavailable, "upstream %s: the download document of %s/%s %s has no valid SHA256SUMS URLs: %v", p.host, p.namespace, p.typ, version, err)
	}
	if sums, err = u.get(ctx, sumsURL, maxSHASums); err != nil {
		m.metrics.upstream(p.host, "shasums", err)
		return nil, nil, key, m.fetchErr(p, version, "its SHA256SUMS", err)
	}
	if sig, err = u.get(ctx, sigURL, maxSignature); err != nil {
		m.metrics.upstream(p.host, "shasums", err)
		return nil, nil, key, m.fetchErr(p, version, "the signature of its SHA256SUMS", err)
	}
	m.metrics.upstream(p.host, "shasums", nil)
	var keys []registry.SigningKey
	for _, k := range dl.SigningKeys.GPGPublicKeys {
		keys = append(keys, registry.SigningKey{Namespace: p.namespace, KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	if len(keys) == 0 {
		return nil, nil, key, registry.Errorf(registry.UpstreamInvalid, "upstream %s lists no signing key for %s/%s %s: refusing to mirror a release that cannot be verified", p.host, p.namespace, p.typ, version)
	}
	made, err := signing.SignatureTime(sig)
	if err == nil {
		key, err = signing.VerifyDetachedAt(keys, sums, sig, made)
	}
	var unknown *signing.UnknownIssuerError
	switch {
	case errors.As(err, &unknown):
		// Not "add the key": a key only the upstream vouches for is no
		// reason to trust a release, the mirror's operator must not be
		// nudged to trust it.
		m.metrics.refused.WithLabelValues(p.host).Inc()
		return nil, nil, key, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the SHA256SUMS of %s/%s %s is signed by key %s, which is none of the keys its download document lists; refused, nothing was mirrored. "+
			"Do not trust that key because the upstream serves it: verify it out of band with the provider's publisher",
			p.host, p.namespace, p.typ, version, unknown.Issuer)
	case err != nil:
		m.metrics.refused.WithLabelValues(p.host).Inc()
		return nil, nil, key, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the SHA256SUMS of %s/%s %s does not verify with the keys its download document lists (%s); refused, nothing was mirrored",
			p.host, p.namespace, p.typ, version, registry.Message(err))
	}
	// The key is stored and served as the upstream lists it: what an
	// air-gap bundle's key must be, it must be here (signing.CheckListedKey).
	if err := signing.CheckListedKey(key); err != nil {
		m.metrics.refused.WithLabelValues(p.host).Inc()
		return nil, nil, registry.SigningKey{}, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the key that signed %s/%s %s is listed in a way Trove will not serve (%s); refused, nothing was mirrored",
			p.host, p.namespace, p.typ, version, registry.Message(err))
	}
	return sums, sig, key, nil
}

func (m *Mirror) fetchErr(p provider, version, what string, err error) error {
	if errors.Is(err, errNotFound) {
		return registry.Errorf(registry.NotFound, "provider %s/%s/%s %s not found upstream (%s is missing)", p.host, p.namespace, p.typ, version, what)
	}
	return withCause(registry.Unavailable, err, fmt.Sprintf("%s; %s/%s/%s %s is not held by this mirror", registry.Message(err), p.host, p.namespace, p.typ, version))
}

// FetchPackage makes the package of one platform of a mirrored version
// available in the blob store when the mirror does not hold it yet: it
// downloads it from the upstream of o.Host, checks it against the
// verified SHA256SUMS, computes its h1 hash and stores it. NotFound when
// no mirrored version has that platform. Concurrent calls (and
// OpenPackage) for one package share one download; each caller may give
// up with its ctx, the download goes on.
func (m *Mirror) FetchPackage(ctx context.Context, o registry.PackageOrigin) error {
	mv, pl, err := m.findPackage(ctx, o.String(), "")
	if err != nil {
		return err
	}
	d := m.join(mv, pl)
	defer d.release()
	if err := d.wait(ctx, func() bool { return d.done }); err != nil {
		return err
	}
	return d.err
}

// HasPackage reports whether origin (a registry.PackageOrigin's String;
// "" for a signed URL issued without one) names a mirrored package with
// the given digest, which OpenPackage can then fetch.
func (m *Mirror) HasPackage(ctx context.Context, origin, digest string) (bool, error) {
	_, _, err := m.findPackage(ctx, origin, digest)
	if registry.IsKind(err, registry.NotFound) {
		return false, nil
	}
	return err == nil, err
}

// findPackage returns the mirrored version and platform that origin
// names, NotFound if there is none or its package is not digest. An
// empty origin (a URL signed before URLs carried one) looks the digest
// up among all mirrored packages.
func (m *Mirror) findPackage(ctx context.Context, origin, digest string) (registry.MirroredVersion, registry.Platform, error) {
	if origin == "" {
		return m.opt.Index.FindMirroredPackage(ctx, digest)
	}
	o, err := registry.ParsePackageOrigin(origin)
	if err != nil {
		return registry.MirroredVersion{}, registry.Platform{}, registry.Errorf(registry.NotFound, "%s", registry.Message(err))
	}
	mv, err := m.opt.Index.GetMirroredVersion(ctx, o.Host, o.Namespace, o.Type, o.Version)
	if err != nil {
		return mv, registry.Platform{}, err
	}
	pl, ok := mv.Platform(o.OS, o.Arch)
	if !ok || digest != "" && pl.SHA256 != digest {
		return mv, registry.Platform{}, registry.Errorf(registry.NotFound, "the mirror has no package %s of %s", digest, origin)
	}
	return mv, pl, nil
}

// ServesPackage returns nil if the package origin (a
// registry.PackageOrigin's String) names may be served now, NotFound
// saying why if its version is held or denied: a version denied after a
// client got its signed URL stops being served, stored or not. An empty
// origin (a URL signed before URLs carried one) is not judged.
func (m *Mirror) ServesPackage(ctx context.Context, origin string) error {
	if origin == "" {
		return nil
	}
	o, err := registry.ParsePackageOrigin(origin)
	if err != nil {
		return registry.Errorf(registry.NotFound, "%s", registry.Message(err))
	}
	p := provider{o.Host, o.Namespace, o.Type}
	u, rule, err := m.upstream(ctx, p)
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		return err
	}
	return m.check(ctx, u, p, rule, o.Version)
}

// OpenPackage returns the package that origin names (see HasPackage),
// which the mirror does not hold yet, as it arrives from the upstream:
// body's Read gives the last HoldBack bytes only once the whole package
// matched the signed SHA256SUMS, then io.EOF; any other error means the
// package was refused or its download failed, and the caller must not let
// what it passed on look whole (abort the response). size is the
// upstream's Content-Length, -1 if unknown. OpenPackage returns once the
// upstream answered, with its error if it failed before. However many
// callers open one package, it is downloaded once, and each gets its
// bytes as they arrive. Close body.
func (m *Mirror) OpenPackage(ctx context.Context, origin, digest string) (body io.ReadCloser, size int64, err error) {
	mv, pl, err := m.findPackage(ctx, origin, digest)
	if err != nil {
		return nil, 0, err
	}
	d := m.join(mv, pl)
	if err := d.wait(ctx, func() bool { return d.started }); err != nil {
		d.release()
		return nil, 0, err
	}
	d.mu.Lock()
	size, failed := d.size, d.failed
	d.mu.Unlock()
	if failed != nil {
		d.release()
		return nil, 0, failed
	}
	return &packageReader{d: d, ctx: ctx}, size, nil
}

// fetchPackage is the work of download d: it downloads d's package into
// a staged file that d's readers read as it grows, checks it, stores it
// and records it as held.
func (m *Mirror) fetchPackage(ctx context.Context, d *download) error {
	mv, pl := d.mv, d.pl
	p := provider{mv.Host, mv.Namespace, mv.Type}
	if size, err := m.opt.Blobs.Stat(ctx, pl.SHA256); err == nil {
		d.update(func() { d.stored, d.started, d.verified, d.size = true, true, true, size })
		return m.held(ctx, mv, pl, size, "") // stored by an earlier fetch that stopped before recording it
	}
	u, rule, err := m.upstream(ctx, p)
	if err != nil {
		return err
	}
	if u != nil && !allows(rule, mv.Version) {
		return registry.Errorf(registry.NotFound, "provider %s/%s/%s %s is not mirrored: rule %s allows %s only", p.host, p.namespace, p.typ, mv.Version, rule.Provider, rule.Versions)
	}
	if err := m.check(ctx, u, p, rule, mv.Version); err != nil {
		return err
	}
	if u == nil {
		return registry.Errorf(registry.Unavailable, "%s is not held by this mirror, and %s is not one of its upstream registries to fetch it from", pl.Filename, p.host)
	}
	// A package refused for its bytes a short while ago is refused
	// again without asking the upstream (refusals.go).
	key := refusalKey{origin: d.origin, digest: pl.SHA256}
	if r, ok := m.refusals.get(key, m.opt.Now()); ok {
		m.metrics.remembered.WithLabelValues(p.host).Inc()
		return r.err()
	}
	// refuse counts and remembers a refusal of the package's bytes (or
	// of their checksum). Nothing else is remembered: a failure of the
	// network, the upstream or this Trove is tried again next time.
	refuse := func(format string, args ...any) error {
		m.metrics.refused.WithLabelValues(p.host).Inc()
		err := registry.Errorf(registry.UpstreamInvalid, format, args...)
		m.refusals.add(key, registry.Message(err), m.opt.Now())
		return err
	}
	dl, dlURL, err := u.download(ctx, p.namespace, p.typ, mv.Version, pl.OS, pl.Arch)
	m.metrics.upstream(p.host, "download", err)
	if err != nil {
		return m.fetchErr(p, mv.Version, "the download document of "+pl.Filename, err)
	}
	if dl.SHASum != "" && !strings.EqualFold(dl.SHASum, pl.SHA256) {
		return refuse("upstream %s: the download document of %s gives checksum %s, but its signed SHA256SUMS lists %s; refused, nothing was mirrored", p.host, pl.Filename, registry.Elide(dl.SHASum), pl.SHA256)
	}
	target, err := u.resolve(dlURL, dl.DownloadURL)
	if err != nil {
		return registry.Errorf(registry.Unavailable, "upstream %s: the download document of %s has no valid download URL: %v", p.host, pl.Filename, err)
	}
	f, err := m.stage.CreateFile("*.zip")
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating a staging file for a mirrored package")
	}
	defer os.Remove(f.Name()) // readers read on through d.f, closed with the last of them
	d.update(func() { d.f = f })
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := newIdleBody(m.opt.IdleTimeout, cancel, fmt.Sprintf("upstream %s (%s)", p.host, pl.Filename))
	defer idle.stop()
	resp, err := u.open(rctx, target)
	if err != nil {
		m.metrics.upstream(p.host, "package", err)
		if idle.errStalled(err) {
			err = idle.stallErr(err)
		}
		return m.fetchErr(p, mv.Version, pl.Filename, err)
	}
	defer resp.Body.Close()
	size := resp.ContentLength
	if size < 0 {
		size = -1
	}
	limit := m.opt.MaxPackageBytes
	if limit <= 0 {
		limit = 1 << 30
	}
	// A package over the limit is refused like one whose bytes differ:
	// the signed digest names these bytes, so it stays over the limit
	// (until the limit is raised, which takes a restart).
	tooLarge := func() error {
		return refuse("upstream %s: %s is larger than this Trove's limit of %d bytes (--max-zip-bytes): refused, nothing was mirrored", p.host, pl.Filename, limit)
	}
	if size > limit {
		err := tooLarge()
		m.metrics.upstream(p.host, "package", err)
		return err
	}
	d.update(func() { d.started, d.size = true, size })
	idle.r = resp.Body
	n, got, err := staging.Copy(d, idle, limit, pl.Filename)
	m.metrics.upstream(p.host, "package", err)
	if registry.IsKind(err, registry.TooLarge) {
		return tooLarge() // its readers' answers are broken off
	}
	if err != nil {
		return withCause(registry.Unavailable, err, fmt.Sprintf("upstream %s: downloading %s failed: %s", p.host, pl.Filename, registry.Message(err)))
	}
	m.metrics.bytes.WithLabelValues(p.host).Add(float64(n))
	if got != pl.SHA256 {
		if unframed(resp) {
			// A body that ends with the connection (no Content-Length,
			// not chunked, HTTP/1) reads as whole when the connection
			// is cut short: not remembered, since a retry may get the
			// whole package.
			m.metrics.refused.WithLabelValues(p.host).Inc()
			return registry.Errorf(registry.Unavailable, "upstream %s sent %s with checksum %s (%d bytes, ended by closing the connection: perhaps cut short), but its signed SHA256SUMS lists %s: nothing was mirrored; tried again on the next request", p.host, pl.Filename, got, n, pl.SHA256)
		}
		return refuse("upstream %s sent %s with checksum %s, but its signed SHA256SUMS lists %s: refused, nothing was mirrored", p.host, pl.Filename, got, pl.SHA256)
	}
	notZip := func(err error) error {
		return refuse("upstream %s sent %s, which is not a zip archive (%s)", p.host, pl.Filename, registry.Message(err))
	}
	if err := zipDirectory(f, n); err != nil {
		return notZip(err) // its readers' answers are broken off
	}
	// Every byte matched the signed SHA256SUMS and the package has a zip
	// directory: the readers may end their answers now, while the mirror
	// hashes and stores the package. They get exactly the bytes the
	// publisher signed, as a direct install would; nothing else ends
	// cleanly (a package whose bytes differ is refused above, and its
	// readers' answers are broken off). Neither the h1 hash, which
	// unpacks the whole zip, nor storing the package (the blob store
	// syncs it to disk) holds up the clients' last bytes.
	d.update(func() { d.verified = true })
	h1, err := release.PackageHash(f.Name())
	if err != nil {
		// Signed, but a zip the mirror cannot unpack within its limits:
		// the clients that streamed it got the signed bytes (and check
		// them as they would from the upstream); the mirror neither
		// stores nor lists it.
		return notZip(err)
	}
	if err := staging.Store(ctx, m.opt.Blobs, got, n, f.Name()); err != nil {
		return err
	}
	return m.held(ctx, mv, pl, n, h1)
}

// unframed reports whether resp's body ends only with its connection
// (HTTP/1 without Content-Length or chunking), so that a connection cut
// short cannot be told from the body's end.
func unframed(resp *http.Response) bool {
	return resp.ContentLength < 0 && resp.ProtoMajor < 2 && !slices.Contains(resp.TransferEncoding, "chunked")
}

// held records that the mirror holds a package (computing its h1 from
// the stored blob when h1 is "").
func (m *Mirror) held(ctx context.Context, mv registry.MirroredVersion, pl registry.Platform, size int64, h1 string) error {
	if h1 == "" {
		var err error
		if h1, err = m.hashStored(ctx, pl.SHA256); err != nil {
			return err
		}
	}
	if err := m.opt.Index.SetMirroredPackage(ctx, mv.Host, mv.Namespace, mv.Type, mv.Version, pl.OS, pl.Arch, size, h1); err != nil {
		return err
	}
	m.log.InfoContext(ctx, "mirrored a provider package", "host", mv.Host, "provider", mv.Namespace+"/"+mv.Type,
		"version", mv.Version, "platform", pl.OS+"_"+pl.Arch, "bytes", size)
	return nil
}

// hashStored computes the h1 hash of a stored package.
func (m *Mirror) hashStored(ctx context.Context, digest string) (string, error) {
	b, err := m.opt.Blobs.Open(ctx, digest)
	if err != nil {
		return "", err
	}
	defer b.Close()
	f, err := m.stage.CreateFile("*.zip")
	if err != nil {
		return "", registry.Wrap(registry.Internal, err, "creating a staging file")
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := io.Copy(f, b.Content); err != nil {
		return "", registry.Wrap(registry.Internal, err, "copying a stored package")
	}
	return release.PackageHash(f.Name())
}

// zipDirectory checks that f, of size bytes, ends with a zip archive's
// directory, reading the directory alone (not the entries): the cheap
// part of the zip check, made before the clients get a package's end.
func zipDirectory(f *os.File, size int64) error {
	if _, err := zip.NewReader(f, size); err != nil {
		return registry.Wrap(registry.Invalid, err, fmt.Sprintf("its zip directory is unreadable: %v", err))
	}
	return nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
