package ocitransfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/hashicorp/go-version"

	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

// Item is a provider (Namespace/Type) or a module
// (Namespace/Name/System) to copy, with the versions to copy: those
// Constraints allows (all when nil).
type Item struct {
	Namespace, Type    string // a provider when Type is set
	Name, System       string // a module when Name is set
	Constraints        version.Constraints
	ConstraintsVersion string // the text of Constraints, for messages
}

// Path is the repository of the item under a registry, the layout Trove
// serves: <namespace>/<type> or <namespace>/modules/<name>/<system>.
func (it Item) Path() string {
	if it.Type != "" {
		return it.Namespace + "/" + it.Type
	}
	return it.Namespace + "/modules/" + it.Name + "/" + it.System
}

// KeysFunc returns the public keys a namespace trusts.
type KeysFunc func(ctx context.Context, namespace string) ([]registry.SigningKey, error)

// Pusher copies items from a Trove server's OCI API to a registry.
type Pusher struct {
	Trove  Registry // the Trove server's /v2/
	Target Registry
	// Prefix is the repository path under Target the items go under
	// ("" for the registry's root): <prefix>/<namespace>/<type>.
	Prefix string
	Keys   KeysFunc
	// Protocols returns the protocol versions of a provider version (the
	// API's "protocols"), to write back the _manifest.json its SHA256SUMS
	// lists; nil leaves it out.
	Protocols func(ctx context.Context, namespace, typ, version string) ([]string, error)
	Log       Logf
	Now       func() time.Time
}

// Pushed is one version written to the target.
type Pushed struct {
	Repository string `json:"repository"` // host/path
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
}

func (p *Pusher) targetRepo(it Item) (name.Repository, error) {
	path := it.Path()
	if p.Prefix != "" {
		path = p.Prefix + "/" + path
	}
	return p.Target.repo(path)
}

// Push copies every version of it that its constraints allow. It checks
// everything it read before writing a version; a version already written
// is not undone when a later one fails.
func (p *Pusher) Push(ctx context.Context, it Item) ([]Pushed, error) {
	src, err := p.Trove.repo(it.Path())
	if err != nil {
		return nil, err
	}
	dst, err := p.targetRepo(it)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(src, p.Trove.opts(ctx)...)
	if err != nil {
		if notFound(err) {
			return nil, registry.Errorf(registry.NotFound, "%s: not found on the Trove server (or the token may not read it)", it.Path())
		}
		return nil, fmt.Errorf("listing the versions of %s: %w", it.Path(), err)
	}
	var chosen []string
	for _, tag := range tags {
		if tag == "latest" {
			continue
		}
		v, err := registry.ParseVersion(oci.VersionOf(tag))
		if err != nil {
			continue
		}
		if it.Constraints == nil || it.Constraints.Check(v) {
			chosen = append(chosen, tag)
		}
	}
	if len(chosen) == 0 {
		if it.Constraints != nil {
			return nil, registry.Errorf(registry.NotFound, "%s: no version matches %q", it.Path(), it.ConstraintsVersion)
		}
		return nil, registry.Errorf(registry.NotFound, "%s has no version to push", it.Path())
	}
	var keys []registry.SigningKey
	if it.Type != "" {
		if keys, err = p.Keys(ctx, it.Namespace); err != nil {
			return nil, fmt.Errorf("reading the signing keys of namespace %s: %w", it.Namespace, err)
		}
	}
	var out []Pushed
	for _, tag := range chosen {
		var digest string
		if it.Type != "" {
			digest, err = p.pushProvider(ctx, it, src, dst, tag, keys)
		} else {
			digest, err = p.pushModule(ctx, src, dst, tag)
		}
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", it.Path(), oci.VersionOf(tag), err)
		}
		out = append(out, Pushed{Repository: dst.Name(), Tag: tag, Digest: digest})
		p.Log.printf("Pushed %s:%s (%s)", dst.Name(), tag, digest)
	}
	if it.Name != "" {
		// "latest" follows the source when it names a version pushed now.
		if d, err := remote.Head(src.Tag("latest"), p.Trove.opts(ctx)...); err == nil {
			for _, o := range out {
				if o.Digest == d.Digest.String() {
					if err := p.put(ctx, dst.Tag("latest"), mustGet(ctx, p.Trove, src, o.Digest)); err != nil {
						return out, err
					}
				}
			}
		}
	}
	return out, nil
}

// mustGet fetches a document Push already checked (for re-tagging).
func mustGet(ctx context.Context, reg Registry, repo name.Repository, digest string) rawManifest {
	d, err := remote.Get(repo.Digest(digest), reg.opts(ctx)...)
	if err != nil || "sha256:"+sha256Hex(d.Manifest) != digest {
		return rawManifest{}
	}
	return rawManifest{body: d.Manifest, mediaType: string(d.MediaType)}
}

func (p *Pusher) put(ctx context.Context, ref name.Reference, m rawManifest) error {
	if m.body == nil {
		return registry.Errorf(registry.Internal, "%s: the document changed while it was copied; run the push again", ref)
	}
	if err := remote.Put(ref, m, p.Target.opts(ctx)...); err != nil {
		return authHint(fmt.Errorf("writing %s: %w", ref, err), p.Target.Host)
	}
	return nil
}

func (p *Pusher) writeBlob(ctx context.Context, dst name.Repository, b *blob) error {
	if err := remote.WriteLayer(dst, b, p.Target.opts(ctx)...); err != nil {
		return authHint(fmt.Errorf("uploading blob %s to %s: %w", b.digest, dst.Name(), err), p.Target.Host)
	}
	return nil
}

// getTagged fetches the document a tag names and checks it is of
// mediaType.
func getTagged(ctx context.Context, reg Registry, repo name.Repository, tag, mediaType string) ([]byte, oci.Descriptor, error) {
	d, err := remote.Get(repo.Tag(tag), reg.opts(ctx)...)
	if err != nil {
		return nil, oci.Descriptor{}, authHint(fmt.Errorf("fetching tag %s: %w", tag, err), reg.Host)
	}
	if string(d.MediaType) != mediaType {
		return nil, oci.Descriptor{}, registry.Errorf(registry.Invalid, "tag %s names a %s, want an %s", tag, d.MediaType, mediaType)
	}
	if len(d.Manifest) > maxManifestBytes {
		return nil, oci.Descriptor{}, registry.Errorf(registry.TooLarge, "tag %s: the document is larger than %d MiB", tag, maxManifestBytes>>20)
	}
	desc := oci.Descriptor{MediaType: mediaType, Digest: "sha256:" + sha256Hex(d.Manifest), Size: int64(len(d.Manifest))}
	if d.Digest.String() != desc.Digest {
		return nil, oci.Descriptor{}, errDigest("tag "+tag, d.Digest.String(), sha256Hex(d.Manifest))
	}
	return d.Manifest, desc, nil
}

// providerVersion is a provider version read from a registry and checked:
// its index, platform manifests, zips and signed SHA256SUMS.
type providerVersion struct {
	index     []byte
	indexDesc oci.Descriptor
	manifests []rawManifest
	zips      []*blob
	filenames []string // the zips' names in SHA256SUMS
	sums, sig []byte
	referrer  []byte // the signature artifact's manifest, as read
	extras    []extraFile
	listed    map[string]string // SHA256SUMS: file name -> sha256:<hex>
	keyID     string
}

// extraFile is a file of the release other than the zips that SHA256SUMS
// lists (the _manifest.json), carried as a further layer of the
// signature artifact.
type extraFile struct {
	name string
	data []byte
}

// readProvider reads and checks the provider version tag names in repo:
// the index's shape, each platform manifest's shape and digest, each zip's
// digest, and that SHA256SUMS (found as the index's referrer) is signed by
// one of keys and lists every zip's digest. The zips are fetched into dir.
func readProvider(ctx context.Context, reg Registry, repo name.Repository, tag string, keys []registry.SigningKey, now time.Time, dir string) (*providerVersion, error) {
	body, desc, err := getTagged(ctx, reg, repo, tag, oci.MediaTypeIndex)
	if err != nil {
		return nil, err
	}
	pv := &providerVersion{index: body, indexDesc: desc}
	var idx oci.ImageIndex
	if err := decode(body, &idx, "the index"); err != nil {
		return nil, err
	}
	if idx.SchemaVersion != 2 || idx.ArtifactType != oci.ArtifactProvider {
		return nil, registry.Errorf(registry.Invalid, "tag %s is not an OpenTofu provider (an image index with artifactType %s)", tag, oci.ArtifactProvider)
	}
	if len(idx.Manifests) == 0 || len(idx.Manifests) > maxPlatforms {
		return nil, registry.Errorf(registry.Invalid, "the index of tag %s lists %d platforms, want 1 to %d", tag, len(idx.Manifests), maxPlatforms)
	}
	sums, sig, ref, layers, err := readSignature(ctx, reg, repo, desc)
	if err != nil {
		return nil, err
	}
	key, err := signing.VerifyDetachedAt(keys, sums, sig, now)
	if err != nil {
		return nil, fmt.Errorf("SHA256SUMS: the signature does not verify with a key the namespace trusts: %s", registry.Message(err))
	}
	parsed, err := release.ParseSHA256SUMS(sums)
	if err != nil {
		return nil, fmt.Errorf("SHA256SUMS: %w", err)
	}
	listed := map[string]string{}
	pv.listed = map[string]string{}
	for _, s := range parsed {
		listed["sha256:"+s.Digest] = s.Filename
		pv.listed[s.Filename] = "sha256:" + s.Digest
	}
	pv.sums, pv.sig, pv.referrer, pv.keyID = sums, sig, ref, key.KeyID
	for _, l := range layers {
		title := l.Annotations["org.opencontainers.image.title"]
		if title == "" || strings.HasSuffix(title, ".zip") || pv.listed[title] != l.Digest {
			return nil, registry.Errorf(registry.Invalid, "the SHA256SUMS artifact carries a file %q that the signed SHA256SUMS does not list with digest %s", registry.Elide(title), l.Digest)
		}
		data, err := fetchSmall(ctx, reg, repo, l, release.MaxManifestBytes, title)
		if err != nil {
			return nil, err
		}
		pv.extras = append(pv.extras, extraFile{name: title, data: data})
	}
	seen := map[string]bool{}
	for _, md := range idx.Manifests {
		if md.Platform == nil || md.Platform.OS == "" || md.Platform.Architecture == "" || md.ArtifactType != oci.ArtifactProviderTarget {
			return nil, registry.Errorf(registry.Invalid, "the index of tag %s lists a manifest without a platform or artifactType %s", tag, oci.ArtifactProviderTarget)
		}
		plat := md.Platform.OS + "_" + md.Platform.Architecture
		if seen[plat] {
			return nil, registry.Errorf(registry.Invalid, "the index of tag %s lists platform %s twice", tag, plat)
		}
		seen[plat] = true
		what := "the manifest of " + plat
		mb, err := getDoc(ctx, reg, repo, oci.Descriptor{MediaType: oci.MediaTypeManifest, Digest: md.Digest, Size: md.Size}, what)
		if err != nil {
			return nil, err
		}
		var m oci.Manifest
		if err := decode(mb, &m, what); err != nil {
			return nil, err
		}
		layer, err := zipLayer(m, oci.ArtifactProviderTarget, what)
		if err != nil {
			return nil, err
		}
		filename, ok := listed[layer.Digest]
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "the %s package (%s) is not listed in the signed SHA256SUMS; refusing it", plat, layer.Digest)
		}
		zip, err := fetchToFile(ctx, reg, repo, layer, dir, "the "+plat+" package")
		if err != nil {
			return nil, err
		}
		pv.manifests = append(pv.manifests, rawManifest{body: mb, mediaType: oci.MediaTypeManifest})
		pv.zips = append(pv.zips, zip)
		pv.filenames = append(pv.filenames, filename)
	}
	return pv, nil
}

// readSignature finds the SHA256SUMS artifact among the referrers of
// index and returns SHA256SUMS, its signature and the artifact's manifest.
func readSignature(ctx context.Context, reg Registry, repo name.Repository, index oci.Descriptor) (sums, sig, manifest []byte, extra []oci.Descriptor, err error) {
	refs, err := remote.Referrers(repo.Digest(index.Digest), reg.opts(ctx)...)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("listing the referrers of %s: %w", index.Digest, err)
	}
	im, err := refs.IndexManifest()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for _, d := range im.Manifests {
		if d.ArtifactType != oci.ArtifactSignature {
			continue
		}
		body, err := getDoc(ctx, reg, repo, oci.Descriptor{MediaType: oci.MediaTypeManifest, Digest: d.Digest.String(), Size: d.Size}, "the SHA256SUMS artifact")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		var m oci.Manifest
		if err := decode(body, &m, "the SHA256SUMS artifact"); err != nil {
			return nil, nil, nil, nil, err
		}
		if m.ArtifactType != oci.ArtifactSignature || m.Subject == nil || m.Subject.Digest != index.Digest || len(m.Layers) < 2 || len(m.Layers) > 4 ||
			m.Layers[0].MediaType != oci.MediaTypeSHASums || m.Layers[1].MediaType != oci.MediaTypeSig {
			return nil, nil, nil, nil, registry.Errorf(registry.Invalid, "the SHA256SUMS artifact %s does not have Trove's shape (subject: the index; layers: SHA256SUMS, its signature, then at most two files SHA256SUMS lists)", d.Digest)
		}
		if sums, err = fetchSmall(ctx, reg, repo, m.Layers[0], maxSumsBytes, "SHA256SUMS"); err != nil {
			return nil, nil, nil, nil, err
		}
		if sig, err = fetchSmall(ctx, reg, repo, m.Layers[1], maxSigBytes, "the SHA256SUMS signature"); err != nil {
			return nil, nil, nil, nil, err
		}
		return sums, sig, body, m.Layers[2:], nil
	}
	return nil, nil, nil, nil, registry.Errorf(registry.Invalid,
		"no signed SHA256SUMS is attached to %s (a referrer of artifactType %s): the packages cannot be verified", index.Digest, oci.ArtifactSignature)
}

// pushProvider copies one provider version after checking it whole.
func (p *Pusher) pushProvider(ctx context.Context, it Item, src, dst name.Repository, tag string, keys []registry.SigningKey) (string, error) {
	dir, err := os.MkdirTemp("", "trove-oci-push-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	pv, err := readProvider(ctx, p.Trove, src, tag, keys, p.now(), dir)
	if err != nil {
		return "", err
	}
	p.Log.printf("Verified %s %s: SHA256SUMS signed by key %s lists all %d packages", it.Path(), oci.VersionOf(tag), pv.keyID, len(pv.zips))
	if err := p.writeBlob(ctx, dst, memBlob([]byte("{}"), oci.MediaTypeEmpty)); err != nil {
		return "", err
	}
	for i, z := range pv.zips {
		if err := p.writeBlob(ctx, dst, z); err != nil {
			return "", err
		}
		m := pv.manifests[i]
		if err := p.put(ctx, dst.Digest("sha256:"+sha256Hex(m.body)), m); err != nil {
			return "", err
		}
	}
	if err := p.put(ctx, dst.Tag(tag), rawManifest{body: pv.index, mediaType: oci.MediaTypeIndex}); err != nil {
		return "", err
	}
	for _, b := range []*blob{memBlob(pv.sums, oci.MediaTypeSHASums), memBlob(pv.sig, oci.MediaTypeSig)} {
		if err := p.writeBlob(ctx, dst, b); err != nil {
			return "", err
		}
	}
	referrer, extras, err := p.withManifestFile(ctx, it, tag, pv)
	if err != nil {
		return "", err
	}
	for _, b := range extras {
		if err := p.writeBlob(ctx, dst, b); err != nil {
			return "", err
		}
	}
	if err := p.put(ctx, dst.Digest("sha256:"+sha256Hex(referrer)), rawManifest{body: referrer, mediaType: oci.MediaTypeManifest}); err != nil {
		return "", err
	}
	return pv.indexDesc.Digest, nil
}

// MediaTypeReleaseFile is the media type of a further layer of the
// SHA256SUMS artifact: a release file SHA256SUMS lists that is not a zip
// (the _manifest.json), so that a pull can publish the release whole.
const MediaTypeReleaseFile = "application/vnd.trove.provider-release-file"

// withManifestFile returns the signature artifact to write: Trove's own,
// plus, when SHA256SUMS lists the release's _manifest.json and the
// artifact lacks it, a layer holding it (Trove keeps the protocols it
// declares, not its bytes: the document is written again in the forms
// release tools write and kept only if its digest is the one SHA256SUMS
// lists).
func (p *Pusher) withManifestFile(ctx context.Context, it Item, tag string, pv *providerVersion) ([]byte, []*blob, error) {
	ver := oci.VersionOf(tag)
	name := "terraform-provider-" + it.Type + "_" + ver + "_manifest.json"
	want, listed := pv.listed[name]
	if !listed || p.Protocols == nil {
		return pv.referrer, nil, nil
	}
	for _, e := range pv.extras {
		if e.name == name {
			return pv.referrer, nil, nil
		}
	}
	protocols, err := p.Protocols(ctx, it.Namespace, it.Type, ver)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the protocols of the version: %w", err)
	}
	for _, doc := range manifestCandidates(protocols) {
		if "sha256:"+sha256Hex(doc) != want {
			continue
		}
		var m oci.Manifest
		if err := decode(pv.referrer, &m, "the SHA256SUMS artifact"); err != nil {
			return nil, nil, err
		}
		b := memBlob(doc, MediaTypeReleaseFile)
		m.Layers = append(m.Layers, oci.Descriptor{MediaType: MediaTypeReleaseFile, Digest: want, Size: int64(len(doc)),
			Annotations: map[string]string{"org.opencontainers.image.title": name}})
		body, err := json.Marshal(m)
		return body, []*blob{b}, err
	}
	p.Log.printf("Note: %s is listed in SHA256SUMS but could not be written again byte for byte; `trove oci pull` of this version will need it", name)
	return pv.referrer, nil, nil
}

// manifestCandidates are the forms of the _manifest.json release tools
// write for protocols: Trove's and goreleaser's compact one and the
// indented one of the provider scaffolding, each with and without a final
// newline.
func manifestCandidates(protocols []string) [][]byte {
	compact := release.ManifestJSON(protocols)
	quoted := make([]string, len(protocols))
	for i, p := range protocols {
		quoted[i] = strconv.Quote(p)
	}
	indented := []byte("{\n  \"version\": 1,\n  \"metadata\": {\n    \"protocol_versions\": [" + strings.Join(quoted, ", ") + "]\n  }\n}\n")
	return [][]byte{compact, bytes.TrimSuffix(compact, []byte("\n")), indented, bytes.TrimSuffix(indented, []byte("\n"))}
}

// moduleVersion is a module version read from a registry and checked.
type moduleVersion struct {
	manifest []byte
	desc     oci.Descriptor
	zip      *blob
}

func readModule(ctx context.Context, reg Registry, repo name.Repository, ref string, dir string) (*moduleVersion, error) {
	var body []byte
	var desc oci.Descriptor
	var err error
	if checkDigest(ref) == nil {
		desc = oci.Descriptor{MediaType: oci.MediaTypeManifest, Digest: ref}
		body, err = getDoc(ctx, reg, repo, desc, "the module manifest")
		desc.Size = int64(len(body))
	} else {
		body, desc, err = getTagged(ctx, reg, repo, ref, oci.MediaTypeManifest)
	}
	if err != nil {
		return nil, err
	}
	var m oci.Manifest
	if err := decode(body, &m, "the module manifest"); err != nil {
		return nil, err
	}
	layer, err := zipLayer(m, oci.ArtifactModule, "the module manifest")
	if err != nil {
		return nil, err
	}
	zip, err := fetchToFile(ctx, reg, repo, layer, dir, "the module package")
	if err != nil {
		return nil, err
	}
	return &moduleVersion{manifest: body, desc: desc, zip: zip}, nil
}

func (p *Pusher) pushModule(ctx context.Context, src, dst name.Repository, tag string) (string, error) {
	dir, err := os.MkdirTemp("", "trove-oci-push-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	mv, err := readModule(ctx, p.Trove, src, tag, dir)
	if err != nil {
		return "", err
	}
	if err := p.writeBlob(ctx, dst, memBlob([]byte("{}"), oci.MediaTypeEmpty)); err != nil {
		return "", err
	}
	if err := p.writeBlob(ctx, dst, mv.zip); err != nil {
		return "", err
	}
	if err := p.put(ctx, dst.Tag(tag), rawManifest{body: mv.manifest, mediaType: oci.MediaTypeManifest}); err != nil {
		return "", err
	}
	return mv.desc.Digest, nil
}

func (p *Pusher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
