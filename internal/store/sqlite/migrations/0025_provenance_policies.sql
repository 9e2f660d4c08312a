-- Trove index, schema version 25: provenance policies (docs/provenance.md).
--
-- A namespace's rule for where its releases must be built: publishes are
-- accepted only from keyless tokens whose CI claims name the repository,
-- a ref matching refs and, when set, the issuer. Removed with the
-- namespace.
CREATE TABLE IF NOT EXISTS provenance_policies (
    namespace  TEXT    NOT NULL PRIMARY KEY REFERENCES namespaces (name) ON DELETE CASCADE,
    issuer     TEXT    NOT NULL,
    repository TEXT    NOT NULL,
    refs       TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT    NOT NULL
) STRICT;
