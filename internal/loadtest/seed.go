package loadtest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
)

// ProviderSpec names a provider to seed with a given number of versions.
type ProviderSpec struct {
	Type     string
	Versions int
}

// ModuleSpec names a module to seed with a given number of versions.
type ModuleSpec struct {
	Name, System string
	Versions     int
}

// OSArch is one platform of a provider version.
type OSArch struct{ OS, Arch string }

// Spec says what Seed writes.
type Spec struct {
	Namespace string
	// Providers are seeded first, with exactly the versions given.
	Providers []ProviderSpec
	// TotalVersions is the number of versions in the whole index: filler
	// providers named "p00001", "p00002", ... with FillerVersions versions
	// each (the last one fewer) make up what Providers lack.
	TotalVersions  int
	FillerVersions int
	// Platforms every version is published for.
	Platforms []OSArch
	// ArchiveType names the provider (one of Providers) whose newest
	// version's ArchivePlatform package is a real blob of ArchiveBytes
	// random bytes; every other package exists only in the index.
	ArchiveType     string
	ArchivePlatform OSArch
	ArchiveBytes    int64
	// Workers is the number of concurrent index writers (default 4).
	Workers int
	// Interleave feeds the writers round-robin across providers (the
	// first version of each, then the second of each, ...) rather than
	// provider by provider: an index that serializes the publishes of one
	// provider (PostgreSQL locks its row) then lets the writers run in
	// parallel.
	Interleave bool
	// Modules are seeded after the providers. The versions of one module
	// share one small real tar.gz archive (moduleArchive), so that the
	// OCI API can pack its zip; modules.v1 never reads the archives.
	Modules []ModuleSpec
	// ModuleMirror, when its Namespace is set, seeds a second namespace
	// holding every module of Modules again, as the module mirror stores
	// what it has mirrored, and the mirror upstream it maps to.
	ModuleMirror ModuleMirrorSpec
}

// ModuleMirrorSpec is the module mirror of a seeded index: Namespace is
// mapped with `trove serve --module-mirror Namespace=Host/<Spec.Namespace>`
// to the upstream Host, which serves the modules.v1 documents of Spec's
// modules (ModuleUpstream). Seed stores the upstream (ServiceURL, every
// module of the upstream namespace allowed) and every module version in
// Namespace, as the mirror stores the versions it fetched: the warm,
// already-mirrored state that users of a mirror in use hit.
type ModuleMirrorSpec struct {
	Namespace string
	// Host is the upstream's host with its port (a loopback address).
	Host string
	// ServiceURL is the upstream's providers.v1 URL; the module mirror
	// finds the modules.v1 URL in /.well-known/terraform.json at its
	// origin.
	ServiceURL string
}

// DefaultSpec is the index the load test runs against: acme/small with
// 30 versions, acme/large with 2,000, filler providers of 200 versions up
// to 100,000 versions in total, each on four platforms, a 50 MiB archive
// for linux_amd64 of acme/small's newest version, and modules:
// acme/network/aws with 30 versions and DefaultFillerModules more of 10
// versions each (m001/aws, m002/aws, ...), for the realistic mix, each
// with a description and metadata like a real module's (moduleMetadata),
// for the web UI rows, and the same modules again in the module mirror's
// namespace DefaultMirrorNamespace (Run fills in its upstream). The
// namespaces are public.
func DefaultSpec() Spec {
	mods := []ModuleSpec{{Name: "network", System: "aws", Versions: 30}}
	for i := 1; i <= DefaultFillerModules; i++ {
		mods = append(mods, ModuleSpec{Name: fmt.Sprintf("m%03d", i), System: "aws", Versions: 10})
	}
	return Spec{
		Namespace:       "acme",
		Providers:       []ProviderSpec{{Type: "small", Versions: 30}, {Type: "large", Versions: 2000}},
		TotalVersions:   100_000,
		FillerVersions:  200,
		Platforms:       []OSArch{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}},
		ArchiveType:     "small",
		ArchivePlatform: OSArch{"linux", "amd64"},
		ArchiveBytes:    50 << 20,
		Workers:         4,
		Modules:         mods,
		// Run fills in the upstream's Host and ServiceURL.
		ModuleMirror: ModuleMirrorSpec{Namespace: DefaultMirrorNamespace},
	}
}

// DefaultMirrorNamespace is the namespace of DefaultSpec's module mirror.
const DefaultMirrorNamespace = "mirrored"

// DefaultFillerModules is the number of modules DefaultSpec seeds besides
// acme/network/aws.
const DefaultFillerModules = 299

// Archive is the one real package blob of a seeded index.
type Archive struct {
	Type, Version string
	OSArch
	Filename string
	SHA256   string
	Size     int64
	// File is a copy of the archive outside the blob store.
	File string
}

// Seeded summarises a seeded index.
type Seeded struct {
	Namespace string
	Providers int
	Versions  int
	Packages  int
	// ModuleVersions counts the versions of every seeded module (the
	// mirrored ones not included); MirroredModuleVersions those of the
	// module mirror's namespace.
	ModuleVersions         int
	MirroredModuleVersions int
	Archive                Archive
	Took                   time.Duration
}

// plan expands s into the providers to seed, checking it.
func (s Spec) plan() ([]ProviderSpec, error) {
	if _, err := registry.ParseNamespace(s.Namespace); err != nil {
		return nil, err
	}
	if len(s.Platforms) == 0 {
		return nil, registry.Errorf(registry.Invalid, "seed: no platforms")
	}
	for _, p := range append(s.Platforms, s.ArchivePlatform) {
		if err := registry.ValidatePlatform(p.OS, p.Arch); err != nil {
			return nil, err
		}
	}
	if s.ArchiveBytes <= 0 || s.ArchiveBytes > 4<<30 {
		return nil, registry.Errorf(registry.Invalid, "seed: archive size must be between 1 byte and 4 GiB, got %d", s.ArchiveBytes)
	}
	var provs []ProviderSpec
	total, hasArchive := 0, false
	for _, p := range s.Providers {
		if _, err := registry.ParseProviderType(p.Type); err != nil {
			return nil, err
		}
		if p.Versions < 1 {
			return nil, registry.Errorf(registry.Invalid, "seed: provider %s needs at least one version", p.Type)
		}
		hasArchive = hasArchive || p.Type == s.ArchiveType
		total += p.Versions
		provs = append(provs, p)
	}
	if !hasArchive {
		return nil, registry.Errorf(registry.Invalid, "seed: the archive's provider %q is not among the providers", s.ArchiveType)
	}
	for _, m := range s.Modules {
		if _, err := registry.ParseModuleName(m.Name); err != nil {
			return nil, err
		}
		if _, err := registry.ParseModuleSystem(m.System); err != nil {
			return nil, err
		}
		if m.Versions < 1 || m.Versions > 10_000 {
			return nil, registry.Errorf(registry.Invalid, "seed: module %s/%s needs 1 to 10,000 versions, got %d", m.Name, m.System, m.Versions)
		}
	}
	if mm := s.ModuleMirror; mm.Namespace != "" {
		ns, err := registry.ParseNamespace(mm.Namespace)
		if err != nil {
			return nil, err
		}
		if ns == s.Namespace {
			return nil, registry.Errorf(registry.Invalid, "seed: the module mirror's namespace must differ from %s", s.Namespace)
		}
		if len(s.Modules) == 0 {
			return nil, registry.Errorf(registry.Invalid, "seed: a module mirror needs modules to mirror")
		}
	}
	if s.TotalVersions > 1_000_000 {
		return nil, registry.Errorf(registry.Invalid, "seed: at most 1,000,000 versions, got %d", s.TotalVersions)
	}
	if rest := s.TotalVersions - total; rest > 0 {
		if s.FillerVersions < 1 {
			return nil, registry.Errorf(registry.Invalid, "seed: filler providers need at least one version each")
		}
		for i := 1; rest > 0; i++ {
			n := min(rest, s.FillerVersions)
			provs = append(provs, ProviderSpec{Type: fmt.Sprintf("p%05d", i), Versions: n})
			rest -= n
		}
	}
	return provs, nil
}

// VersionAt returns the i-th version (i >= 0) of a seeded provider: valid
// semver, increasing with i, every 50th a pre-release.
func VersionAt(i int) string {
	v := strconv.Itoa(i/100) + "." + strconv.Itoa(i/10%10) + "." + strconv.Itoa(i%10)
	if i%50 == 49 {
		v += "-rc.1"
	}
	return v
}

// SeedIndex is the part of the index Seed writes to. A store.Index is one.
type SeedIndex interface {
	store.Namespaces
	store.MirrorUpstreams
	store.SigningKeys
	store.Providers
	store.Modules
}

// Seed writes spec into idx and blobs, which must be empty, and writes a
// copy of the archive to archiveFile. Versions go through the ordinary
// store.Index API, one transaction each, from spec.Workers goroutines.
func Seed(ctx context.Context, idx SeedIndex, blobs store.Blobs, spec Spec, archiveFile string) (Seeded, error) {
	began := time.Now()
	provs, err := spec.plan()
	if err != nil {
		return Seeded{}, err
	}
	if mm := spec.ModuleMirror; mm.Namespace != "" {
		if u, err := url.Parse(mm.ServiceURL); err != nil || mm.Host == "" || u.Host != mm.Host || (u.Scheme != "http" && u.Scheme != "https") {
			return Seeded{}, registry.Errorf(registry.Invalid, "seed: the module mirror needs the upstream's host and a service URL on it, got %q and %q", mm.Host, mm.ServiceURL)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: spec.Namespace, Description: "load test", Visibility: registry.VisibilityPublic, CreatedAt: now}); err != nil {
		return Seeded{}, err
	}
	key, err := newSigningKey(spec.Namespace)
	if err != nil {
		return Seeded{}, err
	}
	key.Namespace, key.CreatedAt = spec.Namespace, now
	if err := idx.AddSigningKey(ctx, key); err != nil {
		return Seeded{}, err
	}

	archive, err := writeArchive(ctx, blobs, spec, provs, archiveFile)
	if err != nil {
		return Seeded{}, err
	}
	// Every version shares one real SHA256SUMS and signature blob: the
	// OCI API states their sizes when it generates a provider's
	// repository (the referrer of each index); no other row reads them.
	sums, err := putBlob(ctx, blobs, []byte("load test SHA256SUMS of spec "+spec.Namespace+"\n"))
	if err != nil {
		return Seeded{}, err
	}
	sig, err := putBlob(ctx, blobs, []byte("load test signature of the SHA256SUMS of "+spec.Namespace))
	if err != nil {
		return Seeded{}, err
	}

	workers := spec.Workers
	if workers < 1 {
		workers = 4
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan registry.ProviderVersion, 4*workers)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		written  atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range jobs {
				if err := idx.CreateProviderVersion(ctx, v); err != nil {
					once.Do(func() {
						firstErr = fmt.Errorf("seeding %s/%s %s: %w", v.Namespace, v.Type, v.Version, err)
						cancel()
					})
					continue
				}
				written.Add(1)
			}
		}()
	}
	res := Seeded{Namespace: spec.Namespace, Providers: len(provs), Archive: archive}
feed:
	for typ, i := range feedOrder(provs, spec.Interleave) {
		v := seedVersion(spec, key, now, typ, i)
		v.SHASumsDigest, v.SHASumsSignatureDigest = sums.digest, sig.digest
		if typ == archive.Type && v.Version == archive.Version {
			for j := range v.Platforms {
				if v.Platforms[j].OS == archive.OS && v.Platforms[j].Arch == archive.Arch {
					v.Platforms[j].SHA256, v.Platforms[j].Size = archive.SHA256, archive.Size
				}
			}
		}
		select {
		case jobs <- v:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return Seeded{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Seeded{}, registry.Wrap(registry.Unavailable, err, "seeding interrupted")
	}
	res.Versions = int(written.Load())
	res.Packages = res.Versions * len(spec.Platforms)
	mm := spec.ModuleMirror
	if mm.Namespace != "" {
		if err := idx.CreateNamespace(ctx, registry.Namespace{Name: mm.Namespace, Description: "load test: modules mirrored from " + mm.Host + "/" + spec.Namespace,
			Visibility: registry.VisibilityPublic, CreatedAt: now}); err != nil {
			return Seeded{}, err
		}
		if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{Host: mm.Host, ServiceURL: mm.ServiceURL,
			Allow: []registry.MirrorRule{{Provider: spec.Namespace + "/*"}}, Description: "load test module upstream", CreatedAt: now, UpdatedAt: now}); err != nil {
			return Seeded{}, err
		}
	}
	for mi, m := range spec.Modules {
		// One metadata document per module, the same for all its
		// versions: realistic pages at no cost to the seeding time.
		metadata, description := moduleMetadata(spec.Namespace, m, mi), moduleDescription(mi)
		arch, err := putBlob(ctx, blobs, moduleArchive(spec.Namespace, m))
		if err != nil {
			return Seeded{}, err
		}
		for i := range m.Versions {
			v := seedModuleVersion(spec.Namespace, m, i, now, metadata, description)
			v.ArchiveDigest, v.ArchiveSize = arch.digest, arch.size
			if err := idx.CreateModuleVersion(ctx, v); err != nil {
				return Seeded{}, fmt.Errorf("seeding module %s/%s/%s %s: %w", spec.Namespace, m.Name, m.System, VersionAt(i), err)
			}
			res.ModuleVersions++
			if mm.Namespace == "" {
				continue
			}
			// What the module mirror stores for a version it fetched from
			// an archive location: the same archive, in its namespace.
			v.Namespace = mm.Namespace
			v.Origin = fmt.Sprintf("mirrored from %s/%s/%s/%s %s, archive sha256 %s", mm.Host, spec.Namespace, m.Name, m.System, v.Version, arch.digest)
			if err := idx.CreateModuleVersion(ctx, v); err != nil {
				return Seeded{}, fmt.Errorf("seeding mirrored module %s/%s/%s %s: %w", mm.Namespace, m.Name, m.System, v.Version, err)
			}
			res.MirroredModuleVersions++
		}
	}
	res.Took = time.Since(began)
	return res, nil
}

// feedOrder yields every (provider type, version index) of provs: provider
// by provider, or with interleave round-robin across them.
func feedOrder(provs []ProviderSpec, interleave bool) iter.Seq2[string, int] {
	return func(yield func(string, int) bool) {
		if !interleave {
			for _, p := range provs {
				for i := range p.Versions {
					if !yield(p.Type, i) {
						return
					}
				}
			}
			return
		}
		for i, more := 0, true; more; i++ {
			more = false
			for _, p := range provs {
				if i < p.Versions {
					more = true
					if !yield(p.Type, i) {
						return
					}
				}
			}
		}
	}
}

// seedModuleVersion returns the i-th version of module m, with a made-up
// archive digest (Seed puts the real one in) and the given metadata
// (moduleMetadata) and description.
func seedModuleVersion(namespace string, m ModuleSpec, i int, now time.Time, metadata []byte, description string) registry.ModuleVersion {
	ver := VersionAt(i)
	return registry.ModuleVersion{
		Namespace: namespace, Name: m.Name, System: m.System, Version: ver,
		ArchiveDigest: fakeDigest("module", m.Name, m.System, ver), ArchiveFormat: "tar.gz", ArchiveSize: 16<<10 + int64(i),
		Metadata: metadata, Description: description, Origin: "trove-loadtest", PublishedAt: now,
	}
}

// seedVersion returns the i-th version of provider typ, with made-up
// digests for its packages and SHA256SUMS.
func seedVersion(spec Spec, key registry.SigningKey, now time.Time, typ string, i int) registry.ProviderVersion {
	ver := VersionAt(i)
	v := registry.ProviderVersion{
		Namespace:              spec.Namespace,
		Type:                   typ,
		Version:                ver,
		Protocols:              []string{"5.0"},
		SHASumsDigest:          fakeDigest("sums", typ, ver),
		SHASumsSignatureDigest: fakeDigest("sig", typ, ver),
		SigningKey:             key,
		PublishedAt:            now,
		Platforms:              make([]registry.Platform, len(spec.Platforms)),
	}
	for j, p := range spec.Platforms {
		name := "terraform-provider-" + typ + "_" + ver + "_" + p.OS + "_" + p.Arch + ".zip"
		v.Platforms[j] = registry.Platform{
			OS: p.OS, Arch: p.Arch, Filename: name,
			SHA256: fakeDigest("zip", name),
			Size:   20<<20 + int64(i*len(spec.Platforms)+j),
		}
	}
	return v
}

// storedBlob is a blob Seed stored: its hex SHA-256 and size.
type storedBlob struct {
	digest string
	size   int64
}

// putBlob stores body as a blob.
func putBlob(ctx context.Context, blobs store.Blobs, body []byte) (storedBlob, error) {
	sum := sha256.Sum256(body)
	b := storedBlob{digest: hex.EncodeToString(sum[:]), size: int64(len(body))}
	return b, blobs.Put(ctx, b.digest, b.size, bytes.NewReader(body))
}

// moduleArchive returns the archive every version of module m shares: a
// tar.gz of a main.tf and a README, the same bytes every time.
func moduleArchive(namespace string, m ModuleSpec) []byte {
	files := []struct{ name, body string }{
		{"README.md", "# " + m.Name + "\n\nA module of the Trove load test (" + namespace + "/" + m.Name + "/" + m.System + ").\n"},
		{"main.tf", "variable \"name\" {\n  type    = string\n  default = \"" + m.Name + "\"\n}\n\noutput \"name\" {\n  value = var.name\n}\n"},
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		// Writing to memory cannot fail.
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0).UTC()})
		_, _ = io.WriteString(tw, f.body)
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func fakeDigest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeArchive writes spec.ArchiveBytes pseudo-random bytes to file and
// stores them as a blob.
func writeArchive(ctx context.Context, blobs store.Blobs, spec Spec, provs []ProviderSpec, file string) (Archive, error) {
	a := Archive{Type: spec.ArchiveType, OSArch: spec.ArchivePlatform, Size: spec.ArchiveBytes, File: file}
	for _, p := range provs {
		if p.Type == spec.ArchiveType {
			a.Version = VersionAt(newestIndex(p.Versions))
		}
	}
	a.Filename = "terraform-provider-" + a.Type + "_" + a.Version + "_" + a.OS + "_" + a.Arch + ".zip"

	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return Archive{}, registry.Wrap(registry.Internal, err, "creating the archive file")
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	rng := rand.NewChaCha8([32]byte{'t', 'r', 'o', 'v', 'e'})
	if _, err := io.CopyN(bw, rng, a.Size); err != nil {
		f.Close()
		return Archive{}, registry.Wrap(registry.Internal, err, "writing the archive file")
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return Archive{}, registry.Wrap(registry.Internal, err, "writing the archive file")
	}
	if err := f.Close(); err != nil {
		return Archive{}, registry.Wrap(registry.Internal, err, "writing the archive file")
	}
	a.SHA256 = hex.EncodeToString(h.Sum(nil))

	r, err := os.Open(file)
	if err != nil {
		return Archive{}, registry.Wrap(registry.Internal, err, "reopening the archive file")
	}
	defer r.Close()
	if err := blobs.Put(ctx, a.SHA256, a.Size, r); err != nil {
		return Archive{}, err
	}
	return a, nil
}

// newestIndex returns the i < n whose VersionAt has the highest
// precedence: the last one, unless it is a pre-release.
func newestIndex(n int) int {
	i := n - 1
	if i > 0 && i%50 == 49 {
		i--
	}
	return i
}

// newSigningKey generates an RSA 3072 key, as gpg's classic default, and
// returns it as Trove parses an uploaded one.
func newSigningKey(name string) (registry.SigningKey, error) {
	e, err := openpgp.NewEntity(name, "Trove load test", name+"@example.invalid", &packet.Config{RSABits: 3072})
	if err != nil {
		return registry.SigningKey{}, registry.Wrap(registry.Internal, err, "generating the signing key")
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return registry.SigningKey{}, registry.Wrap(registry.Internal, err, "armoring the signing key")
	}
	if err := e.Serialize(w); err != nil {
		return registry.SigningKey{}, registry.Wrap(registry.Internal, err, "serializing the signing key")
	}
	if err := w.Close(); err != nil {
		return registry.SigningKey{}, registry.Wrap(registry.Internal, err, "armoring the signing key")
	}
	return signing.ParsePublicKey(buf.String())
}
