package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ImportBundle writes the mirrored versions, then the module versions, in
// one transaction announced as ChangeAll (an import touches many
// providers and modules; it is rare). Everything is checked before the
// transaction starts, so that a bad item costs no write.
func (x *Index) ImportBundle(ctx context.Context, providers []registry.MirroredVersion, modules []registry.ModuleVersion) (store.BundleImport, error) {
	for _, v := range providers {
		if err := checkImportedProvider(v); err != nil {
			return store.BundleImport{}, err
		}
	}
	for _, v := range modules {
		if _, err := registry.ParseVersion(v.Version); err != nil {
			return store.BundleImport{}, err
		}
		if err := registry.CheckStoredTime(v.PublishedAt, "publication time"); err != nil {
			return store.BundleImport{}, err
		}
		if (v.Provenance == nil) != (len(v.ProvenanceKeys) == 0) {
			return store.BundleImport{}, registry.Errorf(registry.Invalid, "module %s/%s/%s version %s: provenance comes with the keys that verify it", v.Namespace, v.Name, v.System, v.Version)
		}
	}
	var blobs []string
	for _, v := range providers {
		blobs = append(blobs, v.SHASumsDigest, v.SHASumsSignatureDigest)
		for _, p := range v.Platforms {
			blobs = append(blobs, p.SHA256)
		}
	}
	for _, v := range modules {
		blobs = append(blobs, v.ArchiveDigest)
	}
	var out store.BundleImport
	change := store.Change{Kind: store.ChangeAll}
	err := x.writeChange(ctx, "importing a bundle", &change, func(ctx context.Context, t tx) error {
		if err := x.guardBlobs(ctx, t, blobs...); err != nil {
			return err
		}
		out = store.BundleImport{Providers: make([]int, len(providers)), Modules: make([]bool, len(modules))}
		for i, v := range providers {
			n, err := x.importMirrored(ctx, t, v)
			if err != nil {
				return err
			}
			if err := x.importMirroredProvenance(ctx, t, v); err != nil {
				return err
			}
			out.Providers[i] = n
		}
		for i, v := range modules {
			stored, err := x.importModule(ctx, t, v)
			if err != nil {
				return err
			}
			out.Modules[i] = stored
		}
		store.EffectsFrom(ctx).Bound(out)
		return nil
	})
	if err != nil {
		return store.BundleImport{}, err
	}
	return out, nil
}

// checkImportedProvider checks what ImportBundle refuses as Invalid.
func checkImportedProvider(v registry.MirroredVersion) error {
	what := fmt.Sprintf("mirrored provider %s/%s/%s version %s", v.Host, v.Namespace, v.Type, v.Version)
	if _, err := registry.ParseVersion(v.Version); err != nil {
		return err
	}
	if len(v.Platforms) == 0 {
		return registry.Errorf(registry.Invalid, "%s has no platforms", what)
	}
	for _, p := range v.Platforms {
		if !p.Held() {
			return registry.Errorf(registry.Invalid, "%s: the package of %s_%s has no size or h1 hash; an import holds every package it names", what, p.OS, p.Arch)
		}
	}
	if err := registry.CheckPlatforms(v.ProviderVersion); err != nil {
		return err
	}
	if err := registry.CheckStoredTime(v.PublishedAt, "import time"); err != nil {
		return err
	}
	if (v.Provenance == nil) != (len(v.ProvenanceKeys) == 0) {
		return registry.Errorf(registry.Invalid, "%s: provenance comes with the keys that verify it", what)
	}
	if err := registry.CheckStoredTime(v.SigningKey.CreatedAt, "key creation time"); !v.SigningKey.CreatedAt.IsZero() && err != nil {
		return err
	}
	if err := registry.CheckStoredTime(v.SigningKey.ExpiresAt, "key expiry"); !v.SigningKey.ExpiresAt.IsZero() && err != nil {
		return err
	}
	return nil
}

// importMirrored stores one mirrored version with its held packages in t,
// or completes the stored one of the same SHA256SUMS, and returns how
// many packages it recorded as held.
func (x *Index) importMirrored(ctx context.Context, t tx, v registry.MirroredVersion) (int, error) {
	what := fmt.Sprintf("mirrored provider %s/%s/%s version %s", v.Host, v.Namespace, v.Type, v.Version)
	var id int64
	var sums string
	err := t.row(ctx, `SELECT id, shasums_digest FROM mirrored_versions
		WHERE host = $1 AND namespace = $2 AND type = $3 AND version = $4`+x.d.ForUpdate(),
		v.Host, v.Namespace, v.Type, v.Version).Scan(&id, &sums)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// A new version: none held may equal it but for build metadata
		// (an earlier one of this very bundle included), what a publish
		// refuses too.
		core, below := precedenceRange(v.Version)
		var twin string
		err := t.row(ctx, `SELECT version FROM mirrored_versions
			WHERE host = $1 AND namespace = $2 AND type = $3 AND version >= $4 AND version < $5
			AND (version = $4 OR substr(version, 1, $6) = $7) LIMIT 1`,
			v.Host, v.Namespace, v.Type, core, below, len(core)+1, core+"+").Scan(&twin)
		switch {
		case err == nil:
			return 0, registry.Errorf(registry.Conflict, "%s has the same precedence as the mirrored version %s held already or earlier in the bundle: "+
				"Terraform and OpenTofu ignore build metadata (+...) when comparing versions, so the two could not be told apart; nothing was imported", what, twin)
		case !errors.Is(err, sql.ErrNoRows):
			return 0, err
		}
		return len(v.Platforms), x.insertMirrored(ctx, t, v)
	case err != nil:
		return 0, err
	case sums != v.SHASumsDigest:
		return 0, registry.Errorf(registry.Conflict, "%s is stored already with another SHA256SUMS (%s, the bundle's is %s): a release never changes", what, sums, v.SHASumsDigest)
	}
	rows, err := t.query(ctx, `SELECT os, arch, filename, sha256, size, h1 FROM mirrored_platforms WHERE version_id = $1`, id)
	stored, err := collect(rows, err, func(s scanner) (registry.Platform, error) {
		var p registry.Platform
		return p, s.Scan(&p.OS, &p.Arch, &p.Filename, &p.SHA256, &p.Size, &p.H1)
	})
	if err != nil {
		return 0, err
	}
	held := 0
	for _, p := range v.Platforms {
		i := slices.IndexFunc(stored, func(s registry.Platform) bool { return s.OS == p.OS && s.Arch == p.Arch })
		if i < 0 {
			if _, err := t.exec(ctx, `INSERT INTO mirrored_platforms (version_id, os, arch, filename, sha256, size, h1)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, p.OS, p.Arch, p.Filename, p.SHA256, p.Size, p.H1); err != nil {
				return 0, err
			}
			held++
			continue
		}
		s := stored[i]
		switch {
		case s.Filename != p.Filename || s.SHA256 != p.SHA256:
			return 0, registry.Errorf(registry.Conflict, "%s: the package of %s_%s is stored already as %s (%s), the bundle's is %s (%s)",
				what, p.OS, p.Arch, s.Filename, s.SHA256, p.Filename, p.SHA256)
		case s.Held() && (s.Size != p.Size || s.H1 != p.H1):
			return 0, registry.Errorf(registry.Conflict, "%s: the package of %s_%s is held already with size %d and hash %s, the bundle's has %d and %s; a package never changes",
				what, p.OS, p.Arch, s.Size, s.H1, p.Size, p.H1)
		case s.Held():
			continue
		}
		if _, err := t.exec(ctx, `UPDATE mirrored_platforms SET size = $1, h1 = $2 WHERE version_id = $3 AND os = $4 AND arch = $5`,
			p.Size, p.H1, id, p.OS, p.Arch); err != nil {
			return 0, err
		}
		held++
	}
	return held, nil
}

// insertMirrored inserts a new mirrored version, its key snapshot (shared
// with other versions signed by the same key) and its platforms with
// their sizes and hashes (empty for packages not held). Conflict if the
// version was stored concurrently (PostgreSQL). PutMirroredVersion and
// ImportBundle share it.
func (x *Index) insertMirrored(ctx context.Context, t tx, v registry.MirroredVersion) error {
	k := v.SigningKey
	keyCreated, err := x.optTime(k.CreatedAt, "key creation time")
	if err != nil {
		return err
	}
	keyExpires, err := x.optTime(k.ExpiresAt, "key expiry")
	if err != nil {
		return err
	}
	fetched, err := x.time(v.PublishedAt, "fetch time")
	if err != nil {
		return err
	}
	digest := registry.KeySnapshotDigest(v.Host, k)
	var keyID int64
	err = t.row(ctx, `INSERT INTO mirrored_signing_keys
		(digest, host, key_namespace, key_id, fingerprint, ascii_armor, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (digest) DO NOTHING RETURNING id`,
		digest, v.Host, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor, keyCreated, keyExpires).Scan(&keyID)
	if errors.Is(err, sql.ErrNoRows) {
		err = t.row(ctx, `SELECT id FROM mirrored_signing_keys WHERE digest = $1`, digest).Scan(&keyID)
	}
	if err != nil {
		return err
	}
	var id int64
	err = t.row(ctx, `INSERT INTO mirrored_versions
		(host, namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (host, namespace, type, version) DO NOTHING RETURNING id`,
		v.Host, v.Namespace, v.Type, v.Version, x.d.Strings(v.Protocols), v.SHASumsDigest, v.SHASumsSignatureDigest,
		keyID, fetched).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Errorf(registry.Conflict, "mirrored provider %s/%s/%s version %s was stored concurrently; try again",
			v.Host, v.Namespace, v.Type, v.Version)
	}
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(v.Platforms, platformsPerInsert) {
		values, args := make([]string, len(chunk)), make([]any, 0, 1+6*len(chunk))
		args = append(args, id)
		for i, p := range chunk {
			n := len(args)
			values[i] = fmt.Sprintf("($1, $%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6)
			args = append(args, p.OS, p.Arch, p.Filename, p.SHA256, p.Size, p.H1)
		}
		if _, err := t.exec(ctx, `INSERT INTO mirrored_platforms (version_id, os, arch, filename, sha256, size, h1) VALUES `+
			strings.Join(values, ", "), args...); err != nil {
			return err
		}
	}
	return nil
}

// provenanceKey is one key of mirrored_provenance.keys.
type provenanceKey struct {
	KeyID      string `json:"key_id"`
	ASCIIArmor string `json:"ascii_armor"`
}

// importMirroredProvenance stores the provenance a bundle carried with
// the mirrored version v (stored already in t), if any: a version stored
// with the same envelope keeps it (and its keys), one stored with
// another is Conflict.
func (x *Index) importMirroredProvenance(ctx context.Context, t tx, v registry.MirroredVersion) error {
	if v.Provenance == nil {
		return nil
	}
	what := fmt.Sprintf("mirrored provider %s/%s/%s version %s", v.Host, v.Namespace, v.Type, v.Version)
	var id int64
	var envelope sql.NullString
	err := t.row(ctx, `SELECT v.id, p.envelope FROM mirrored_versions v LEFT JOIN mirrored_provenance p ON p.version_id = v.id
		WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3 AND v.version = $4`,
		v.Host, v.Namespace, v.Type, v.Version).Scan(&id, &envelope)
	switch {
	case err != nil:
		return err
	case envelope.Valid && envelope.String == string(v.Provenance):
		return nil
	case envelope.Valid:
		return registry.Errorf(registry.Conflict, "%s is stored already with another provenance: a release's provenance never changes", what)
	}
	data, err := provenanceKeysJSON(v.ProvenanceKeys)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO mirrored_provenance (version_id, envelope, keys) VALUES ($1, $2, $3)`, id, string(v.Provenance), data)
	return err
}

// MirroredProvenance returns the provenance envelope an air-gap bundle
// carried with a mirrored version and the keys that verify it (KeyID
// and ASCIIArmor set). NotFound if there is no such version or it has
// none.
func (x *Index) MirroredProvenance(ctx context.Context, host, namespace, typ, ver string) ([]byte, []registry.SigningKey, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	what := fmt.Sprintf("mirrored provider %s/%s/%s version %s", host, namespace, typ, ver)
	var envelope, keys sql.NullString
	err := x.row(ctx, `SELECT p.envelope, p.keys FROM mirrored_versions v
		LEFT JOIN mirrored_provenance p ON p.version_id = v.id
		WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3 AND v.version = $4`, host, namespace, typ, ver).Scan(&envelope, &keys)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, registry.Errorf(registry.NotFound, "%s is not stored", what)
	}
	if err != nil {
		return nil, nil, x.fail(err, "reading the provenance of "+what)
	}
	if !envelope.Valid {
		return nil, nil, registry.Errorf(registry.NotFound, "%s has no provenance: only versions an air-gap bundle brought with their provenance have one", what)
	}
	var stored []provenanceKey
	if err := json.Unmarshal([]byte(keys.String), &stored); err != nil {
		return nil, nil, x.fail(err, "reading the provenance keys of "+what)
	}
	out := make([]registry.SigningKey, 0, len(stored))
	for _, k := range stored {
		out = append(out, registry.SigningKey{Namespace: namespace, KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	return []byte(envelope.String), out, nil
}

// importModule stores one module version in t and recounts its module's
// summary, or leaves a stored version of the same archive as it is, and
// reports whether it stored it. It locks the module, checks precedence
// and inserts the version with its provenance and keys through the pieces
// CreateModuleVersion uses (lockModule, samePrecedenceModule,
// insertModuleVersion).
func (x *Index) importModule(ctx context.Context, t tx, v registry.ModuleVersion) (bool, error) {
	what := fmt.Sprintf("module %s/%s/%s", v.Namespace, v.Name, v.System)
	published := x.d.Time(v.PublishedAt)
	if err := x.lockModule(ctx, t, v, published); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return false, registry.Errorf(registry.NotFound, "namespace %q not found: create it before importing %s version %s", v.Namespace, what, v.Version)
		}
		return false, err
	}
	existing, archive, err := x.samePrecedenceModule(ctx, t, v)
	switch {
	case err == nil && existing == v.Version && archive == v.ArchiveDigest:
		return false, x.importedModuleProvenance(ctx, t, v)
	case err == nil && existing == v.Version:
		return false, registry.Errorf(registry.Conflict, "%s version %s is stored already with another archive (%s, the bundle's is %s); published versions are immutable",
			what, v.Version, archive, v.ArchiveDigest)
	case err == nil:
		return false, registry.PrecedenceConflict(what, v.Version, existing)
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	if err := x.insertModuleVersion(ctx, t, v, published); err != nil {
		return false, err
	}
	return true, x.recountModule(ctx, t, v.Namespace, v.Name, v.System)
}

// importedModuleProvenance checks the provenance a bundle carried with
// the module version v against the one stored with it already: a version
// stored with the same envelope keeps it, one stored with another, or
// without one, is Conflict (its provenance, or its lack of one, came with
// its publish).
func (x *Index) importedModuleProvenance(ctx context.Context, t tx, v registry.ModuleVersion) error {
	if v.Provenance == nil {
		return nil
	}
	what := fmt.Sprintf("module %s/%s/%s version %s", v.Namespace, v.Name, v.System, v.Version)
	var envelope string
	err := t.row(ctx, `SELECT envelope FROM module_provenance WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4`,
		v.Namespace, v.Name, v.System, v.Version).Scan(&envelope)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return registry.Errorf(registry.Conflict, "%s is stored already without provenance; the bundle's carries one: a release's provenance never changes", what)
	case err != nil:
		return err
	case envelope != string(v.Provenance):
		return registry.Errorf(registry.Conflict, "%s is stored already with another provenance: a release's provenance never changes", what)
	}
	return nil
}

// provenanceKeysJSON encodes keys as the keys columns hold them.
func provenanceKeysJSON(keys []registry.SigningKey) (string, error) {
	out := make([]provenanceKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, provenanceKey{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// ModuleProvenanceKeys returns the keys a bundle import stored with a
// module version's provenance. NotFound for a version without them.
func (x *Index) ModuleProvenanceKeys(ctx context.Context, namespace, name, system, ver string) ([]registry.SigningKey, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var keys string
	err := x.row(ctx, `SELECT keys FROM module_provenance_keys WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4`,
		namespace, name, system, ver).Scan(&keys)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.NotFound, "module %s/%s/%s version %s has no provenance keys of its own: its namespace's keys verify it", namespace, name, system, ver)
	}
	if err != nil {
		return nil, x.fail(err, fmt.Sprintf("reading the provenance keys of module %s/%s/%s version %s", namespace, name, system, ver))
	}
	var stored []provenanceKey
	if err := json.Unmarshal([]byte(keys), &stored); err != nil {
		return nil, x.fail(err, "decoding provenance keys")
	}
	out := make([]registry.SigningKey, 0, len(stored))
	for _, k := range stored {
		out = append(out, registry.SigningKey{Namespace: namespace, KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
	}
	return out, nil
}
