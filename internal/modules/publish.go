package modules

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/staging"
	"trove.dev/trove/internal/store"
)

// MaxOriginBytes bounds the free-text origin recorded with a version.
const MaxOriginBytes = registry.MaxOriginLength

// stagePrefix starts the name of every file and directory a module
// publish stages in TempDir (see internal/staging).
const stagePrefix = "module-"

// Index is the part of the index a Publisher uses: it checks the
// namespace and stores and deletes module versions. A store.Index is one.
type Index interface {
	store.Namespaces
	store.Modules
}

// Options configures a Publisher.
type Options struct {
	Index   Index
	Blobs   store.Blobs
	TempDir string // staging area; on the blob store's filesystem when possible

	MaxArchiveBytes int64  // largest accepted archive; <= 0 means 1 GiB
	Limits          Limits // entry count and unpacked size of each archive

	// Managed signs the provenance of a publish made with an origin in its
	// context (provenance.WithOrigin) with its namespace's managed key; nil:
	// no module version gets provenance.
	Managed *signing.Managed

	Logger *slog.Logger
	Now    func() time.Time
}

// Publisher publishes and deletes module versions. It is safe for
// concurrent use.
type Publisher struct {
	opt   Options
	stage staging.Dir
	ins   *inspector // shared by its publishes
}

// NewPublisher returns a Publisher.
func NewPublisher(opt Options) *Publisher {
	if opt.MaxArchiveBytes <= 0 {
		opt.MaxArchiveBytes = 1 << 30
	}
	opt.Limits = opt.Limits.withDefaults()
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Publisher{opt: opt, stage: staging.Dir{Path: opt.TempDir, Prefix: stagePrefix}, ins: newInspector()}
}

// RemoveStaleUploads deletes what publishes that never finished left in
// TempDir, such as those of a process killed mid-upload. Call it at
// start-up, before serving: a staging directory belongs to one process.
func (p *Publisher) RemoveStaleUploads() error { return p.stage.RemoveStale() }

// Upload is one module version to publish.
type Upload struct {
	Namespace, Name, System, Version string
	// Origin says where the archive came from (e.g. "git tag v1.2.0,
	// commit 0123abc"); free text, at most MaxOriginBytes, one line.
	Origin string
	// Archive is the .tar.gz or .zip, read to its end.
	Archive io.Reader
}

// Result reports the outcome of a publish: Created is false when the
// identical archive was already published; Warnings are problems found
// in the configuration that did not stop the publish
// (terraform-config-inspect diagnostics, at most MaxDiagnostics and a
// count of the rest).
type Result = registry.PublishResult[registry.ModuleVersion]

// addressCheckHost is the registry host ParseAddress puts before a module
// address to have the clients' parser check it; any dotted name would do.
const addressCheckHost = "example.invalid"

// ParseAddress validates the coordinates of a module version to publish
// and returns them normalized: namespace and name lowercased (Trove looks
// them up case-insensitively), system as the clients require it, version
// canonical. The namespace must be valid both as a Trove namespace (which
// it shares with providers) and in a module source address as the clients
// parse it (ASCII letters, digits, '-' and '_' only).
func ParseAddress(namespace, name, system, version string) (registry.ModuleVersion, error) {
	v, err := ParseStoredAddress(namespace, name, system, version)
	if err != nil {
		return v, err
	}
	if _, err := tfaddr.ParseModuleSource(addressCheckHost + "/" + namespace + "/" + name + "/" + system); err != nil {
		return v, registry.Errorf(registry.Invalid,
			"%s/%s/%s is not a module address Terraform and OpenTofu accept: %s", namespace, name, system, err)
	}
	return v, nil
}

// ParseStoredAddress is ParseAddress without the clients' address check,
// for naming versions that exist already: a version published before that
// check (under a namespace such as "café") can still be deleted.
func ParseStoredAddress(namespace, name, system, version string) (registry.ModuleVersion, error) {
	var v registry.ModuleVersion
	var err error
	if v.Namespace, err = registry.ParseNamespace(namespace); err != nil {
		return v, err
	}
	if v.Name, err = registry.ParseModuleName(name); err != nil {
		return v, err
	}
	if v.System, err = registry.ParseModuleSystem(system); err != nil {
		return v, err
	}
	if _, err = registry.ParseVersion(version); err != nil {
		return v, err
	}
	v.Version = version
	return v, nil
}

// Publish publishes a module version: it stages the archive while hashing
// it, refuses a version that exists with other bytes (Conflict) and
// answers an identical re-publish with Created false, checks the archive
// (CheckArchive) and extracts its metadata (Inspect) from a staged copy, stores
// the archive blob and then the version in one index write. Nothing is
// stored unless every check passed; staged files are always removed.
//
// A publish whose context names its origin (provenance.WithOrigin: a
// publish with a token, keyless or not) stores the version with its
// provenance statement signed by the namespace's managed key
// (provenance.SignRelease); without an origin (versions Trove makes
// itself: git sources, the module mirror) it stores none.
func (p *Publisher) Publish(ctx context.Context, up Upload) (Result, error) {
	v, err := ParseAddress(up.Namespace, up.Name, up.System, up.Version)
	if err != nil {
		return Result{}, err
	}
	if err := CheckOrigin(up.Origin); err != nil {
		return Result{}, err
	}
	v.Origin = up.Origin
	if _, err := p.opt.Index.GetNamespace(ctx, v.Namespace); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return Result{}, registry.Errorf(registry.NotFound, "namespace %q does not exist; create it with: trove namespace create %s", v.Namespace, v.Namespace)
		}
		return Result{}, err
	}
	// 1. Stage the archive, hashing it.
	f, err := p.stage.CreateFile("*.archive")
	if err != nil {
		return Result{}, err
	}
	archivePath := f.Name()
	defer os.Remove(archivePath)
	defer f.Close()
	n, digest, err := staging.Copy(f, up.Archive, p.opt.MaxArchiveBytes, "the module archive")
	if err != nil {
		return Result{}, err
	}
	if n == 0 {
		return Result{}, registry.Errorf(registry.Invalid, "the module archive is empty")
	}
	v.ArchiveDigest, v.ArchiveSize = digest, n

	// 2. An existing version: the same bytes are an idempotent retry,
	// anything else is refused before any further work.
	stored := func() (registry.ModuleVersion, error) {
		return p.opt.Index.GetModuleVersion(ctx, v.Namespace, v.Name, v.System, v.Version)
	}
	existing := func(have registry.ModuleVersion) (Result, error) { return existingVersion(have, v) }
	if have, err := stored(); err == nil {
		return existing(have)
	} else if !registry.IsKind(err, registry.NotFound) {
		return Result{}, err
	}
	if err := registry.CheckPrecedence(fmt.Sprintf("module %s/%s/%s", v.Namespace, v.Name, v.System), v.Version,
		func() ([]registry.ModuleVersion, error) {
			return p.opt.Index.ListModuleVersions(ctx, v.Namespace, v.Name, v.System)
		}, moduleVersion); registry.IsKind(err, registry.Conflict) {
		// The clash may be this very version, published concurrently
		// since the lookup above.
		return registry.ResolveCreateConflict(err, stored, existing)
	} else if err != nil {
		return Result{}, err
	}

	// 3. Check the archive and extract its metadata from a staged copy.
	v, warnings, err := p.checkArchive(ctx, v, f)
	if err != nil {
		return Result{}, err
	}
	if err := f.Sync(); err != nil {
		return Result{}, err
	}

	// 4. The provenance, signed before anything is stored: a managed key
	// that cannot sign refuses the publish.
	v.PublishedAt = p.opt.Now().UTC()
	if o, ok := provenance.OriginFrom(ctx); ok {
		if v.Provenance, err = provenance.SignRelease(ctx, Release(v), o, p.opt.Managed, p.opt.Logger); err != nil {
			return Result{}, err
		}
	}

	// 5. The blob, then the version with its provenance in one index write.
	if err := staging.Store(ctx, p.opt.Blobs, v.ArchiveDigest, v.ArchiveSize, archivePath); err != nil {
		return Result{}, err
	}
	err = p.opt.Index.CreateModuleVersion(ctx, v)
	if registry.IsKind(err, registry.Conflict) {
		return registry.ResolveCreateConflict(err, stored, existing)
	}
	if err != nil {
		return Result{}, err
	}
	p.opt.Logger.InfoContext(ctx, "published module version", "namespace", v.Namespace, "name", v.Name, "system", v.System,
		"version", v.Version, "format", v.ArchiveFormat, "size", v.ArchiveSize, "digest", v.ArchiveDigest)
	return Result{Version: v, Created: true, Warnings: warnings}, nil
}

// checkArchive checks the archive of v, ArchiveSize bytes in f, as every
// entrance checks it (CheckArchive within the Publisher's Limits, then
// metadata extraction within its budget) and returns v with its format,
// metadata and description, and the extraction's diagnostics.
func (p *Publisher) checkArchive(ctx context.Context, v registry.ModuleVersion, f io.ReaderAt) (registry.ModuleVersion, []string, error) {
	stageDir, err := p.stage.MkdirTemp("*.d")
	if err != nil {
		return v, nil, err
	}
	defer os.RemoveAll(stageDir)
	if v.ArchiveFormat, err = CheckArchive(f, v.ArchiveSize, p.opt.Limits, stageDir); err != nil {
		return v, nil, err
	}
	md, err := p.ins.inspect(ctx, stageDir)
	if err != nil {
		return v, nil, err
	}
	if v.Metadata, err = encodeMetadata(md); err != nil {
		return v, nil, err
	}
	v.Description = Description(md.Root.Readme)
	return v, md.Diagnostics, nil
}

// CheckImport checks a module version that arrives with its archive
// rather than through Publish (an air-gap bundle's, staged at path) with
// the checks of Publish: its address (ParseAddress), its origin
// (CheckOrigin), a non-empty archive within MaxArchiveBytes, CheckArchive
// within the Publisher's Limits, and metadata extraction. The metadata
// and description v carries (from another Trove) must be well-formed
// (ParseMetadata, registry.DescriptionLimit) and ArchiveFormat, if set,
// must be the archive's; they are then replaced by what this Trove
// extracts, as a publish stores them. ArchiveDigest and ArchiveSize must
// be the staged file's (the caller verified them); PublishedAt is kept.
// It stores nothing and reads no index.
func (p *Publisher) CheckImport(ctx context.Context, v registry.ModuleVersion, path string) (Result, error) {
	addr, err := ParseAddress(v.Namespace, v.Name, v.System, v.Version)
	if err != nil {
		return Result{}, err
	}
	what := fmt.Sprintf("module %s/%s/%s %s", addr.Namespace, addr.Name, addr.System, addr.Version)
	wrap := func(err error) error { return registry.Wrap(registry.KindOf(err), err, what) }
	if err := CheckOrigin(v.Origin); err != nil {
		return Result{}, wrap(err)
	}
	if err := registry.DescriptionLimit.CheckText(v.Description); err != nil {
		return Result{}, wrap(err)
	}
	if len(v.Metadata) > 0 {
		if _, err := ParseMetadata(v.Metadata); err != nil {
			return Result{}, wrap(err)
		}
	}
	switch {
	case v.ArchiveSize < 1:
		return Result{}, wrap(registry.Errorf(registry.Invalid, "the module archive is empty"))
	case v.ArchiveSize > p.opt.MaxArchiveBytes:
		return Result{}, wrap(registry.Errorf(registry.TooLarge, "the module archive is larger than %d bytes, the limit", p.opt.MaxArchiveBytes))
	}
	f, err := os.Open(path)
	if err != nil {
		return Result{}, registry.Wrap(registry.Internal, err, "opening a staged module archive")
	}
	defer f.Close()
	claimed := v.ArchiveFormat
	v.Namespace, v.Name, v.System = addr.Namespace, addr.Name, addr.System
	v, warnings, err := p.checkArchive(ctx, v, f)
	if err != nil {
		return Result{}, wrap(err)
	}
	if claimed != "" && claimed != v.ArchiveFormat {
		return Result{}, wrap(registry.Errorf(registry.Invalid, "its archive is a %s file, not %s as the manifest says", v.ArchiveFormat, claimed))
	}
	return Result{Version: v, Created: true, Warnings: warnings}, nil
}

// existingVersion decides between an idempotent retry and a conflict.
func existingVersion(existing, v registry.ModuleVersion) (Result, error) {
	if existing.ArchiveDigest == v.ArchiveDigest {
		return Result{Version: existing, Created: false}, nil
	}
	return Result{}, registry.Errorf(registry.Conflict,
		"module %s/%s/%s %s is already published with a different archive (SHA-256 %s); versions are immutable: publish a new version instead",
		v.Namespace, v.Name, v.System, v.Version, existing.ArchiveDigest)
}

// CheckOrigin refuses an origin that is not one line of text of at most
// MaxOriginBytes, as the API refuses it (registry.OriginLimit).
func CheckOrigin(origin string) error { return registry.OriginLimit.CheckText(origin) }

func moduleVersion(v registry.ModuleVersion) string { return v.Version }
