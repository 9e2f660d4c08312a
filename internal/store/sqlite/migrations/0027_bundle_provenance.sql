-- Trove index, schema version 27: provenance carried in air-gap bundles
-- (docs/mirror.md, docs/provenance.md).
--
-- The DSSE envelope (JSON) of a mirrored provider version that a bundle
-- import brought, and the public keys that verify it (JSON array of
-- {key_id, ascii_armor}): the exporting Trove's namespace keys, which this
-- Trove does not otherwise hold. Written in the import's transaction,
-- never changed, removed with its version.
CREATE TABLE IF NOT EXISTS mirrored_provenance (
    version_id INTEGER NOT NULL PRIMARY KEY REFERENCES mirrored_versions (id) ON DELETE CASCADE,
    envelope   TEXT    NOT NULL,
    keys       TEXT    NOT NULL
) STRICT;

