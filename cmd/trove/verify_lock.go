package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

// runVerifyLock checks every provider of the lock file at path that this
// Trove serves: its SHA256SUMS must be signed by one of keyPaths' keys
// (by one of the namespace's keys the registry names when none are
// given), every zh: hash the lock file records must be listed in it, and
// a version with provenance must have a statement that verifies and
// names each of those archives. This Trove's providers are those whose
// host is one the clients address it by (discovery.IsOwnHost: the
// address's host, or trove.localhost for a local one). A provider of
// another registry that this Trove mirrors with provenance (an air-gap
// bundle carried it) is checked against that provenance with the keys
// the bundle carried (verifyMirroredEntry); other registries' providers
// are listed as skipped. One line per check; an error if any failed.
func runVerifyLock(ctx context.Context, out io.Writer, c *client.Client, path string, keyPaths []string, now time.Time) error {
	pinned, err := readVerifyKeys(keyPaths)
	if err != nil {
		return err
	}
	src, err := readLimited(path, maxLockFileBytes)
	if err != nil {
		return err
	}
	entries, err := lockfile.Parse(src, path)
	if err != nil {
		return fmt.Errorf("%s is not a lock file: %s", path, registry.Message(err))
	}
	base, err := url.Parse(c.Addr())
	if err != nil {
		return err
	}
	if len(pinned) == 0 {
		fmt.Fprintf(out, "NOTE the keys checked against are those %s names; pass --key FILE to check against keys you hold\n", base.Host)
	}
	failed, checked := 0, 0
	report := func(ok bool, format string, args ...any) {
		mark := "OK  "
		if !ok {
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(out, "%s %s\n", mark, fmt.Sprintf(format, args...))
	}
	for _, e := range entries {
		addr := e.Source.String()
		if !discovery.IsOwnHost(c.Addr(), e.Source.Hostname) {
			prov, err := c.MirroredProvenance(ctx, e.Source.Hostname.String(), e.Source.Namespace, e.Source.Type, e.Version)
			switch {
			case client.IsNotFound(err):
				fmt.Fprintf(out, "SKIP %s %s: not a provider of %s, which holds no provenance of it\n", addr, e.Version, base.Host)
				continue
			case client.IsUnauthenticated(err) || client.IsForbidden(err):
				// A mirror that needs credentials: the entry is not this
				// Trove's own, so it is skipped as before, saying why.
				fmt.Fprintf(out, "SKIP %s %s: not a provider of %s; its mirror needs a token to read any provenance of it (%s)\n", addr, e.Version, base.Host, verifyMessage(err))
				continue
			case err != nil:
				report(false, "%s %s: the provenance %s mirrors: %s", addr, e.Version, base.Host, verifyMessage(err))
			default:
				verifyMirroredEntry(ctx, e, prov, pinned, now, report)
			}
			checked++
			continue
		}
		checked++
		verifyLockEntry(ctx, c, e, pinned, now, report)
	}
	if checked == 0 {
		return fmt.Errorf("%s locks no provider of %s: nothing was checked", path, base.Host)
	}
	if failed > 0 {
		return fmt.Errorf("%d check(s) failed", failed)
	}
	return nil
}

// verifyLockEntry checks one locked provider version.
func verifyLockEntry(ctx context.Context, c *client.Client, e lockfile.Entry, pinned []registry.SigningKey, now time.Time,
	report func(ok bool, format string, args ...any)) {
	addr := e.Source.String() + " " + e.Version
	ns, typ := e.Source.Namespace, e.Source.Type
	files, err := c.ProviderRelease(ctx, ns, typ, e.Version)
	if err != nil {
		report(false, "%s: %s", addr, verifyMessage(err))
		return
	}
	keys := pinned
	if len(keys) == 0 {
		for _, armor := range files.Keys {
			if k, err := signing.ParsePublicKey(armor); err == nil {
				keys = append(keys, k)
			}
		}
		// The managed key that signs provenance is one of the namespace's
		// keys too, though the download document names only the release's.
		if list, err := c.ListSigningKeys(ctx, ns); err == nil {
			for _, k := range list {
				if pk, err := signing.ParsePublicKey(k.ASCIIArmor); err == nil {
					keys = append(keys, pk)
				}
			}
		}
	}
	byDigest := map[string]string{}
	if k, err := signing.VerifyDetachedAt(keys, files.SHA256SUMS, files.Signature, now); err != nil {
		report(false, "%s: SHA256SUMS signature: %s", addr, signatureMessage(err, len(pinned) > 0))
		return
	} else if parsed, err := release.ParseSHA256SUMS(files.SHA256SUMS); err != nil {
		report(false, "%s: SHA256SUMS: %s", addr, verifyMessage(err))
		return
	} else {
		report(true, "%s: SHA256SUMS signed by key %s", addr, k.KeyID)
		for _, s := range parsed {
			byDigest[s.Digest] = s.Filename
		}
	}
	var zh []string
	for _, h := range e.Hashes {
		if d, ok := strings.CutPrefix(h, "zh:"); ok {
			zh = append(zh, d)
		}
	}
	if len(zh) == 0 {
		report(false, "%s: the lock file records no zh: hash to check", addr)
		return
	}
	for _, d := range zh {
		if name, ok := byDigest[d]; ok {
			report(true, "%s: zh:%s is %s in the signed SHA256SUMS", addr, short(d), name)
		} else {
			report(false, "%s: zh:%s is not listed in the signed SHA256SUMS", addr, short(d))
		}
	}
	envelope, err := c.ProviderProvenance(ctx, ns, typ, e.Version)
	if client.IsNotFound(err) {
		report(true, "%s: no provenance (published without a managed key)", addr)
		return
	} else if err != nil {
		report(false, "%s: provenance: %s", addr, verifyMessage(err))
		return
	}
	v, err := provenance.Verify(ctx, envelope, keys, now)
	if err != nil {
		report(false, "%s: provenance: %s", addr, verifyMessage(err))
		return
	}
	if err := v.Statement.CheckSubject(provenance.KindProvider, ns+"/"+typ, e.Version); err != nil {
		report(false, "%s: provenance: %s", addr, verifyMessage(err))
		return
	}
	ext := v.Statement.Predicate.BuildDefinition.ExternalParameters
	report(true, "%s: provenance signed by key %s; built by %s %s", addr, v.Key.KeyID, v.Statement.Predicate.RunDetails.Builder.ID, ext["repository"])
	for _, d := range zh {
		name, ok := byDigest[d]
		if !ok || !strings.HasSuffix(name, ".zip") {
			continue // failed above, or not an archive (SHA256SUMS lists the manifest too): provenance names archives
		}
		if err := v.Statement.CheckArchive(name, d); err != nil {
			report(false, "%s: %s: %s", addr, name, verifyMessage(err))
		} else {
			report(true, "%s: %s matches the provenance", addr, name)
		}
	}
}

// verifyMirroredEntry checks one locked version of another registry's
// provider that this Trove mirrors with provenance (an air-gap bundle
// brought it): the statement must verify with the keys the bundle
// carried (or with pinned ones, when given), be about the locked
// namespace/type and version, and name an archive with each zh: hash
// the lock file records.
func verifyMirroredEntry(ctx context.Context, e lockfile.Entry, prov apispec.MirroredProvenance, pinned []registry.SigningKey, now time.Time,
	report func(ok bool, format string, args ...any)) {
	addr := e.Source.String() + " " + e.Version
	keys := pinned
	if len(keys) == 0 {
		for _, k := range prov.Keys {
			if pk, err := signing.ParsePublicKey(k.ASCIIArmor); err == nil {
				keys = append(keys, pk)
			}
		}
	}
	v, err := provenance.Verify(ctx, prov.Envelope, keys, now)
	if err != nil {
		report(false, "%s: provenance (mirrored): %s", addr, verifyMessage(err))
		return
	}
	// The exporting Trove signed it for its namespace/type: the lock
	// file's host is this mirror's upstream, the rest must match.
	if err := v.Statement.CheckSubject(provenance.KindProvider, e.Source.Namespace+"/"+e.Source.Type, e.Version); err != nil {
		report(false, "%s: provenance (mirrored): %s", addr, verifyMessage(err))
		return
	}
	ext := v.Statement.Predicate.BuildDefinition.ExternalParameters
	report(true, "%s: provenance (mirrored) signed by key %s; built by %s %s", addr, v.Key.KeyID, v.Statement.Predicate.RunDetails.Builder.ID, ext["repository"])
	zh := 0
	for _, h := range e.Hashes {
		d, ok := strings.CutPrefix(h, "zh:")
		if !ok {
			continue
		}
		zh++
		name := ""
		for _, sub := range v.Statement.Subject {
			if strings.EqualFold(sub.Digest["sha256"], d) {
				name = sub.Name
			}
		}
		if name == "" {
			report(false, "%s: zh:%s is no archive the provenance names", addr, short(d))
		} else {
			report(true, "%s: zh:%s is %s in the provenance", addr, short(d), name)
		}
	}
	if zh == 0 {
		report(false, "%s: the lock file records no zh: hash to check", addr)
	}
}

// short abbreviates a digest for a report line.
func short(d string) string {
	if len(d) > 16 {
		return d[:16] + "…"
	}
	return d
}
