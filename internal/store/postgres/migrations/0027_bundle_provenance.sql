-- Trove index, schema version 27: provenance carried in air-gap bundles
-- (docs/mirror.md, docs/provenance.md).
--
-- The DSSE envelope (JSON) of a mirrored provider version that a bundle
-- import brought, and the public keys that verify it (JSON array of
-- {key_id, ascii_armor}): the exporting Trove's namespace keys, which this
-- Trove does not otherwise hold. Written in the import's transaction,
-- never changed, removed with its version.
CREATE TABLE IF NOT EXISTS mirrored_provenance (
    version_id bigint NOT NULL PRIMARY KEY REFERENCES mirrored_versions (id) ON DELETE CASCADE,
    envelope   text   NOT NULL,
    keys       text   NOT NULL
);

-- The public keys (JSON array of {key_id, ascii_armor}) that verify the
-- provenance (module_provenance) of a module version a bundle import
-- brought, signed by the exporting Trove. A module version without a row
-- is verified against its namespace's keys. Keyed as module_provenance.
CREATE TABLE IF NOT EXISTS module_provenance_keys (
    namespace text COLLATE "C" NOT NULL,
    name      text COLLATE "C" NOT NULL,
    system    text COLLATE "C" NOT NULL,
    version   text COLLATE "C" NOT NULL,
    keys      text             NOT NULL,
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
);
