-- Trove index, schema version 23: the provenance of provider versions
-- (docs/provenance.md).
--
-- The DSSE envelope (JSON) of the in-toto statement Trove signed when the
-- version was published; written in the publish's transaction, never
-- changed, removed with its version.
CREATE TABLE provider_provenance (
    version_id INTEGER NOT NULL PRIMARY KEY REFERENCES provider_versions (id) ON DELETE CASCADE,
    envelope   TEXT    NOT NULL
) STRICT;
