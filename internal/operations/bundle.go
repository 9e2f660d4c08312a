package operations

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/staging"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Bundle is an air-gap bundle staged for ImportBundle: its manifest,
// read into what it names, and its files, staged in Dir under their
// SHA-256 digests. The entrance reads the bundle (the byte handling);
// ImportBundle decides.
type Bundle struct {
	// Dir holds the staged files, each named by its digest.
	Dir string
	// Sizes are the sizes of the staged files by digest.
	Sizes map[string]int64
	// Files are the digests the manifest names, in its order; each must
	// be staged.
	Files []string
	// Providers are the mirrored provider versions of the bundle, and
	// Sources their addresses as they print.
	Providers []registry.MirroredVersion
	Sources   []string
	// Envelopes are, per provider, the digest of the staged DSSE envelope
	// of its provenance, or "" (its ProvenanceKeys are the keys that may
	// verify it). ImportBundle reads and verifies them; they are stored
	// in the index, not as blobs.
	Envelopes []string
	// Modules are the module versions of the bundle, as their manifest
	// describes them, and ModuleEnvelopes, per module, the digest of its
	// staged provenance envelope or "" (as Envelopes).
	Modules         []registry.ModuleVersion
	ModuleEnvelopes []string
	// Needed says what each digest the manifest names is, for messages
	// (CheckBundleManifest sets it).
	Needed map[string]string
}

// BundleResult is what ImportBundle stored.
type BundleResult struct {
	store.BundleImport
	// ModuleVersions are the module versions as stored (or held
	// already), with the metadata and description their archives hold;
	// BundleImport.Modules says which were stored.
	ModuleVersions []registry.ModuleVersion
}

// ImportBundle imports a staged bundle (a global admin right): it checks
// every package and module exactly as a publish checks it (each
// provider's signature over its SHA256SUMS with the key the bundle gives,
// judged when the signature was made; each package against SHA256SUMS,
// its size and h1 hash and as publish.Publisher.CheckPackage checks a
// publish's zip; each module version as modules.Publisher.CheckImport
// checks a publish's archive, taking the metadata and description it
// extracts), then stores the files and writes the index in one
// transaction with the audit entry (AuditBundleImport) and a
// module.published event per module version it stores. All or nothing:
// a bundle that fails a check stores no version and no blob.
func (o *Operations) ImportBundle(ctx context.Context, a Actor, b Bundle) (BundleResult, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return BundleResult{}, err
	}
	if (len(b.Providers) > 0 && o.opt.Publisher == nil) || (len(b.Modules) > 0 && o.opt.Modules == nil) || o.opt.Blobs == nil {
		return BundleResult{}, registry.Errorf(registry.Internal, "bundle import is not configured on this server")
	}
	if err := b.checkStaged(); err != nil {
		return BundleResult{}, err
	}
	if (len(b.Envelopes) != 0 && len(b.Envelopes) != len(b.Providers)) || (len(b.ModuleEnvelopes) != 0 && len(b.ModuleEnvelopes) != len(b.Modules)) {
		return BundleResult{}, registry.Errorf(registry.Internal, "a bundle's envelopes do not match its providers")
	}
	b.Providers = slices.Clone(b.Providers)
	mods := slices.Clone(b.Modules)
	if err := o.verifyBundle(ctx, b, mods); err != nil {
		return BundleResult{}, err
	}
	for _, d := range b.Files {
		if err := staging.Store(ctx, o.opt.Blobs, d, b.Sizes[d], filepath.Join(b.Dir, d)); err != nil {
			return BundleResult{}, err
		}
	}
	// The audit entry and the events of the modules the import stores
	// commit with it.
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditBundleImport, Target: bundleTarget(b.Sources, mods),
		Details: fmt.Sprintf("%d provider versions, %d module versions, %d files", len(b.Providers), len(mods), len(b.Files))}})
	fx.Bind = func(record any) {
		done, ok := record.(store.BundleImport)
		if !ok {
			return
		}
		fx.Events = nil
		for i, v := range mods {
			if done.Modules[i] {
				o.opt.Events.Add(ctx, fx, nil, webhook.Event{Type: registry.EventModulePublished, Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version, Actor: a.name()})
			}
		}
	}
	done, err := o.opt.Index.ImportBundle(store.WithEffects(ctx, fx), b.Providers, mods)
	if err != nil {
		return BundleResult{}, err
	}
	o.opt.Logger.InfoContext(ctx, "imported a bundle", "providers", len(b.Providers), "modules", len(mods), "files", len(b.Files))
	o.done(ctx, fx)
	return BundleResult{BundleImport: done, ModuleVersions: mods}, nil
}

// checkStaged refuses a bundle that lacks a file its manifest names:
// a blob (Files) or the provenance envelope of a provider or a module.
// This is the one rule for it; the entrances leave it to ImportBundle.
func (b Bundle) checkStaged() error {
	for _, d := range slices.Concat(b.Files, b.Envelopes, b.ModuleEnvelopes) {
		if _, ok := b.Sizes[d]; !ok && d != "" {
			what := ""
			if b.Needed[d] != "" {
				what = " (" + b.Needed[d] + ")"
			}
			return registry.Errorf(registry.Invalid, "the bundle lacks the file %s%s%s; nothing was imported", apispec.BundleBlobPrefix, d, what)
		}
	}
	return nil
}

// verifyBundle checks the staged files of b against its manifest, as
// ImportBundle says, and sets mods (b.Modules' copy) to the module
// versions the checks return.
func (o *Operations) verifyBundle(ctx context.Context, b Bundle, mods []registry.ModuleVersion) error {
	for i, v := range b.Providers {
		what := fmt.Sprintf("provider %s %s", b.Sources[i], v.Version)
		sums, err := readStaged(b.Dir, v.SHASumsDigest, release.MaxSHASumsBytes)
		if err != nil {
			return err
		}
		sig, err := readStaged(b.Dir, v.SHASumsSignatureDigest, signing.MaxSignatureBytes)
		if err != nil {
			return err
		}
		made, err := signing.SignatureTime(sig)
		if err == nil {
			_, err = signing.VerifyDetachedAt([]registry.SigningKey{v.SigningKey}, sums, sig, made)
		}
		if err != nil {
			return registry.Errorf(registry.Invalid, "%s: its SHA256SUMS does not verify with the key %s the bundle gives (%s); nothing was imported", what, v.SigningKey.KeyID, registry.Message(err))
		}
		parsed, err := release.ParseSHA256SUMS(sums)
		if err != nil {
			return registry.Errorf(registry.Invalid, "%s: its SHA256SUMS does not parse: %s", what, registry.Message(err))
		}
		listed, err := release.CheckSums(parsed, v.Type, v.Version)
		if err != nil {
			return registry.Wrap(registry.Invalid, err, what)
		}
		for _, pl := range v.Platforms {
			if _, ok := listed.Packages[pl.Filename]; !ok || listed.Digests[pl.Filename] != pl.SHA256 {
				return registry.Errorf(registry.Invalid, "%s: its signed SHA256SUMS does not list %s with digest %s; nothing was imported", what, pl.Filename, pl.SHA256)
			}
			if b.Sizes[pl.SHA256] != pl.Size {
				return registry.Errorf(registry.Invalid, "%s: package %s has %d bytes, the manifest says %d", what, pl.Filename, b.Sizes[pl.SHA256], pl.Size)
			}
			got, err := o.opt.Publisher.CheckPackage(filepath.Join(b.Dir, pl.SHA256), pl.Size, pl.Filename, v.Type, v.Version)
			if err != nil {
				return registry.Wrap(registry.KindOf(err), err, fmt.Sprintf("%s: package %s", what, pl.Filename))
			}
			if got.OS != pl.OS || got.Arch != pl.Arch {
				return registry.Errorf(registry.Invalid, "%s: package %s is the one of %s_%s, the manifest says %s_%s", what, pl.Filename, got.OS, got.Arch, pl.OS, pl.Arch)
			}
			if got.H1 != pl.H1 {
				return registry.Errorf(registry.Invalid, "%s: package %s has the h1 hash %s, the manifest says %s; nothing was imported", what, pl.Filename, got.H1, pl.H1)
			}
		}
	}
	for i := range b.Providers {
		if len(b.Envelopes) > 0 && b.Envelopes[i] != "" {
			if err := o.verifyBundleProvenance(ctx, &b.Providers[i], b.Dir, b.Envelopes[i], fmt.Sprintf("provider %s %s", b.Sources[i], b.Providers[i].Version)); err != nil {
				return err
			}
		}
	}
	for i, m := range mods {
		if b.Sizes[m.ArchiveDigest] != m.ArchiveSize {
			return registry.Errorf(registry.Invalid, "module %s/%s/%s %s: its archive has %d bytes, the manifest says %d", m.Namespace, m.Name, m.System, m.Version, b.Sizes[m.ArchiveDigest], m.ArchiveSize)
		}
		res, err := o.opt.Modules.CheckImport(ctx, m, filepath.Join(b.Dir, m.ArchiveDigest))
		if err != nil {
			return err
		}
		res.Version.ProvenanceKeys = m.ProvenanceKeys
		mods[i] = res.Version
		envelope := ""
		if len(b.ModuleEnvelopes) > 0 {
			envelope = b.ModuleEnvelopes[i]
		}
		if err := o.checkBundleModuleProvenance(ctx, &mods[i], b.Dir, envelope); err != nil {
			return err
		}
	}
	return nil
}

// checkBundleModuleProvenance checks the provenance a bundle carries with
// the module version v (the digest of its staged envelope, or ""). When
// v's namespace has no provenance policy, the envelope must verify with
// the keys the bundle gives (judged now). When it has one, the bundle's
// keys are not trusted: the envelope must verify with one of the
// policy's import keys (a policy without any refuses every bundle
// module), and v is admitted only with provenance whose statement's CI
// claims (the repository and ref of its externalParameters, its builder
// as issuer) the policy admits (registry.ProvenancePolicy.Admits, the
// rule of publishes); else Forbidden with the reason. Either way the
// statement must be about v (provenance.Statement.CheckSubject) and name
// its archive, <name>-<system>-<version>.<format>, with its digest; v's
// Provenance is then set, and under a policy its ProvenanceKeys become
// the import key that verified it.
func (o *Operations) checkBundleModuleProvenance(ctx context.Context, v *registry.ModuleVersion, dir, digest string) error {
	what := fmt.Sprintf("module %s/%s/%s %s", v.Namespace, v.Name, v.System, v.Version)
	p, err := o.opt.Index.GetProvenancePolicy(ctx, v.Namespace)
	policy := err == nil
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		return err
	}
	if policy && len(p.ImportKeys) == 0 {
		return registry.Errorf(registry.Forbidden, "%s: namespace %s has a provenance policy without import keys, so it accepts no module from a bundle: "+
			"add the public key of the exporting Trove's namespace (trove provenance policy set %s --repository %s --import-key exporting-trove.asc); nothing was imported",
			what, v.Namespace, v.Namespace, p.Repository)
	}
	var ci *registry.CIClaims
	if digest != "" {
		envelope, err := readStaged(dir, digest, provenance.MaxEnvelopeBytes)
		if err != nil {
			return err
		}
		keys, kind, whose := v.ProvenanceKeys, registry.Invalid, "the keys the bundle gives"
		if policy {
			keys, kind, whose = p.ImportKeys, registry.Forbidden, "the import keys of namespace "+v.Namespace+"'s provenance policy (the bundle's own keys are not trusted under a policy)"
		}
		checked, err := provenance.Verify(ctx, envelope, keys, o.opt.Now())
		if err != nil {
			return registry.Errorf(kind, "%s: its provenance does not verify with %s: %s; nothing was imported", what, whose, registry.Message(err))
		}
		st := checked.Statement
		if err := st.CheckSubject(provenance.KindModule, v.Namespace+"/"+v.Name+"/"+v.System, v.Version); err != nil {
			return registry.Errorf(registry.Invalid, "%s: %s; nothing was imported", what, registry.Message(err))
		}
		archive := fmt.Sprintf("%s-%s-%s.%s", v.Name, v.System, v.Version, v.ArchiveFormat)
		if err := st.CheckArchive(archive, v.ArchiveDigest); err != nil {
			return registry.Errorf(registry.Invalid, "%s: %s; nothing was imported", what, registry.Message(err))
		}
		v.Provenance = envelope
		if policy {
			v.ProvenanceKeys = p.ImportKeys
			if checked.Key.KeyID != "" {
				v.ProvenanceKeys = []registry.SigningKey{checked.Key}
			}
		}
		if st.Predicate.BuildDefinition.BuildType == provenance.BuildTypeKeyless {
			ext := st.Predicate.BuildDefinition.ExternalParameters
			ci = &registry.CIClaims{Issuer: st.Predicate.RunDetails.Builder.ID, Repository: ext["repository"], Ref: ext["ref"]}
		}
	}
	if !policy {
		return nil
	}
	if err := p.Admits(ci); err != nil {
		if ci == nil {
			return registry.Errorf(registry.Forbidden, "%s: namespace %s has a provenance policy, and this module version comes without provenance of a CI build (%s); nothing was imported",
				what, v.Namespace, registry.Message(err))
		}
		return registry.Errorf(registry.Forbidden, "%s: %s; nothing was imported", what, registry.Message(err))
	}
	return nil
}

// verifyBundleProvenance reads the staged envelope of a provider version
// of a bundle, checks that it verifies with the keys the bundle gives
// (judged now), is about v (provenance.Statement.CheckSubject: its
// namespace/type and version) and names every package of v with its
// digest, and sets v.Provenance.
func (o *Operations) verifyBundleProvenance(ctx context.Context, v *registry.MirroredVersion, dir, digest, what string) error {
	envelope, err := readStaged(dir, digest, provenance.MaxEnvelopeBytes)
	if err != nil {
		return err
	}
	checked, err := provenance.Verify(ctx, envelope, v.ProvenanceKeys, o.opt.Now())
	if err != nil {
		return registry.Errorf(registry.Invalid, "%s: its provenance does not verify with the keys the bundle gives: %s; nothing was imported", what, registry.Message(err))
	}
	if err := checked.Statement.CheckSubject(provenance.KindProvider, v.Namespace+"/"+v.Type, v.Version); err != nil {
		return registry.Errorf(registry.Invalid, "%s: %s; nothing was imported", what, registry.Message(err))
	}
	for _, pl := range v.Platforms {
		if err := checked.Statement.CheckArchive(pl.Filename, pl.SHA256); err != nil {
			return registry.Errorf(registry.Invalid, "%s: %s; nothing was imported", what, registry.Message(err))
		}
	}
	v.Provenance = envelope
	return nil
}

// readStaged reads a small staged file.
func readStaged(dir, digest string, limit int64) ([]byte, error) {
	f, err := os.Open(filepath.Join(dir, digest))
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "reading a staged file")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "reading a staged file")
	}
	if int64(len(data)) > limit {
		return nil, registry.Errorf(registry.TooLarge, "the bundle's file %s%s is larger than %d bytes", apispec.BundleBlobPrefix, digest, limit)
	}
	return data, nil
}

// bundleTarget names what an import holds, for the audit log.
func bundleTarget(sources []string, modules []registry.ModuleVersion) string {
	names := slices.Clone(sources)
	for _, m := range modules {
		names = append(names, m.Namespace+"/"+m.Name+"/"+m.System+"@"+m.Version)
	}
	return registry.Elide(strings.Join(names, " "))
}
