package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"
	"github.com/hashicorp/terraform-svchost/disco"
	"golang.org/x/sync/singleflight"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/staging"
)

// ModuleMapping maps a namespace of Trove to a module namespace of an
// upstream registry: the modules Trove serves under Namespace are the
// upstream's modules of UpstreamNamespace, mirrored.
type ModuleMapping struct {
	Namespace         string // of Trove, normalized
	Host              string // an upstream's host, as configured
	UpstreamNamespace string // as the upstream spells it
}

// String is the mapping as an operator writes it.
func (m ModuleMapping) String() string { return m.Namespace + "=" + m.Host + "/" + m.UpstreamNamespace }

// ParseModuleMapping reads "NAMESPACE=HOST/UPSTREAM_NAMESPACE", for
// example "tfaws=registry.terraform.io/terraform-aws-modules".
func ParseModuleMapping(s string) (ModuleMapping, error) {
	ns, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	host, upns, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || host == "" || upns == "" {
		return ModuleMapping{}, registry.Errorf(registry.Invalid, "module mirror %q: want NAMESPACE=HOST/UPSTREAM_NAMESPACE, e.g. tfaws=registry.terraform.io/terraform-aws-modules", registry.Elide(s))
	}
	var m ModuleMapping
	var err error
	if m.Namespace, err = registry.ParseNamespace(ns); err != nil {
		return m, registry.Errorf(registry.Invalid, "module mirror %q: %s", registry.Elide(s), registry.Message(err))
	}
	if _, err := modules.ParseAddress(m.Namespace, "x", "x", "1.0.0"); err != nil {
		return m, registry.Errorf(registry.Invalid, "module mirror %q: %s", registry.Elide(s), registry.Message(err))
	}
	h, err := svchost.ForComparison(host)
	if err != nil {
		return m, registry.Errorf(registry.Invalid, "module mirror %q: %q is not a host name: %v", registry.Elide(s), registry.Elide(host), err)
	}
	m.Host = string(h)
	if _, err := modules.ParseAddress(upns, "x", "x", "1.0.0"); err != nil {
		return m, registry.Errorf(registry.Invalid, "module mirror %q: %q is not a module namespace", registry.Elide(s), registry.Elide(upns))
	}
	m.UpstreamNamespace = upns
	return m, nil
}

// ModulePublisher stores a module version through the publish gate
// (*modules.Publisher; in trove serve operations.PublishMirroredModule,
// which commits the version's audit entry and event with it).
type ModulePublisher interface {
	Publish(ctx context.Context, up modules.Upload) (modules.Result, error)
}

// ModuleIndex is what the module mirror reads of the index.
type ModuleIndex interface {
	GetModuleVersion(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error)
}

// Defaults of ModuleOptions.
const (
	DefaultGitTimeout = 5 * time.Minute
)

// ModuleOptions configures the module mirror (Mirror.Modules).
type ModuleOptions struct {
	Mappings  []ModuleMapping
	Index     ModuleIndex
	Publisher ModulePublisher
	// MaxArchiveBytes bounds a downloaded archive, and MaxCheckoutBytes
	// a git fetch on disk (its objects and checkout).
	MaxArchiveBytes  int64
	MaxCheckoutBytes int64
	// GitTimeout bounds a git fetch (DefaultGitTimeout).
	GitTimeout time.Duration
}

// Modules mirrors upstream registries' modules into namespaces of Trove
// (see docs/mirror.md, "Modules"). It is safe for concurrent use.
type Modules struct {
	m        *Mirror
	opt      ModuleOptions
	byNS     map[string]ModuleMapping
	flights  singleflight.Group
	verMu    sync.Mutex
	versions map[string]cachedModuleVersions // by namespace/name/system
	baseMu   sync.Mutex
	bases    map[string]*url.URL // modules.v1 base URL by upstream host
}

type cachedModuleVersions struct {
	versions []string
	fetched  time.Time
}

// Modules returns the module mirror of m.
func (m *Mirror) Modules(opt ModuleOptions) *Modules {
	if opt.GitTimeout <= 0 {
		opt.GitTimeout = DefaultGitTimeout
	}
	if opt.MaxArchiveBytes <= 0 {
		opt.MaxArchiveBytes = 1 << 30
	}
	if opt.MaxCheckoutBytes <= 0 {
		opt.MaxCheckoutBytes = 2 << 30
	}
	mm := &Modules{m: m, opt: opt, byNS: make(map[string]ModuleMapping), versions: make(map[string]cachedModuleVersions), bases: make(map[string]*url.URL)}
	for _, mp := range opt.Mappings {
		mm.byNS[mp.Namespace] = mp
	}
	return mm
}

// Mirrored reports whether namespace (normalized) is mapped to an
// upstream.
func (mm *Modules) Mirrored(namespace string) bool {
	if mm == nil {
		return false
	}
	_, ok := mm.byNS[namespace]
	return ok
}

// moduleRef names a mirrored module: Trove's coordinates and the
// upstream's.
type moduleRef struct {
	mp                ModuleMapping
	namespace         string
	name, system      string
	upstreamNamespace string
}

func (r moduleRef) upstreamAddr() string {
	return r.mp.Host + "/" + r.upstreamNamespace + "/" + r.name + "/" + r.system
}

// upstream returns the upstream of a mirrored module and the rule that
// allows it: a rule "namespace/name" of the upstream's rules (the
// module's name in the place of a provider's type). Unavailable when the
// host is no longer an upstream, NotFound when no rule allows the module.
func (mm *Modules) upstream(ctx context.Context, namespace, name, system string) (*upstream, registry.MirrorRule, moduleRef, error) {
	mp, ok := mm.byNS[namespace]
	ref := moduleRef{mp: mp, namespace: namespace, name: name, system: system, upstreamNamespace: mp.UpstreamNamespace}
	if !ok {
		return nil, registry.MirrorRule{}, ref, registry.Errorf(registry.NotFound, "namespace %s is not a module mirror", namespace)
	}
	ups, err := mm.m.config(ctx)
	if err != nil {
		return nil, registry.MirrorRule{}, ref, err
	}
	u := ups[mp.Host]
	if u == nil {
		return nil, registry.MirrorRule{}, ref, registry.Errorf(registry.Unavailable, "namespace %s mirrors the modules of %s, which is not an upstream registry of this mirror (trove mirror upstream set %s ...)", namespace, mp.Host, mp.Host)
	}
	for _, rule := range u.cfg.Allow {
		if MatchProvider(rule.Provider, mp.UpstreamNamespace, name) {
			return u, rule, ref, nil
		}
	}
	return nil, registry.MirrorRule{}, ref, registry.Errorf(registry.NotFound, "module %s is not mirrored: no rule of upstream %s allows %s/%s", ref.upstreamAddr(), mp.Host, mp.UpstreamNamespace, name)
}

// modulesBase returns the upstream's modules.v1 base URL: from service
// discovery on its host, or, for an upstream configured with a service
// URL, from the discovery document at that URL's origin.
func (mm *Modules) modulesBase(ctx context.Context, u *upstream) (*url.URL, error) {
	mm.baseMu.Lock()
	base := mm.bases[u.cfg.Host]
	mm.baseMu.Unlock()
	if base != nil {
		return base, nil
	}
	if u.cfg.ServiceURL != "" {
		svc, err := url.Parse(u.cfg.ServiceURL)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "upstream %s: service URL %q does not parse: %v", u.cfg.Host, u.cfg.ServiceURL, err)
		}
		wk := &url.URL{Scheme: svc.Scheme, Host: svc.Host, Path: "/.well-known/terraform.json"}
		var doc map[string]any
		if err := u.getJSON(ctx, wk, maxDownloadDoc, &doc); err != nil {
			if errors.Is(err, errNotFound) {
				return nil, registry.Errorf(registry.Unavailable, "upstream %s: %s is missing, so its modules.v1 service cannot be found", u.cfg.Host, redact(wk))
			}
			return nil, err
		}
		s, _ := doc["modules.v1"].(string)
		if s == "" {
			return nil, registry.Errorf(registry.NotFound, "upstream %s offers no modules.v1 service", u.cfg.Host)
		}
		if base, err = u.resolve(wk, s); err != nil {
			return nil, registry.Errorf(registry.Unavailable, "upstream %s: its modules.v1 URL %v", u.cfg.Host, err)
		}
	} else {
		host, err := svchost.ForComparison(u.cfg.Host)
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "upstream %q is not a host name: %v", u.cfg.Host, err)
		}
		d := disco.New()
		d.Transport = u.client.Transport
		d.SetUserAgent(userAgent(u.client))
		base, err = d.DiscoverServiceURL(host, "modules.v1")
		if err != nil {
			return nil, registry.Wrap(registry.Unavailable, err, fmt.Sprintf("upstream %s: service discovery of modules.v1 failed", u.cfg.Host))
		}
		if base.Scheme != "https" {
			return nil, registry.Errorf(registry.Unavailable, "upstream %s: service discovery gives %s, which is not an https URL", u.cfg.Host, redact(base))
		}
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	mm.baseMu.Lock()
	mm.bases[u.cfg.Host] = base
	mm.baseMu.Unlock()
	return base, nil
}

func (mm *Modules) forgetBase(u *upstream) {
	mm.baseMu.Lock()
	delete(mm.bases, u.cfg.Host)
	mm.baseMu.Unlock()
}

// upstreamModuleVersions is the modules.v1 versions document.
type upstreamModuleVersions struct {
	Modules []struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
	} `json:"modules"`
}

// ModuleVersions returns the versions of a mirrored module that the
// upstream lists and its rule allows, read from the upstream at most
// every VersionsTTL (once for concurrent callers). The caller adds the
// versions Trove holds, and lists those alone when this fails with
// Unavailable (the upstream is down).
func (mm *Modules) ModuleVersions(ctx context.Context, namespace, name, system string) ([]string, error) {
	u, rule, ref, err := mm.upstream(ctx, namespace, name, system)
	if err != nil {
		return nil, err
	}
	key := namespace + "/" + name + "/" + system
	now := mm.m.opt.Now()
	mm.verMu.Lock()
	c, ok := mm.versions[key]
	mm.verMu.Unlock()
	if !ok || now.Sub(c.fetched) >= mm.m.opt.VersionsTTL {
		v, err, _ := mm.flights.Do("versions "+key, func() (any, error) {
			vs, err := mm.fetchVersions(context.WithoutCancel(ctx), u, ref)
			mm.m.metrics.upstream(ref.mp.Host, "module_versions", err)
			if err != nil {
				return nil, err
			}
			mm.verMu.Lock()
			if len(mm.versions) >= maxCachedVersionDocs {
				for k := range mm.versions {
					delete(mm.versions, k)
					break
				}
			}
			mm.versions[key] = cachedModuleVersions{versions: vs, fetched: mm.m.opt.Now()}
			mm.verMu.Unlock()
			return vs, nil
		})
		if err != nil {
			return nil, err
		}
		c.versions = v.([]string)
	}
	var out []string
	for _, v := range c.versions {
		if allows(rule, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// fetchVersions reads the upstream's versions document of ref, keeping
// the versions Trove can serve (canonical semantic versions).
func (mm *Modules) fetchVersions(ctx context.Context, u *upstream, ref moduleRef) ([]string, error) {
	base, err := mm.modulesBase(ctx, u)
	if err != nil {
		return nil, err
	}
	var doc upstreamModuleVersions
	err = u.getJSON(ctx, base.JoinPath(ref.upstreamNamespace, ref.name, ref.system, "versions"), maxVersionsDoc, &doc)
	if errors.Is(err, errNotFound) {
		return nil, registry.Errorf(registry.NotFound, "module %s not found: upstream %s does not know it", ref.upstreamAddr(), ref.mp.Host)
	}
	if err != nil {
		mm.forgetBase(u)
		return nil, err
	}
	var vs []string
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			if len(vs) >= maxVersions {
				break
			}
			if _, err := registry.ParseVersion(v.Version); err == nil {
				vs = append(vs, v.Version)
			}
		}
	}
	return vs, nil
}

// FetchModule returns the stored module version, fetching it from the
// upstream first when Trove does not hold it yet: the download answer's
// location (a git ref or an https archive) is fetched, packed (git) or
// taken as is (archive), and published into the mapped namespace through
// the publish gate, which checks it as any upload. However many callers
// ask at once, it is fetched once. A version stored already is returned
// as it is, whatever the upstream says now: versions are immutable.
func (mm *Modules) FetchModule(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error) {
	if v, err := mm.opt.Index.GetModuleVersion(ctx, namespace, name, system, version); err == nil {
		mm.m.metrics.versions.WithLabelValues("module_held").Inc()
		return v, nil
	} else if !registry.IsKind(err, registry.NotFound) {
		return registry.ModuleVersion{}, err
	}
	key := namespace + "/" + name + "/" + system + "/" + version
	v, err, _ := mm.flights.Do("module "+key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mm.opt.GitTimeout+5*requestTimeout)
		defer cancel()
		// A flight that ended between the lookup above and this one
		// has stored the version: look again before fetching.
		if v, err := mm.opt.Index.GetModuleVersion(ctx, namespace, name, system, version); err == nil {
			return v, nil
		} else if !registry.IsKind(err, registry.NotFound) {
			return registry.ModuleVersion{}, err
		}
		return mm.fetch(ctx, namespace, name, system, version)
	})
	if err != nil {
		return registry.ModuleVersion{}, err
	}
	mm.m.metrics.versions.WithLabelValues("module_fetched").Inc()
	return v.(registry.ModuleVersion), nil
}

// fetch fetches one version from the upstream and publishes it.
func (mm *Modules) fetch(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error) {
	u, rule, ref, err := mm.upstream(ctx, namespace, name, system)
	if err != nil {
		return registry.ModuleVersion{}, err
	}
	what := ref.upstreamAddr() + " " + version
	if !allows(rule, version) {
		return registry.ModuleVersion{}, registry.Errorf(registry.NotFound, "module %s is not mirrored: rule %s allows %s only", what, rule.Provider, rule.Versions)
	}
	base, err := mm.modulesBase(ctx, u)
	if err != nil {
		return registry.ModuleVersion{}, unheld(err, what)
	}
	dlURL := base.JoinPath(ref.upstreamNamespace, name, system, version, "download")
	loc, err := mm.location(ctx, u, dlURL)
	mm.m.metrics.upstream(ref.mp.Host, "module_download", err)
	if errors.Is(err, errNotFound) {
		return registry.ModuleVersion{}, registry.Errorf(registry.NotFound, "module %s not found upstream", what)
	}
	if err != nil {
		mm.forgetBase(u)
		return registry.ModuleVersion{}, unheld(err, what)
	}
	src, err := parseModuleSource(dlURL, loc, u.allowHTTP)
	if err != nil {
		return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the download answer of %s: %v; refused, nothing was mirrored", ref.mp.Host, what, err))
	}
	guard := guardFor(privateUpstream(ctx, u.cfg))
	work, err := mm.m.stage.MkdirTemp("module-*.d")
	if err != nil {
		return registry.ModuleVersion{}, registry.Wrap(registry.Internal, err, "creating a staging directory for a mirrored module")
	}
	defer os.RemoveAll(work)
	archive := filepath.Join(work, "archive")
	var origin string
	if src.git {
		co, err := fetchGit(ctx, src, work, guard, mm.opt.GitTimeout, mm.opt.MaxCheckoutBytes)
		mm.m.metrics.upstream(ref.mp.Host, "module_git", err)
		if err != nil {
			if registry.IsKind(err, registry.UpstreamInvalid) || registry.IsKind(err, registry.TooLarge) {
				return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s: %s from %s: %s; refused, nothing was mirrored", ref.mp.Host, what, src, registry.Message(err)))
			}
			return registry.ModuleVersion{}, unheld(registry.Errorf(registry.Unavailable, "upstream %s: fetching %s failed: %v", ref.mp.Host, src, err), what)
		}
		f, err := os.Create(archive)
		if err != nil {
			return registry.ModuleVersion{}, registry.Wrap(registry.Internal, err, "staging a mirrored module")
		}
		err = packCheckout(f, co)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s: %s from %s cannot be packed: %s; refused, nothing was mirrored", ref.mp.Host, what, src, registry.Message(err)))
		}
		origin = fmt.Sprintf("mirrored from %s, git ref %s, commit %s", what, orDefault(src.ref, "HEAD"), co.commit)
	} else {
		n, digest, err := mm.download(ctx, u, guard, src, archive)
		mm.m.metrics.upstream(ref.mp.Host, "module_archive", err)
		if err != nil {
			if registry.IsKind(err, registry.TooLarge) {
				return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s: the archive of %s: %s; refused, nothing was mirrored", ref.mp.Host, what, registry.Message(err)))
			}
			return registry.ModuleVersion{}, unheld(withCause(registry.Unavailable, err, fmt.Sprintf("upstream %s: downloading %s failed: %s", ref.mp.Host, src, registry.Message(err))), what)
		}
		mm.m.metrics.bytes.WithLabelValues(ref.mp.Host).Add(float64(n))
		if src.checksum != "" && src.checksum != digest {
			return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s sent the archive of %s with SHA-256 %s, but its location demands %s; refused, nothing was mirrored", ref.mp.Host, what, digest, src.checksum))
		}
		origin = fmt.Sprintf("mirrored from %s, archive sha256 %s", what, digest)
	}
	if len(origin) > registry.MaxOriginLength {
		origin = origin[:registry.MaxOriginLength]
	}
	f, err := os.Open(archive)
	if err != nil {
		return registry.ModuleVersion{}, registry.Wrap(registry.Internal, err, "opening a staged mirrored module")
	}
	defer f.Close()
	res, err := mm.opt.Publisher.Publish(ctx, modules.Upload{
		Namespace: namespace, Name: name, System: system, Version: version, Origin: origin, Archive: f,
	})
	switch {
	case registry.IsKind(err, registry.Conflict):
		// Another fetch (another replica, or an import) stored other bytes:
		// the upstream changed what the version is (a tag moved).
		return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid,
			"upstream %s: %s now gives other files than the version Trove holds (%s): a version is immutable, Trove keeps serving what it holds; refused, nothing was changed", ref.mp.Host, what, registry.Message(err)))
	case registry.IsKind(err, registry.Invalid) || registry.IsKind(err, registry.TooLarge):
		return registry.ModuleVersion{}, mm.refuse(ctx, ref, what, registry.Errorf(registry.UpstreamInvalid, "upstream %s: %s is not a module Trove accepts: %s; refused, nothing was mirrored", ref.mp.Host, what, registry.Message(err)))
	case err != nil:
		return registry.ModuleVersion{}, err
	}
	mm.m.log.InfoContext(ctx, "mirrored a module version", "namespace", namespace, "module", name+"/"+system, "version", version,
		"upstream", ref.upstreamAddr(), "source", src.String(), "digest", res.Version.ArchiveDigest)
	return res.Version, nil
}

// refuse counts and logs a refused upstream module, and returns err.
func (mm *Modules) refuse(ctx context.Context, ref moduleRef, what string, err error) error {
	mm.m.metrics.refused.WithLabelValues(ref.mp.Host).Inc()
	mm.m.log.WarnContext(ctx, "mirror refused an upstream module", "module", what, "error", registry.Message(err))
	return err
}

// unheld is the answer for a version that could not be fetched.
func unheld(err error, what string) error {
	if !registry.IsKind(err, registry.Unavailable) {
		return err
	}
	return withCause(registry.Unavailable, err, fmt.Sprintf("%s; module %s is not held by this mirror", registry.Message(err), what))
}

// location asks the upstream's download endpoint for the location of a
// version: X-Terraform-Get of a 204 or 200, or a 200's JSON "location".
func (mm *Modules) location(ctx context.Context, u *upstream, target *url.URL) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := u.open(ctx, target)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if loc := resp.Header.Get("X-Terraform-Get"); loc != "" {
		return loc, nil
	}
	if resp.StatusCode == http.StatusOK {
		var doc struct {
			Location string `json:"location"`
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxDownloadDoc))
		if err != nil {
			return "", u.unavailable(target, err)
		}
		if json.Unmarshal(body, &doc) == nil && doc.Location != "" {
			return doc.Location, nil
		}
	}
	return "", registry.Errorf(registry.UpstreamInvalid, "upstream %s answered %s for %s without a location", u.cfg.Host, resp.Status, redact(target))
}

// download fetches an archive source into path, at most MaxArchiveBytes,
// and returns its size and SHA-256.
func (mm *Modules) download(ctx context.Context, u *upstream, g hostGuard, src moduleSource, path string) (int64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, mm.m.fetchTimeout)
	defer cancel()
	client := archiveClient(u, g)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.url.String(), nil)
	if err != nil {
		return 0, "", err
	}
	idle := newIdleBody(mm.m.opt.IdleTimeout, cancel, "upstream "+u.cfg.Host+" ("+redact(src.url)+")")
	defer idle.stop()
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", redactErr(err) // the cause without the URL's query, for the log
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, "", fmt.Errorf("%s answered %s", redact(src.url), resp.Status)
	}
	if resp.ContentLength > mm.opt.MaxArchiveBytes {
		return 0, "", registry.Errorf(registry.TooLarge, "the archive is %d bytes, more than the limit of %d", resp.ContentLength, mm.opt.MaxArchiveBytes)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	idle.r = resp.Body
	n, digest, err := staging.Copy(f, idle, mm.opt.MaxArchiveBytes, "the module archive")
	if err != nil {
		if idle.errStalled(err) {
			err = idle.stallErr(err)
		}
		return 0, "", err
	}
	return n, digest, f.Sync()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
