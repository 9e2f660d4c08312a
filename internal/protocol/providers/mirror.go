package providers

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/signedurl"
)

// The provider network mirror protocol, which Terraform and OpenTofu use
// when a CLI configuration says
//
//	provider_installation { network_mirror { url = "https://<trove>/v1/mirror/" } }
//
// serves every provider, Trove's own and those of upstream registries,
// under its origin host name:
//
//	GET /v1/mirror/<host>/<namespace>/<type>/index.json
//	    {"versions":{"1.2.0":{},...}}
//	GET /v1/mirror/<host>/<namespace>/<type>/<version>.json
//	    {"archives":{"linux_amd64":{"url":"...","hashes":["h1:...","zh:..."]}}}
//
// Trove's own providers (host: the public URL's) answer from the index,
// under the same access rules as providers.v1. Other hosts answer from a
// MirrorSource (the pull-through cache, internal/mirror), or 404 without
// one. The archive URLs are signed file URLs, as in download documents:
// the clients fetch archives without credentials. The documents are
// cached like the providers.v1 ones; an own provider's are dropped with
// them by Invalidate, a mirrored provider's by InvalidateMirrored.
const (
	MirrorBasePath = "/v1/mirror/"
	RouteMirror    = "GET " + MirrorBasePath + "{host}/{namespace}/{type}/{file}"
)

// MirrorSource supplies the providers of other registries to the network
// mirror. Host, namespace and type are passed normalized.
type MirrorSource interface {
	// MirroredVersions returns the versions of a provider that may be
	// installed through the mirror. NotFound when host is not an upstream,
	// the provider is not allowed or has no versions.
	MirroredVersions(ctx context.Context, host, namespace, typ string) ([]string, error)
	// MirroredVersion returns one version with its platforms: each
	// package's SHA256 from the upstream's verified SHA256SUMS, its H1
	// once the mirror holds it. NotFound as for MirroredVersions, or when
	// there is no such version.
	MirroredVersion(ctx context.Context, host, namespace, typ, version string) (registry.ProviderVersion, error)
}

// WithMirror serves the providers of other hosts on the network mirror
// routes from src.
func WithMirror(src MirrorSource) Option {
	return func(s *Service) { s.mirror = src }
}

// InvalidateMirrored drops the cached mirror documents of a provider of
// another host (normalized names), after the mirror stored a version or
// a package of it.
func (s *Service) InvalidateMirrored(host, namespace, typ string) {
	s.cache.InvalidateOwner(provKey{host: host, ns: namespace, typ: typ})
}

// The documents of the mirror protocol.
type (
	mirrorIndexDoc struct {
		Versions map[string]struct{} `json:"versions"`
	}
	mirrorVersionDoc struct {
		Archives map[string]mirrorArchive `json:"archives"`
	}
	mirrorArchive struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	}
)

func (s *Service) serveMirror(w http.ResponseWriter, r *http.Request) {
	s.ServeMirror(w, r, MirrorPath{Host: r.PathValue("host"), Namespace: r.PathValue("namespace"), Type: r.PathValue("type"), File: r.PathValue("file")})
}

// MirrorPath holds the path values of RouteMirror.
type MirrorPath struct{ Host, Namespace, Type, File string }

// ServeMirror answers RouteMirror for its path values (see ServeVersions).
func (s *Service) ServeMirror(w http.ResponseWriter, r *http.Request, mp MirrorPath) {
	// A hit on the raw path values means they were valid and normalized:
	// only a miss pays for parsing them (host names go through IDNA).
	pk, dk, raw := rawMirrorKey(mp, s.ownHost, s.ownAlias)
	var e *entry
	if raw {
		e = s.cache.Lookup(pk, dk)
	}
	if e == nil {
		var err error
		if pk, dk, err = s.parseMirrorRequest(mp); err != nil {
			s.writeError(w, r, err)
			return
		}
		e = s.cache.Lookup(pk, dk)
	}
	private, now := false, reqtime.Of(w)
	if pk.host == "" { // one of Trove's own providers
		rd, err := s.authorize(r, now, pk, dk, true, mirrorNotFound)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		private = rd.Private
	} else if s.mirror == nil {
		s.writeError(w, r, registry.Errorf(registry.NotFound, "provider %s/%s/%s is not mirrored: this registry mirrors no other registries", pk.host, pk.ns, pk.typ))
		return
	} else if s.guard != nil {
		if err := s.guard.MirrorRead(r); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	signer := s.signer
	if private {
		signer = s.private
	}
	st := s.cache.StateAt(e, now)
	expiry := signer.ExpiryAt(now).Unix()
	if dk.kind == docMirrorVersion && st != respcache.Expired && (e.Value.expiry != expiry || e.Value.private != private) {
		st = downloadState(e, expiry, private, s.now.At(now).Unix())
	}
	switch st {
	case respcache.Stale:
		if s.cache.ShouldRevalidate(e) {
			ck, cd := pk.clone(), dk.clone() // the cache keeps the key: never the request's memory
			s.cache.Revalidate(ck, cd, e, s.mirrorRenderer(ck, cd, signer, private))
		}
		fallthrough
	case respcache.Fresh:
		writeEntry(w, r, e, private)
		return
	}
	pk, dk = pk.clone(), dk.clone()
	e, err := s.cache.Load(r.Context(), pk, dk, e, s.mirrorRenderer(pk, dk, signer, private))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeEntry(w, r, e, private)
}

// rawMirrorKey returns the cache key of a mirror request's path values as
// they are (ownHost and ownAlias, already normalized, stand for Trove's own host, the
// empty host), pointing into the request's memory; ok is false for a
// file that is no document of the protocol.
func rawMirrorKey(mp MirrorPath, ownHost, ownAlias string) (pk provKey, dk docKey, ok bool) {
	pk = provKey{host: mp.Host, ns: mp.Namespace, typ: mp.Type}
	if pk.host == ownHost || pk.host == ownAlias {
		pk.host = ""
	}
	switch file := mp.File; {
	case file == "index.json":
		return pk, docKey{kind: docMirrorIndex}, true
	case strings.HasSuffix(file, ".json"):
		return pk, docKey{kind: docMirrorVersion, version: strings.TrimSuffix(file, ".json")}, true
	}
	return pk, docKey{}, false
}

// parseMirrorRequest validates and normalizes the path of a mirror
// request. The keys it returns own their strings. Trove's own host is
// the empty host, so that an own provider's mirror documents share their
// owner with its providers.v1 documents (and Invalidate).
func (s *Service) parseMirrorRequest(mp MirrorPath) (provKey, docKey, error) {
	rawHost, file := mp.Host, mp.File
	host, err := svchost.ForComparison(rawHost)
	if err != nil {
		return provKey{}, docKey{}, registry.Errorf(registry.NotFound, "%q is not a registry host name: %v", registry.Elide(rawHost), err)
	}
	pk, err := parseProvider(provKey{ns: mp.Namespace, typ: mp.Type})
	if err != nil {
		return provKey{}, docKey{}, err
	}
	pk = pk.clone()
	if h := host.String(); h != s.ownHost && h != s.ownAlias {
		pk.host = h
	}
	switch {
	case file == "index.json":
		return pk, docKey{kind: docMirrorIndex}, nil
	case strings.HasSuffix(file, ".json"):
		v, err := registry.ParseVersion(strings.TrimSuffix(file, ".json"))
		if err != nil {
			return provKey{}, docKey{}, registry.Errorf(registry.NotFound, "provider %s/%s has no version %q: %s", pk.ns, pk.typ, registry.Elide(strings.TrimSuffix(file, ".json")), registry.Message(err))
		}
		return pk, docKey{kind: docMirrorVersion, version: strings.Clone(v.String())}, nil
	}
	return provKey{}, docKey{}, registry.Errorf(registry.NotFound, "the mirror serves a provider's index.json and one JSON document per version (1.2.0.json), not %q", registry.Elide(file))
}

// mirrorNotFound is the answer for a mirror document of an own provider
// that does not exist or may not be read.
func mirrorNotFound(pk provKey, dk docKey) error {
	if dk.kind == docMirrorVersion {
		return versionNotFound(pk, dk)
	}
	return versionsNotFound(pk)
}

// mirrorRenderer renders a mirror document of pk (normalized, owning its
// strings) with archive URLs signed by signer.
func (s *Service) mirrorRenderer(pk provKey, dk docKey, signer *signedurl.Signer, private bool) respcache.RenderFunc[urls] {
	return func(ctx context.Context) (respcache.Rendered[urls], error) {
		if dk.kind == docMirrorIndex {
			versions, err := s.mirrorVersions(ctx, pk)
			if err != nil {
				return respcache.Rendered[urls]{}, err
			}
			body, err := renderMirrorIndex(versions)
			if err != nil {
				return respcache.Rendered[urls]{}, registry.Wrap(registry.Internal, err, "encoding the mirror index")
			}
			// Trove's own providers' index changes only through the
			// index; another registry's lists the upstream's versions.
			return respcache.Rendered[urls]{Body: body, Lasting: pk.host == ""}, nil
		}
		exp := signer.Expiry().Unix() // before signing, as in downloadRenderer
		v, err := s.mirrorVersion(ctx, pk, dk)
		if err != nil {
			return respcache.Rendered[urls]{}, err
		}
		body, err := json.Marshal(s.renderMirrorVersion(pk.host, v, signer))
		if err != nil {
			return respcache.Rendered[urls]{}, registry.Wrap(registry.Internal, err, "encoding the mirror version document")
		}
		return respcache.Rendered[urls]{Body: body, Value: urls{expiry: exp, private: private}}, nil
	}
}

// renderMirrorIndex renders the index.json of versions, the bytes
// json.Marshal gives for a mirrorIndexDoc (keys sorted, each once: equal
// lists give equal bytes), written directly: versions are sorted and
// written as they are, and only one holding a byte JSON might escape goes
// through json.Marshal.
func renderMirrorIndex(versions []string) ([]byte, error) {
	versions = slices.Clone(versions)
	slices.Sort(versions)
	versions = slices.Compact(versions)
	n := len(`{"versions":{}}`)
	for _, v := range versions {
		n += len(v) + len(`"":{},`)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"versions":{`...)
	for i, v := range versions {
		if i > 0 {
			b = append(b, ',')
		}
		if plainJSON(v) {
			b = append(b, '"')
			b = append(b, v...)
			b = append(b, '"')
		} else {
			q, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, q...)
		}
		b = append(b, `:{}`...)
	}
	return append(b, `}}`...), nil
}

// plainJSON reports whether s needs no escaping in a JSON string:
// letters, digits and ".+-_" only (what versions hold).
func plainJSON(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '.', c == '+', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// mirrorVersions returns the versions of pk from the index (own host) or
// the MirrorSource.
func (s *Service) mirrorVersions(ctx context.Context, pk provKey) ([]string, error) {
	if pk.host != "" {
		return s.mirror.MirroredVersions(ctx, pk.host, pk.ns, pk.typ)
	}
	vs, err := s.idx.ListProviderVersionSummaries(ctx, pk.ns, pk.typ)
	if registry.IsKind(err, registry.NotFound) || err == nil && len(vs) == 0 {
		return nil, versionsNotFound(pk)
	}
	if err != nil {
		return nil, err
	}
	versions := make([]string, 0, len(vs))
	for _, v := range vs {
		if !v.Revoked { // revoked: as in the versions document
			versions = append(versions, v.Version)
		}
	}
	return versions, nil
}

// mirrorVersion returns one version of pk from the index (own host) or
// the MirrorSource.
func (s *Service) mirrorVersion(ctx context.Context, pk provKey, dk docKey) (registry.ProviderVersion, error) {
	if pk.host != "" {
		return s.mirror.MirroredVersion(ctx, pk.host, pk.ns, pk.typ, dk.version)
	}
	v, err := s.idx.GetProviderVersion(ctx, pk.ns, pk.typ, dk.version)
	if registry.IsKind(err, registry.NotFound) {
		return v, versionNotFound(pk, dk)
	}
	return v, err
}

// renderMirrorVersion lists every package of v with a signed URL and its
// hashes: "zh:" (the zip's SHA-256, as SHA256SUMS lists it) and, where
// known, "h1:" (which the clients record in lock files). The URL of a
// mirrored provider's package (host is not "") is bound to its origin, so
// that the mirror fetches it from that provider's upstream.
func (s *Service) renderMirrorVersion(host string, v registry.ProviderVersion, signer *signedurl.Signer) mirrorVersionDoc {
	doc := mirrorVersionDoc{Archives: make(map[string]mirrorArchive, len(v.Platforms))}
	for _, p := range v.Platforms {
		hashes := make([]string, 0, 2)
		if p.H1 != "" {
			hashes = append(hashes, p.H1)
		}
		hashes = append(hashes, "zh:"+p.SHA256)
		slices.Sort(hashes)
		origin := ""
		if host != "" {
			origin = registry.PackageOrigin{Host: host, Namespace: v.Namespace, Type: v.Type, Version: v.Version, OS: p.OS, Arch: p.Arch}.String()
		}
		doc.Archives[p.OS+"_"+p.Arch] = mirrorArchive{URL: s.base + signer.PathFrom(p.SHA256, p.Filename, origin), Hashes: hashes}
	}
	return doc
}
