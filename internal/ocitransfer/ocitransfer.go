// Package ocitransfer copies providers and modules between a Trove server
// and an external OCI registry in OpenTofu's OCI layout (docs/oci.md):
// Push reads Trove's own OCI API (/v2/), checks every provider zip against
// the namespace's signed SHA256SUMS and writes the same documents, byte
// for byte, to the registry; Pull reads an artifact from a registry,
// checks every digest and, for providers, the SHA256SUMS signature against
// the target namespace's keys, and publishes it through Trove's API.
package ocitransfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/registry"
)

// Limits of the documents read from a registry.
const (
	maxManifestBytes = 4 << 20  // OpenTofu's own limit
	maxSumsBytes     = 1 << 20  // release.MaxSHASumsBytes
	maxSigBytes      = 64 << 10 // a detached signature
	maxPlatforms     = 256
	// maxBlobBytes bounds a provider or module zip a descriptor may
	// announce (Trove's own limits are lower; the server has the last
	// word): a hostile descriptor cannot make the copy fill the disk.
	maxBlobBytes = 4 << 30
)

// Registry is one side of a copy: a registry host and how to reach it.
type Registry struct {
	// Host is the registry's host[:port].
	Host string
	// Insecure speaks plain HTTP to Host.
	Insecure bool
	// Options are the go-containerregistry options of every request
	// (authentication, transport); the context is added per call.
	Options []remote.Option
}

func (r Registry) repo(path string) (name.Repository, error) {
	var opts []name.Option
	if r.Insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(r.Host+"/"+path, append(opts, name.StrictValidation)...)
	if err != nil {
		return name.Repository{}, registry.Errorf(registry.Invalid, "%q is not a valid OCI repository: %v", r.Host+"/"+path, err)
	}
	return repo, nil
}

func (r Registry) opts(ctx context.Context) []remote.Option {
	return append(append([]remote.Option{}, r.Options...), remote.WithContext(ctx))
}

// rawManifest is a manifest or index to write as it is.
type rawManifest struct {
	body      []byte
	mediaType string
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.body, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.MediaType(m.mediaType), nil }

// blob is a v1.Layer over bytes in memory or a file whose digest was
// checked, for remote.WriteLayer.
type blob struct {
	digest    v1.Hash
	size      int64
	mediaType string
	mem       []byte
	path      string
}

func (b *blob) Digest() (v1.Hash, error) { return b.digest, nil }
func (b *blob) DiffID() (v1.Hash, error) { return b.digest, nil }
func (b *blob) Size() (int64, error)     { return b.size, nil }
func (b *blob) MediaType() (types.MediaType, error) {
	return types.MediaType(b.mediaType), nil
}
func (b *blob) Compressed() (io.ReadCloser, error) {
	if b.mem != nil {
		return io.NopCloser(bytes.NewReader(b.mem)), nil
	}
	return os.Open(b.path)
}
func (b *blob) Uncompressed() (io.ReadCloser, error) { return b.Compressed() }

func memBlob(data []byte, mediaType string) *blob {
	sum := sha256.Sum256(data)
	return &blob{digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}, size: int64(len(data)), mediaType: mediaType, mem: data}
}

// errDigest is a blob or document whose bytes do not match its digest.
func errDigest(what, want, got string) error {
	return registry.Errorf(registry.Invalid, "%s: the registry sent content whose digest is sha256:%s, not %s (tampered or corrupted); nothing was copied", what, got, want)
}

// getDoc fetches a manifest or index by digest and checks its bytes
// against the digest and the expected media type.
func getDoc(ctx context.Context, reg Registry, repo name.Repository, d oci.Descriptor, what string) ([]byte, error) {
	if err := checkDigest(d.Digest); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if d.Size < 0 || d.Size > maxManifestBytes {
		return nil, registry.Errorf(registry.TooLarge, "%s: %d bytes, more than the %d MiB a manifest may have", what, d.Size, maxManifestBytes>>20)
	}
	got, err := remote.Get(repo.Digest(d.Digest), reg.opts(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("%s: fetching %s: %w", what, d.Digest, err)
	}
	return checkDoc(got.Manifest, string(got.MediaType), d, what)
}

// checkDoc checks a fetched document against its descriptor.
func checkDoc(body []byte, mediaType string, d oci.Descriptor, what string) ([]byte, error) {
	if sum := sha256Hex(body); "sha256:"+sum != d.Digest {
		return nil, errDigest(what, d.Digest, sum)
	}
	if int64(len(body)) != d.Size && d.Size != 0 {
		return nil, registry.Errorf(registry.Invalid, "%s: %d bytes, but its descriptor says %d", what, len(body), d.Size)
	}
	if d.MediaType != "" && mediaType != d.MediaType {
		return nil, registry.Errorf(registry.Invalid, "%s: media type %q, but its descriptor says %q", what, mediaType, d.MediaType)
	}
	return body, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkDigest accepts only sha256 digests of 64 lower-case hex digits.
func checkDigest(d string) error {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return registry.Errorf(registry.Invalid, "digest %q is not sha256:<64 lower-case hex digits>", registry.Elide(d))
	}
	return nil
}

// fetchSmall reads a small blob whole and checks its digest and size.
func fetchSmall(ctx context.Context, reg Registry, repo name.Repository, d oci.Descriptor, limit int64, what string) ([]byte, error) {
	if err := checkDigest(d.Digest); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if d.Size < 0 || d.Size > limit {
		return nil, registry.Errorf(registry.TooLarge, "%s: %d bytes, more than the %d KiB allowed", what, d.Size, limit>>10)
	}
	rc, err := openBlob(ctx, reg, repo, d.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil && !isDigestMismatch(err) {
		return nil, fmt.Errorf("%s: reading %s: %w", what, d.Digest, err)
	}
	if sum := sha256Hex(data); "sha256:"+sum != d.Digest {
		return nil, errDigest(what, d.Digest, sum)
	}
	if int64(len(data)) != d.Size {
		return nil, registry.Errorf(registry.Invalid, "%s: %d bytes, but its descriptor says %d", what, len(data), d.Size)
	}
	return data, nil
}

// fetchToFile copies a blob into a new file in dir, checking its size
// and digest; the caller removes dir.
func fetchToFile(ctx context.Context, reg Registry, repo name.Repository, d oci.Descriptor, dir, what string) (*blob, error) {
	if err := checkDigest(d.Digest); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if d.Size <= 0 {
		return nil, registry.Errorf(registry.Invalid, "%s: its descriptor gives no size", what)
	}
	if d.Size > maxBlobBytes {
		return nil, registry.Errorf(registry.TooLarge, "%s: its descriptor announces %d bytes, more than the %d GiB a package may have", what, d.Size, maxBlobBytes>>30)
	}
	rc, err := openBlob(ctx, reg, repo, d.Digest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(dir, "blob-*")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(rc, d.Size+1))
	if err != nil && !isDigestMismatch(err) {
		return nil, fmt.Errorf("%s: reading %s: %w", what, d.Digest, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); "sha256:"+sum != d.Digest {
		return nil, errDigest(what, d.Digest, sum)
	}
	if n != d.Size {
		return nil, registry.Errorf(registry.Invalid, "%s: %d bytes, but its descriptor says %d", what, n, d.Size)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	hash, _ := v1.NewHash(d.Digest)
	return &blob{digest: hash, size: n, mediaType: d.MediaType, path: f.Name()}, nil
}

// isDigestMismatch reports go-containerregistry's own digest check
// failing at the end of a blob: the check that follows reports it with
// the digests.
func isDigestMismatch(err error) bool {
	return err != nil && strings.Contains(err.Error(), "error verifying")
}

func openBlob(ctx context.Context, reg Registry, repo name.Repository, digest string) (io.ReadCloser, error) {
	l, err := remote.Layer(repo.Digest(digest), reg.opts(ctx)...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", digest, err)
	}
	return rc, nil
}

// decode parses a manifest or index strictly enough to check its shape.
func decode(body []byte, v any, what string) error {
	if err := json.Unmarshal(body, v); err != nil {
		return registry.Errorf(registry.Invalid, "%s is not valid JSON: %v", what, err)
	}
	return nil
}

// zipLayer checks that m is an artifact of artifactType with exactly one
// archive/zip layer, and returns that layer.
func zipLayer(m oci.Manifest, artifactType, what string) (oci.Descriptor, error) {
	if m.SchemaVersion != 2 || m.MediaType != oci.MediaTypeManifest {
		return oci.Descriptor{}, registry.Errorf(registry.Invalid, "%s is not an OCI image manifest (schemaVersion 2, mediaType %s)", what, oci.MediaTypeManifest)
	}
	if m.ArtifactType != artifactType {
		return oci.Descriptor{}, registry.Errorf(registry.Invalid, "%s has artifactType %q, want %q", what, registry.Elide(m.ArtifactType), artifactType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != oci.MediaTypeZip {
		return oci.Descriptor{}, registry.Errorf(registry.Invalid, "%s must have exactly one layer of media type %s", what, oci.MediaTypeZip)
	}
	return m.Layers[0], nil
}

// Logf reports progress; nil discards it.
type Logf func(format string, args ...any)

func (l Logf) printf(format string, args ...any) {
	if l != nil {
		l(format, args...)
	}
}

// notFound reports whether err is a registry's 404.
func notFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// authHint adds what to do to a registry's refusal of the credentials.
func authHint(err error, host string) error {
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("%w\nThe registry %s refused the request (%d): give credentials it accepts for the repository, "+
			"with docker login %s (read from the Docker/Podman configuration) or --username NAME --password-stdin", err, host, te.StatusCode, host)
	}
	return err
}
