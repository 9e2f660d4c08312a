package oci

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
)

// Media and artifact types (confirmed in OpenTofu 1.12's
// internal/getproviders and internal/getmodules; see docs/oci.md).
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeEmpty    = "application/vnd.oci.empty.v1+json"
	MediaTypeZip      = "archive/zip"

	ArtifactProvider       = "application/vnd.opentofu.provider"
	ArtifactProviderTarget = "application/vnd.opentofu.provider-target"
	ArtifactModule         = "application/vnd.opentofu.modulepkg"
	// ArtifactSignature is the artifact type of the referrer Trove
	// attaches to each provider index: the version's SHA256SUMS and its
	// detached OpenPGP signature as two layers.
	ArtifactSignature = "application/vnd.trove.provider-shasums"
	MediaTypeSHASums  = "text/plain; charset=utf-8"
	MediaTypeSig      = "application/pgp-signature"
	// ArtifactSigningKey is the artifact type of the referrer holding
	// the public key that signed the version's SHA256SUMS (one layer,
	// ASCII-armored: MediaTypePGPKeys).
	ArtifactSigningKey = "application/vnd.trove.signing-key"
	MediaTypePGPKeys   = "application/pgp-keys"
	// ArtifactProvenance is the artifact type of the referrer holding the
	// version's signed provenance (docs/provenance.md): one layer, the
	// DSSE envelope of an in-toto statement (MediaTypeDSSE).
	ArtifactProvenance = "application/vnd.in-toto+json"
	MediaTypeDSSE      = "application/vnd.dsse.envelope.v1+json"
)

// emptyConfig is the OCI empty descriptor's content ("{}"), the config of
// every artifact manifest Trove generates.
var emptyConfig = []byte("{}")

// emptyDigest is the digest of emptyConfig.
var emptyDigest = digestOf(emptyConfig)

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	Platform     *Platform         `json:"platform,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// Platform is a descriptor's platform (OS and architecture only).
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Subject       *Descriptor       `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ImageIndex is an OCI image index.
type ImageIndex struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType,omitempty"`
	Manifests     []Descriptor      `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// doc is one generated manifest or index: its bytes and descriptor.
type doc struct {
	desc Descriptor
	body []byte
}

// blobRef is a blob a repository may serve: one of the store (size
// known) or emptyConfig.
type blobRef struct {
	size int64
	mem  []byte // served from memory when not nil
	// origin is the registry.PackageOrigin of a mirrored package: the
	// mirror fetches it if the store does not hold it.
	origin string
}

// repo is every document of one repository, generated from the index.
type repo struct {
	tags      []string          // sorted (byte order)
	byTag     map[string]string // tag -> manifest digest
	docs      map[string]doc    // digest -> manifest or index
	blobs     map[string]blobRef
	referrers map[string][]Descriptor // subject digest -> referrers
	// pending maps the tags of an upstream's provider versions the
	// mirror may serve but does not hold whole yet to their versions:
	// their documents are made when a client asks for one (mirror.go).
	pending map[string]string
}

func newRepo() *repo {
	return &repo{byTag: map[string]string{}, docs: map[string]doc{}, blobs: map[string]blobRef{}, referrers: map[string][]Descriptor{}}
}

// size is the memory r takes, roughly, for the cache's byte budget.
func (r *repo) size() int64 {
	n := int64(256)
	for _, t := range r.tags {
		n += int64(len(t)) + 150
	}
	for _, d := range r.docs {
		n += int64(len(d.body)) + 200
	}
	return n + int64(len(r.blobs))*120
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TagOf is the OCI tag of a version: semver with "+" written as "_"
// (OCI tags may not hold "+"), as OpenTofu maps them.
func TagOf(version string) string { return strings.ReplaceAll(version, "+", "_") }

// VersionOf is the version a tag names (the inverse of TagOf).
func VersionOf(tag string) string { return strings.ReplaceAll(tag, "_", "+") }

// add stores a generated document under its digest.
func (r *repo) add(mediaType, artifactType string, v any, platform *Platform) (Descriptor, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Descriptor{}, err
	}
	d := Descriptor{MediaType: mediaType, ArtifactType: artifactType, Digest: digestOf(body), Size: int64(len(body)), Platform: platform}
	r.docs[d.Digest] = doc{desc: d, body: body}
	return d, nil
}

func (r *repo) tag(tag, digest string) {
	r.byTag[tag] = digest
	r.tags = append(r.tags, tag)
}

func (r *repo) finish() {
	slices.Sort(r.tags)
	r.tags = slices.Compact(r.tags)
}

func emptyConfigDesc() Descriptor {
	return Descriptor{MediaType: MediaTypeEmpty, Digest: emptyDigest, Size: int64(len(emptyConfig))}
}

// providerRepo generates the repository of a provider: per version an
// index (artifactType ArtifactProvider) of one image manifest per
// platform (ArtifactProviderTarget) whose one layer is the provider's zip
// (its digest is the zip's SHA-256, the lock file's zh: hash), plus a
// referrer of the index holding SHA256SUMS and its signature. Revoked
// versions are left out. The same versions give the same bytes.
// stat gives the sizes of the SHA256SUMS blobs (hex digests). The index
// has two more referrers: the public key that signed SHA256SUMS, and,
// when prov (which may be nil) finds one, the version's signed
// provenance.
func providerRepo(vs []registry.ProviderVersion, stat func(digest string) (int64, error), prov func(registry.ProviderVersion) ([]byte, error)) (*repo, error) {
	r := newRepo()
	r.blobs[emptyDigest] = blobRef{size: int64(len(emptyConfig)), mem: emptyConfig}
	for _, v := range vs {
		if v.Revocation != nil || len(v.Platforms) == 0 {
			continue
		}
		ps := slices.Clone(v.Platforms)
		slices.SortFunc(ps, func(a, b registry.Platform) int {
			if c := strings.Compare(a.OS, b.OS); c != 0 {
				return c
			}
			return strings.Compare(a.Arch, b.Arch)
		})
		idx := ImageIndex{SchemaVersion: 2, MediaType: MediaTypeIndex, ArtifactType: ArtifactProvider, Manifests: []Descriptor{}}
		for _, p := range ps {
			if !p.Packaged() {
				continue // a mirrored package not held yet
			}
			layer := Descriptor{MediaType: MediaTypeZip, Digest: "sha256:" + p.SHA256, Size: p.Size,
				Annotations: map[string]string{"org.opencontainers.image.title": p.Filename}}
			r.blobs[layer.Digest] = blobRef{size: p.Size}
			m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, ArtifactType: ArtifactProviderTarget,
				Config: emptyConfigDesc(), Layers: []Descriptor{layer}}
			d, err := r.add(MediaTypeManifest, ArtifactProviderTarget, m, &Platform{OS: p.OS, Architecture: p.Arch})
			if err != nil {
				return nil, err
			}
			idx.Manifests = append(idx.Manifests, d)
		}
		if len(idx.Manifests) == 0 {
			continue
		}
		id, err := r.add(MediaTypeIndex, ArtifactProvider, idx, nil)
		if err != nil {
			return nil, err
		}
		r.tag(TagOf(v.Version), id.Digest)
		if v.SHASumsDigest == "" || v.SHASumsSignatureDigest == "" {
			continue
		}
		sumsSize, err := stat(v.SHASumsDigest)
		if err != nil {
			return nil, err
		}
		sigSize, err := stat(v.SHASumsSignatureDigest)
		if err != nil {
			return nil, err
		}
		sums := Descriptor{MediaType: MediaTypeSHASums, Digest: "sha256:" + v.SHASumsDigest, Size: sumsSize,
			Annotations: map[string]string{"org.opencontainers.image.title": v.SHASumsFilename()}}
		sig := Descriptor{MediaType: MediaTypeSig, Digest: "sha256:" + v.SHASumsSignatureDigest, Size: sigSize,
			Annotations: map[string]string{"org.opencontainers.image.title": v.SHASumsSignatureFilename()}}
		r.blobs[sums.Digest] = blobRef{size: sumsSize}
		r.blobs[sig.Digest] = blobRef{size: sigSize}
		subject := id
		ref, err := r.add(MediaTypeManifest, ArtifactSignature, Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest,
			ArtifactType: ArtifactSignature, Config: emptyConfigDesc(), Subject: &subject, Layers: []Descriptor{sums, sig}}, nil)
		if err != nil {
			return nil, err
		}
		r.referrers[id.Digest] = append(r.referrers[id.Digest], ref)
		if armor := v.SigningKey.ASCIIArmor; armor != "" {
			if err := r.attach(id, ArtifactSigningKey, MediaTypePGPKeys, []byte(armor), "signing-key-"+v.SigningKey.KeyID+".asc"); err != nil {
				return nil, err
			}
		}
		if prov != nil {
			envelope, err := prov(v)
			if err != nil {
				return nil, err
			}
			if envelope != nil {
				if err := r.attach(id, ArtifactProvenance, MediaTypeDSSE, envelope, "provenance.json"); err != nil {
					return nil, err
				}
			}
		}
	}
	r.finish()
	return r, nil
}

// attach adds a referrer of subject: an artifact of artifactType whose
// one layer is data (of mediaType, named title), served from memory.
func (r *repo) attach(subject Descriptor, artifactType, mediaType string, data []byte, title string) error {
	layer := Descriptor{MediaType: mediaType, Digest: digestOf(data), Size: int64(len(data)),
		Annotations: map[string]string{"org.opencontainers.image.title": title}}
	r.blobs[layer.Digest] = blobRef{size: layer.Size, mem: data}
	ref, err := r.add(MediaTypeManifest, artifactType, Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest,
		ArtifactType: artifactType, Config: emptyConfigDesc(), Subject: &subject, Layers: []Descriptor{layer}}, nil)
	if err != nil {
		return err
	}
	r.referrers[subject.Digest] = append(r.referrers[subject.Digest], ref)
	return nil
}

// moduleVersion is what a module repository needs of one version: its
// tag, the digest and size of its deterministic zip, and its signed
// provenance envelope (nil without one).
type moduleVersion struct {
	version    string
	zip        string // sha256:<hex>
	size       int64
	provenance []byte
}

// moduleRepo generates the repository of a module: per version one image
// manifest (artifactType ArtifactModule) whose one layer is the
// version's deterministic zip, tagged by its version; "latest" tags the
// newest release (or the newest version when none is a release). A
// version with provenance has it as a referrer of its manifest (artifact
// type ArtifactProvenance, one DSSE layer), as a provider version's index
// has.
func moduleRepo(vs []moduleVersion) (*repo, error) {
	r := newRepo()
	r.blobs[emptyDigest] = blobRef{size: int64(len(emptyConfig)), mem: emptyConfig}
	vs = slices.Clone(vs)
	registry.SortNewestFirst(vs, func(v moduleVersion) string { return v.version })
	latest := ""
	for _, v := range vs {
		layer := Descriptor{MediaType: MediaTypeZip, Digest: v.zip, Size: v.size}
		r.blobs[v.zip] = blobRef{size: v.size}
		m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, ArtifactType: ArtifactModule,
			Config: emptyConfigDesc(), Layers: []Descriptor{layer}}
		d, err := r.add(MediaTypeManifest, ArtifactModule, m, nil)
		if err != nil {
			return nil, err
		}
		r.tag(TagOf(v.version), d.Digest)
		if len(v.provenance) > 0 {
			if err := r.attach(d, ArtifactProvenance, MediaTypeDSSE, v.provenance, "provenance.json"); err != nil {
				return nil, err
			}
		}
		if pv, err := registry.ParseVersion(v.version); latest == "" && err == nil && pv.Prerelease() == "" {
			latest = d.Digest
		}
	}
	if latest == "" && len(vs) > 0 {
		latest = r.byTag[TagOf(vs[0].version)]
	}
	if latest != "" {
		r.tag("latest", latest)
	}
	r.finish()
	return r, nil
}

// providerTags is the sorted tag list of providerRepo for the versions
// vs summarises, from the summaries alone (no platform is read, no
// document is generated).
func providerTags(vs []registry.ProviderVersionSummary) []string {
	tags := make([]string, 0, len(vs))
	for _, v := range vs {
		if !v.Revoked && v.Packaged { // the versions providerRepo tags
			tags = append(tags, TagOf(v.Version))
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// moduleTags is the sorted tag list of moduleRepo for versions, with
// "latest" when there is any version, and the tag "latest" names: the
// newest release, or the newest version when none is a release.
func moduleTags(versions []string) (tags []string, latest string) {
	vs := slices.Clone(versions)
	registry.SortNewestFirst(vs, func(v string) string { return v })
	for _, v := range vs {
		tags = append(tags, TagOf(v))
		if pv, err := registry.ParseVersion(v); latest == "" && err == nil && pv.Prerelease() == "" {
			latest = TagOf(v)
		}
	}
	if latest == "" && len(vs) > 0 {
		latest = TagOf(vs[0])
	}
	if latest != "" {
		tags = append(tags, "latest")
	}
	slices.Sort(tags)
	return slices.Compact(tags), latest
}
