-- Trove index, schema version 26: the provenance of module versions
-- (docs/provenance.md).
--
-- The DSSE envelope (JSON) of the in-toto statement Trove signed when the
-- version was published; written in the publish's transaction, never
-- changed, removed with its version. Module versions are keyed by
-- (namespace, name, system, version) and have no numeric id, so the
-- envelope's row uses that key.
CREATE TABLE IF NOT EXISTS module_provenance (
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    system    TEXT NOT NULL,
    version   TEXT NOT NULL,
    envelope  TEXT NOT NULL,
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
