// Package publish owns the publish transaction of a provider release: it
// reads the release files in order, verifies the signature before accepting
// any archive byte, stages and checks every archive, moves the verified
// blobs into the blob store and commits the version in one index
// transaction. Nothing is stored unless every check passed, and a version
// becomes visible only when that transaction commits.
package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/staging"
	"trove.dev/trove/internal/store"
)

// Size limits of the small files of a release.
const (
	maxSHASumsBytes   = 1 << 20
	maxSignatureBytes = 64 << 10
	maxManifestBytes  = 64 << 10
)

// Index is the part of the index a Publisher uses: it checks the
// namespace, verifies signatures against the namespace's keys and stores
// provider versions. A store.Index is one.
type Index interface {
	store.Namespaces
	store.SigningKeys
	store.Providers
}

// Options configures a Publisher.
type Options struct {
	Index   Index
	Blobs   store.Blobs
	TempDir string // staging area for archives; on the blob store's filesystem when possible

	MaxZipBytes int64          // largest accepted archive; <= 0 means 1 GiB
	ZipLimits   release.Limits // entry count and unpacked size of each archive

	// Managed signs releases published without a signature with their
	// namespace's registry-managed key; nil: every release must carry its
	// signature.
	Managed *signing.Managed

	Logger *slog.Logger
	Now    func() time.Time
}

// Publisher publishes provider releases. It is safe for concurrent use.
type Publisher struct {
	opt   Options
	stage staging.Dir
}

// New returns a Publisher.
func New(opt Options) *Publisher {
	if opt.MaxZipBytes <= 0 {
		opt.MaxZipBytes = 1 << 30
	}
	if opt.ZipLimits == (release.Limits{}) {
		opt.ZipLimits = release.DefaultLimits
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Publisher{opt: opt, stage: staging.Dir{Path: opt.TempDir, Prefix: stagePrefix}}
}

// RemoveStaleUploads deletes archives staged by publishes that never
// finished, such as those of a process killed mid-upload. Call it at
// start-up, before serving: a staging directory belongs to one process.
func (p *Publisher) RemoveStaleUploads() error { return p.stage.RemoveStale() }

// stagePrefix starts the name of every staged archive in TempDir (see
// internal/staging).
const stagePrefix = "publish-"

// FileSource yields the files of a release in upload order. Next returns
// io.EOF after the last file; the reader it returns is valid until the
// next call.
type FileSource interface {
	Next() (name string, content io.Reader, err error)
}

// Result reports the outcome of a publish: Created is false when the
// identical release was already published.
type Result = registry.PublishResult[registry.ProviderVersion]

// PublishProvider publishes version of namespace/typ from src, whose files
// must come in this order: terraform-provider-<type>_<version>_SHA256SUMS,
// its .sig, optionally the _manifest.json and the documentation archive
// (_docs.tar.gz or _docs.zip, see providerdocs), then every zip SHA256SUMS
// lists.
// Every file after the .sig must be listed in SHA256SUMS with its digest,
// so that everything served is covered by the signature; any other file
// refuses the whole release.
// Re-publishing the same SHA256SUMS succeeds with Created false; other
// content for an existing version is a Conflict.
func (p *Publisher) PublishProvider(ctx context.Context, namespace, typ, version string, src FileSource) (Result, error) {
	ns, err := registry.ParseNamespace(namespace)
	if err != nil {
		return Result{}, err
	}
	if typ, err = registry.ParseProviderType(typ); err != nil {
		return Result{}, err
	}
	if _, err := registry.ParseVersion(version); err != nil {
		return Result{}, err
	}
	if _, err := p.opt.Index.GetNamespace(ctx, ns); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return Result{}, registry.Errorf(registry.NotFound, "namespace %q does not exist; create it with: trove namespace create %s", ns, ns)
		}
		return Result{}, err
	}
	pub := &publication{p: p, ctx: ctx, v: registry.ProviderVersion{
		Namespace: ns, Type: typ, Version: version, Protocols: []string{"5.0"},
	}}
	defer pub.cleanup()
	return pub.run(src)
}

// publication is the state of one PublishProvider call.
type publication struct {
	p   *Publisher
	ctx context.Context
	v   registry.ProviderVersion

	sums      []byte
	sig       []byte
	listed    map[string]string // SHA256SUMS: filename -> digest
	zips      map[string]release.PackageName
	staged    map[string]stagedFile // zip filename -> staged archive
	sawManife bool
	docsName  string     // the documentation archive SHA256SUMS lists, if any
	docs      stagedFile // that archive, staged and checked
}

type stagedFile struct {
	path string
	size int64
}

func (pub *publication) run(src FileSource) (Result, error) {
	v := &pub.v
	sumsName := v.SHASumsFilename()
	sigName := v.SHASumsSignatureFilename()
	manifestName := "terraform-provider-" + v.Type + "_" + v.Version + "_manifest.json"

	// 1. SHA256SUMS.
	name, r, err := src.Next()
	if err != nil {
		return Result{}, firstFileErr(err, sumsName)
	}
	if name != sumsName {
		return Result{}, registry.Errorf(registry.Invalid, "the first file must be %s (got %q)", sumsName, name)
	}
	if pub.sums, err = readSmall(r, name, maxSHASumsBytes); err != nil {
		return Result{}, err
	}
	sums, err := release.ParseSHA256SUMS(pub.sums)
	if err != nil {
		return Result{}, err
	}
	v.SHASumsDigest = digestOf(pub.sums)

	// An existing version: the same SHA256SUMS is an idempotent retry,
	// anything else is refused, both before the signature is judged (a
	// retry after the key expired still succeeds: the stored version was
	// verified when it was published) and before the archives are read.
	if existing, err := pub.stored(); err == nil {
		return pub.existing(existing)
	} else if !registry.IsKind(err, registry.NotFound) {
		return Result{}, err
	}

	// 2. Its signature, verified before any archive byte is accepted;
	// without one, the namespace's managed key signs (managed.go).
	name, r, err = src.Next()
	if err != nil && err != io.EOF {
		return Result{}, err
	}
	if err == io.EOF || name != sigName {
		if src, err = pub.signManaged(src, name, r, err); err != nil {
			return Result{}, err
		}
	} else {
		if pub.sig, err = readSmall(r, name, maxSignatureBytes); err != nil {
			return Result{}, err
		}
		keys, err := pub.p.opt.Index.ListSigningKeys(pub.ctx, v.Namespace)
		if err != nil {
			return Result{}, err
		}
		if len(keys) == 0 {
			return Result{}, registry.Errorf(registry.Invalid, "namespace %s has no signing keys; add the public key that signs its releases with: trove key add %s --file key.asc", v.Namespace, v.Namespace)
		}
		// Judged now: a key or signing subkey expired or revoked by now can
		// sign no new release, even if it signed this one while it was valid.
		if v.SigningKey, err = signing.VerifyDetachedAt(keys, pub.sums, pub.sig, pub.p.opt.Now()); err != nil {
			return Result{}, err
		}
	}
	v.SHASumsSignatureDigest = digestOf(pub.sig)

	if err := registry.CheckPrecedence(fmt.Sprintf("provider %s/%s", v.Namespace, v.Type), v.Version,
		func() ([]registry.ProviderVersion, error) {
			return pub.p.opt.Index.ListProviderVersions(pub.ctx, v.Namespace, v.Type)
		}, providerVersion); registry.IsKind(err, registry.Conflict) {
		// The clash may be this very version, published concurrently
		// since the lookup above: an idempotent retry unless its content
		// differs.
		return registry.ResolveCreateConflict(err, pub.stored, pub.existing)
	} else if err != nil {
		return Result{}, err
	}

	if err := pub.indexSums(sums, manifestName); err != nil {
		return Result{}, err
	}

	// 3. The optional manifest, then the archives.
	for {
		name, r, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Result{}, err
		}
		switch {
		case name == manifestName:
			if err := pub.readManifest(name, r); err != nil {
				return Result{}, err
			}
		case release.IsDocsName(name):
			if err := pub.stageDocs(name, r); err != nil {
				return Result{}, err
			}
		case strings.HasSuffix(name, ".zip"):
			if err := pub.stageZip(name, r); err != nil {
				return Result{}, err
			}
		default:
			return Result{}, registry.Errorf(registry.Invalid, "unexpected file %q: a release holds %s, its .sig, %s and the zips it lists", name, sumsName, manifestName)
		}
	}
	for filename := range pub.zips {
		if _, ok := pub.staged[filename]; !ok {
			return Result{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists %s but it was not uploaded; publish every archive of the release", filename)
		}
	}
	if _, listed := pub.listed[manifestName]; listed && !pub.sawManife {
		// Without it the protocols would silently default to 5.0, and a
		// protocol 6 provider would install but fail to start.
		return Result{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists %s but it was not uploaded: publish it with the release "+
			"(goreleaser lists terraform-registry-manifest.json in SHA256SUMS under that name without copying it into dist/)", manifestName)
	}
	if pub.docsName != "" && pub.docs.path == "" {
		return Result{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists %s but it was not uploaded: publish it with the release", pub.docsName)
	}
	if len(pub.staged) == 0 {
		return Result{}, registry.Errorf(registry.Invalid, "SHA256SUMS lists no provider archives (terraform-provider-%s_%s_<os>_<arch>.zip)", v.Type, v.Version)
	}
	return pub.commit()
}

func firstFileErr(err error, sumsName string) error {
	if err == io.EOF {
		return registry.Errorf(registry.Invalid, "the release is empty: send %s, its .sig and the archives", sumsName)
	}
	return err
}

// indexSums checks that every archive SHA256SUMS lists is a package of
// this very provider version (release.CheckSums) and remembers the
// expected digests.
func (pub *publication) indexSums(sums []release.Sum, manifestName string) error {
	l, err := release.CheckSums(sums, pub.v.Type, pub.v.Version)
	if err != nil {
		return err
	}
	pub.listed, pub.zips, pub.docsName = l.Digests, l.Packages, l.Docs
	pub.staged = make(map[string]stagedFile)
	return nil
}

func (pub *publication) readManifest(name string, r io.Reader) error {
	if pub.sawManife {
		return registry.Errorf(registry.Invalid, "%s was sent twice", name)
	}
	pub.sawManife = true
	// What is served must be covered by the signature: the protocols a
	// manifest declares decide which clients may run the provider.
	want, listed := pub.listed[name]
	if !listed {
		return registry.Errorf(registry.Invalid, "%s is not listed in SHA256SUMS, so the signature does not cover it: list it in SHA256SUMS before signing "+
			"(goreleaser: checksum.extra_files, see docs/publishing.md), or leave it out of the upload", name)
	}
	data, err := readSmall(r, name, maxManifestBytes)
	if err != nil {
		return err
	}
	if want != digestOf(data) {
		return registry.Errorf(registry.Invalid, "%s does not match its checksum in SHA256SUMS: the file changed after SHA256SUMS was made", name)
	}
	protocols, err := release.ParseManifest(data)
	if err != nil {
		return err
	}
	pub.v.Protocols = protocols
	return nil
}

// stageDocs streams the documentation archive to a temporary file while
// hashing it, checks its digest against SHA256SUMS and its content with
// providerdocs, and makes it the version's documentation.
func (pub *publication) stageDocs(name string, r io.Reader) error {
	switch {
	case name != pub.docsName:
		return registry.Errorf(registry.Invalid, "%s is not listed in SHA256SUMS, so the signature does not cover it: list it in SHA256SUMS before signing, "+
			"or upload the documentation after the publish (trove provider docs upload)", name)
	case pub.docs.path != "":
		return registry.Errorf(registry.Invalid, "%s was sent twice", name)
	}
	f, err := pub.p.stage.CreateFile("*.docs")
	if err != nil {
		return err
	}
	pub.docs.path = f.Name()
	defer f.Close()
	n, got, err := staging.Copy(f, r, registry.MaxProviderDocsBytes, name)
	if err != nil {
		return err
	}
	if want := pub.listed[name]; got != want {
		return registry.Errorf(registry.Invalid, "%s has checksum %s but SHA256SUMS lists %s: the archive was changed after SHA256SUMS was made, or corrupted in transit", name, got, want)
	}
	if _, err := providerdocs.Parse(f, n); err != nil {
		return registry.Wrap(registry.KindOf(err), err, name)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	pub.docs.size = n
	pub.v.DocsDigest, pub.v.DocsSize = got, n
	return nil
}

// stageZip streams one archive to a temporary file while hashing it, then
// checks its digest against SHA256SUMS and its contents, and computes its
// h1 hash (registry.Platform.H1).
func (pub *publication) stageZip(name string, r io.Reader) error {
	_, listed := pub.zips[name]
	if !listed {
		return registry.Errorf(registry.Invalid, "%s is not listed in SHA256SUMS", name)
	}
	if _, dup := pub.staged[name]; dup {
		return registry.Errorf(registry.Invalid, "%s was sent twice", name)
	}
	f, err := pub.p.stage.CreateFile("*.zip")
	if err != nil {
		return err
	}
	pub.staged[name] = stagedFile{path: f.Name()}
	defer f.Close()

	n, got, err := staging.Copy(f, r, pub.p.opt.MaxZipBytes, name)
	if err != nil {
		return err
	}
	if want := pub.listed[name]; got != want {
		return registry.Errorf(registry.Invalid, "%s has checksum %s but SHA256SUMS lists %s: the archive was changed after SHA256SUMS was made, or corrupted in transit", name, got, want)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	pl, err := pub.p.checkPackage(f, n, name, pub.v.Type, pub.v.Version)
	if err != nil {
		return err
	}
	pl.SHA256 = got
	pub.staged[name] = stagedFile{path: f.Name(), size: n}
	pub.v.Platforms = append(pub.v.Platforms, pl)
	return nil
}

// CheckPackage checks a provider package that arrives without a release
// upload (an air-gap bundle's, staged at path, size bytes) as a publish
// checks each zip: filename names a package of typ and version
// (release.ParsePackageFilename), size is within MaxZipBytes and the
// content passes release.CheckZip within ZipLimits. It returns the
// package's platform with its h1 hash (SHA256 is left to the caller, who
// verified it).
func (p *Publisher) CheckPackage(path string, size int64, filename, typ, version string) (registry.Platform, error) {
	if size > p.opt.MaxZipBytes {
		return registry.Platform{}, registry.Errorf(registry.TooLarge, "%s is larger than %d bytes, the limit", filename, p.opt.MaxZipBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return registry.Platform{}, registry.Wrap(registry.Internal, err, "opening a staged package")
	}
	defer f.Close()
	return p.checkPackage(f, size, filename, typ, version)
}

// checkPackage checks the package filename, size bytes in f, of typ and
// version, and computes its h1 hash.
func (p *Publisher) checkPackage(f *os.File, size int64, filename, typ, version string) (registry.Platform, error) {
	pkg, err := release.ParsePackageFilename(filename)
	if err != nil {
		return registry.Platform{}, err
	}
	if pkg.Type != typ || pkg.Version != version {
		return registry.Platform{}, registry.Errorf(registry.Invalid, "%s is not a package of %s %s", filename, typ, version)
	}
	if err := release.CheckZip(f, size, typ, pkg.OS, p.opt.ZipLimits); err != nil {
		return registry.Platform{}, err
	}
	// The "h1:" hash lock files record, so that the clients need not
	// download every platform's package to write them.
	h1, err := release.PackageHash(f.Name())
	if err != nil {
		return registry.Platform{}, fmt.Errorf("%s: %w", filename, err)
	}
	return registry.Platform{OS: pkg.OS, Arch: pkg.Arch, Filename: filename, Size: size, H1: h1}, nil
}

// commit stores the blobs, then the version in one index transaction.
func (pub *publication) commit() (Result, error) {
	v := &pub.v
	ctx := pub.ctx
	blobs := pub.p.opt.Blobs
	if err := blobs.Put(ctx, v.SHASumsDigest, int64(len(pub.sums)), bytes.NewReader(pub.sums)); err != nil {
		return Result{}, fmt.Errorf("store SHA256SUMS: %w", err)
	}
	if err := blobs.Put(ctx, v.SHASumsSignatureDigest, int64(len(pub.sig)), bytes.NewReader(pub.sig)); err != nil {
		return Result{}, fmt.Errorf("store signature: %w", err)
	}
	for _, pl := range v.Platforms {
		if err := pub.putStaged(pl); err != nil {
			return Result{}, fmt.Errorf("store %s: %w", pl.Filename, err)
		}
	}
	if v.DocsDigest != "" {
		if err := staging.Store(ctx, blobs, v.DocsDigest, v.DocsSize, pub.docs.path); err != nil {
			return Result{}, fmt.Errorf("store %s: %w", pub.docsName, err)
		}
	}
	slices.SortFunc(v.Platforms, func(a, b registry.Platform) int {
		return strings.Compare(a.OS+"_"+a.Arch, b.OS+"_"+b.Arch)
	})
	v.PublishedAt = pub.p.opt.Now().UTC()
	if err := pub.signProvenance(); err != nil {
		return Result{}, err
	}
	err := pub.p.opt.Index.CreateProviderVersion(ctx, *v)
	if registry.IsKind(err, registry.Conflict) {
		return registry.ResolveCreateConflict(err, pub.stored, pub.existing)
	}
	if err != nil {
		return Result{}, err
	}
	pub.p.opt.Logger.InfoContext(ctx, "published provider version",
		"namespace", v.Namespace, "type", v.Type, "version", v.Version, "platforms", len(v.Platforms), "key_id", v.SigningKey.KeyID)
	return Result{Version: *v, Created: true}, nil
}

func (pub *publication) putStaged(pl registry.Platform) error {
	sf := pub.staged[pl.Filename]
	return staging.Store(pub.ctx, pub.p.opt.Blobs, pl.SHA256, sf.size, sf.path)
}

func providerVersion(v registry.ProviderVersion) string { return v.Version }

// stored reads the stored version of the same namespace, type and version.
func (pub *publication) stored() (registry.ProviderVersion, error) {
	return pub.p.opt.Index.GetProviderVersion(pub.ctx, pub.v.Namespace, pub.v.Type, pub.v.Version)
}

// existing decides between an idempotent retry and a conflict.
func (pub *publication) existing(existing registry.ProviderVersion) (Result, error) {
	v := pub.v
	if existing.SHASumsDigest == v.SHASumsDigest {
		return Result{Version: existing, Created: false}, nil
	}
	return Result{}, registry.Errorf(registry.Conflict,
		"%s/%s %s is already published with different content (its SHA256SUMS differs); versions are immutable: publish a new version instead",
		v.Namespace, v.Type, v.Version)
}

func (pub *publication) cleanup() {
	if pub.docs.path != "" {
		_ = os.Remove(pub.docs.path)
	}
	for _, sf := range pub.staged {
		if sf.path != "" {
			_ = os.Remove(sf.path)
		}
	}
}

func readSmall(r io.Reader, name string, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, registry.Errorf(registry.TooLarge, "%s is larger than the limit of %d bytes", name, limit)
	}
	return data, nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// DirSource is a FileSource over files on disk, in the given order.
type DirSource struct {
	Paths []string
	cur   *os.File
}

// Next opens the next file.
func (d *DirSource) Next() (string, io.Reader, error) {
	if d.cur != nil {
		d.cur.Close()
		d.cur = nil
	}
	if len(d.Paths) == 0 {
		return "", nil, io.EOF
	}
	path := d.Paths[0]
	d.Paths = d.Paths[1:]
	f, err := os.Open(path)
	if err != nil {
		return "", nil, errors.Join(registry.Errorf(registry.Invalid, "cannot open %s", path), err)
	}
	d.cur = f
	return filepath.Base(path), f, nil
}
