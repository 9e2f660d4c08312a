package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
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
	// Modules are seeded after the providers, with made-up archive
	// digests: the module protocol answers never read the archives.
	Modules []ModuleSpec
}

// DefaultSpec is the index the load test runs against: acme/small with
// 30 versions, acme/large with 2,000, filler providers of 200 versions up
// to 100,000 versions in total, each on four platforms, a 50 MiB archive
// for linux_amd64 of acme/small's newest version, and modules:
// acme/network/aws with 30 versions and DefaultFillerModules more of 10
// versions each (m001/aws, m002/aws, ...), for the realistic mix, each
// with a description and metadata like a real module's (moduleMetadata),
// for the web UI rows. The namespace is public.
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
	}
}

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
	// ModuleVersions counts the versions of every seeded module.
	ModuleVersions int
	Archive        Archive
	Took           time.Duration
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
	for mi, m := range spec.Modules {
		// One metadata document per module, the same for all its
		// versions: realistic pages at no cost to the seeding time.
		metadata, description := moduleMetadata(spec.Namespace, m, mi), moduleDescription(mi)
		for i := range m.Versions {
			if err := idx.CreateModuleVersion(ctx, seedModuleVersion(spec.Namespace, m, i, now, metadata, description)); err != nil {
				return Seeded{}, fmt.Errorf("seeding module %s/%s/%s %s: %w", spec.Namespace, m.Name, m.System, VersionAt(i), err)
			}
			res.ModuleVersions++
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
// archive digest and the given metadata (moduleMetadata) and description.
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
