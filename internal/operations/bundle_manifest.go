package operations

import (
	"context"
	"fmt"
	"strings"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

// CheckBundleManifest checks a bundle's manifest (a global admin right)
// before its files are read: its format (apispec.BundleFormat, or
// apispec.BundleFormatProvenance when an entry carries provenance), the
// names, versions and digests of its entries, the keys of their
// provenance and the namespaces of its modules. It returns the Bundle to
// stage (Dir and Sizes are the caller's) and Needed, what each digest
// the bundle must hold is, for messages.
func (o *Operations) CheckBundleManifest(ctx context.Context, a Actor, m apispec.BundleManifest) (Bundle, map[string]string, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return Bundle{}, nil, err
	}
	switch m.Format {
	case apispec.BundleFormat, apispec.BundleFormatProvenance:
	default:
		return Bundle{}, nil, registry.Errorf(registry.Invalid, "the bundle's format is %q; this Trove reads %q and %q (export the bundle again from a Trove of this release or older)",
			registry.Elide(m.Format), apispec.BundleFormat, apispec.BundleFormatProvenance)
	}
	if n := len(m.Providers) + len(m.Modules); n == 0 || n > apispec.MaxBundleItems {
		return Bundle{}, nil, registry.Errorf(registry.Invalid, "a bundle holds 1 to %d provider and module versions; this one has %d", apispec.MaxBundleItems, n)
	}
	b := &bundlePlan{needed: map[string]string{}, versions: map[string]bool{}, format: m.Format}
	now := o.opt.Now().UTC()
	own := ""
	if o.opt.PublicURL != nil {
		own = o.opt.PublicURL.String()
	}
	for _, p := range m.Providers {
		addr, err := tfaddr.ParseProviderSource(p.Source)
		if err != nil {
			return Bundle{}, nil, registry.Errorf(registry.Invalid, "invalid provider source %q in the bundle: %s", p.Source, err)
		}
		if own != "" && discovery.IsOwnHost(own, addr.Hostname) {
			return Bundle{}, nil, registry.Errorf(registry.Invalid, "provider %s is one of this registry's own (its host is %s): publish it to its namespace instead of importing it", addr, o.opt.PublicURL.Host)
		}
		if _, err := registry.ParseVersion(p.Version); err != nil {
			return Bundle{}, nil, err
		}
		what := fmt.Sprintf("provider %s %s", addr, p.Version)
		if err := b.once(what); err != nil {
			return Bundle{}, nil, err
		}
		protocols, err := release.CheckProtocols(p.Protocols)
		if err != nil {
			return Bundle{}, nil, registry.Wrap(registry.Invalid, err, what)
		}
		key := registry.SigningKey{Namespace: addr.Namespace, KeyID: p.Key.KeyID, ASCIIArmor: p.Key.ASCIIArmor}
		if err := signing.CheckListedKey(key); err != nil {
			return Bundle{}, nil, registry.Wrap(registry.KindOf(err), err, what)
		}
		if err := firstError(b.need(p.SHASums, "the SHA256SUMS of "+what), b.need(p.Signature, "the signature of "+what)); err != nil {
			return Bundle{}, nil, err
		}
		if len(p.Platforms) == 0 {
			return Bundle{}, nil, registry.Errorf(registry.Invalid, "%s has no packages in the bundle", what)
		}
		v := registry.MirroredVersion{Host: addr.Hostname.String(), ProviderVersion: registry.ProviderVersion{
			Namespace: addr.Namespace, Type: addr.Type, Version: p.Version, Protocols: protocols,
			SHASumsDigest: p.SHASums, SHASumsSignatureDigest: p.Signature,
			SigningKey:  key,
			PublishedAt: now,
		}}
		for _, pl := range p.Platforms {
			if err := registry.ValidatePlatform(pl.OS, pl.Arch); err != nil {
				return Bundle{}, nil, err
			}
			if pl.Size < 1 || !strings.HasPrefix(pl.H1, "h1:") {
				return Bundle{}, nil, registry.Errorf(registry.Invalid, "%s: the package of %s_%s has no size or h1 hash in the manifest", what, pl.OS, pl.Arch)
			}
			if err := b.need(pl.SHA256, fmt.Sprintf("the %s_%s package of %s", pl.OS, pl.Arch, what)); err != nil {
				return Bundle{}, nil, err
			}
			v.Platforms = append(v.Platforms, registry.Platform{OS: pl.OS, Arch: pl.Arch, Filename: pl.Filename, SHA256: pl.SHA256, Size: pl.Size, H1: pl.H1})
		}
		if err := registry.CheckPlatforms(v.ProviderVersion); err != nil {
			return Bundle{}, nil, err
		}
		envelope, keys, err := b.provenance(p.Provenance, what, addr.Namespace)
		if err != nil {
			return Bundle{}, nil, err
		}
		v.ProvenanceKeys = keys
		b.out.Providers = append(b.out.Providers, v)
		b.out.Sources = append(b.out.Sources, addr.String())
		b.out.Envelopes = append(b.out.Envelopes, envelope)
	}
	for _, bm := range m.Modules {
		addr, err := modules.ParseAddress(bm.Namespace, bm.Name, bm.System, bm.Version)
		if err != nil {
			return Bundle{}, nil, err
		}
		ns, name, system := addr.Namespace, addr.Name, addr.System
		what := fmt.Sprintf("module %s/%s/%s %s", ns, name, system, bm.Version)
		if err := b.once(what); err != nil {
			return Bundle{}, nil, err
		}
		if bm.Format != "tar.gz" && bm.Format != "zip" {
			return Bundle{}, nil, registry.Errorf(registry.Invalid, "%s: unknown archive format %q", what, bm.Format)
		}
		if bm.Size < 1 {
			return Bundle{}, nil, registry.Errorf(registry.Invalid, "%s: its archive has no size in the manifest", what)
		}
		if err := b.need(bm.Archive, "the archive of "+what); err != nil {
			return Bundle{}, nil, err
		}
		if _, err := o.opt.Index.GetNamespace(ctx, ns); err != nil {
			if registry.IsKind(err, registry.NotFound) {
				return Bundle{}, nil, registry.Errorf(registry.NotFound, "%s goes into namespace %q, which this Trove does not have: create it first (trove namespace create %s)", what, ns, ns)
			}
			return Bundle{}, nil, err
		}
		published := bm.PublishedAt
		if published.IsZero() {
			published = now
		}
		var metadata []byte // checked, then replaced by the archive's (modules.Publisher.CheckImport)
		if len(bm.Metadata) > 0 && string(bm.Metadata) != "null" {
			metadata = bm.Metadata
		}
		envelope, keys, err := b.provenance(bm.Provenance, what, ns)
		if err != nil {
			return Bundle{}, nil, err
		}
		b.out.Modules = append(b.out.Modules, registry.ModuleVersion{
			Namespace: ns, Name: name, System: system, Version: bm.Version,
			ArchiveDigest: bm.Archive, ArchiveFormat: bm.Format, ArchiveSize: bm.Size,
			Metadata: metadata, Description: bm.Description, Origin: bm.Origin, PublishedAt: published,
			ProvenanceKeys: keys,
		})
		b.out.ModuleEnvelopes = append(b.out.ModuleEnvelopes, envelope)
	}
	if m.Format == apispec.BundleFormatProvenance && !b.carries {
		return Bundle{}, nil, registry.Errorf(registry.Invalid, "the bundle's format is %q but no entry carries provenance; a bundle without provenance is %q", m.Format, apispec.BundleFormat)
	}
	b.out.Needed = b.needed
	return b.out, b.needed, nil
}

// bundlePlan is a manifest being checked.
type bundlePlan struct {
	out      Bundle
	needed   map[string]string // digest -> what it is, for messages
	versions map[string]bool   // the versions named so far, as messages name them
	format   string
	carries  bool // an entry carries provenance
}

// once refuses a version (what names it) that the manifest names twice.
func (b *bundlePlan) once(what string) error {
	if b.versions[what] {
		return registry.Errorf(registry.Invalid, "the bundle's manifest names %s twice", what)
	}
	b.versions[what] = true
	return nil
}

// need records that the bundle must hold the file digest, stored as a
// blob (Bundle.Files).
func (b *bundlePlan) need(digest, what string) error {
	if err := b.needFile(digest, what); err != nil {
		return err
	}
	if !containsString(b.out.Files, digest) {
		b.out.Files = append(b.out.Files, digest)
	}
	return nil
}

// needFile records that the bundle must hold the file digest.
func (b *bundlePlan) needFile(digest, what string) error {
	if err := registry.CheckDigest(digest); err != nil {
		return registry.Errorf(registry.Invalid, "%s: invalid digest %q", what, registry.Elide(digest))
	}
	if _, ok := b.needed[digest]; !ok {
		b.needed[digest] = what
	}
	return nil
}

// provenance checks the provenance entry of what (nil: none) and returns
// the digest of its envelope and its keys, parsed. The envelope is a
// file of the bundle but no blob to store: the index keeps it.
func (b *bundlePlan) provenance(p *apispec.BundleProvenance, what, namespace string) (string, []registry.SigningKey, error) {
	if p == nil {
		return "", nil, nil
	}
	if b.format != apispec.BundleFormatProvenance {
		return "", nil, registry.Errorf(registry.Invalid, "%s carries provenance, which a bundle of format %q cannot: the manifest was changed, or the exporting Trove is broken", what, b.format)
	}
	b.carries = true
	if err := b.needFile(p.Envelope, "the provenance of "+what); err != nil {
		return "", nil, err
	}
	if len(p.Keys) == 0 || len(p.Keys) > maxProvenanceKeys {
		return "", nil, registry.Errorf(registry.Invalid, "%s: its provenance comes with %d keys; it needs 1 to %d keys that verify it", what, len(p.Keys), maxProvenanceKeys)
	}
	keys := make([]registry.SigningKey, 0, len(p.Keys))
	for _, k := range p.Keys {
		parsed, err := signing.ParsePublicKey(k.ASCIIArmor)
		if err != nil {
			return "", nil, registry.Wrap(registry.Invalid, err, what+": a key of its provenance")
		}
		if !strings.EqualFold(parsed.KeyID, k.KeyID) {
			return "", nil, registry.Errorf(registry.Invalid, "%s: a key of its provenance is listed as %s but is the key %s", what, registry.Elide(k.KeyID), parsed.KeyID)
		}
		parsed.Namespace = namespace
		keys = append(keys, parsed)
	}
	return p.Envelope, keys, nil
}

// maxProvenanceKeys bounds the keys one provenance entry of a bundle
// lists (a namespace has few managed keys: one, and its predecessors).
const maxProvenanceKeys = 16

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstError returns the first error that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
