-- Trove index on PostgreSQL, schema version 25: provenance policies, as
-- the SQLite index's 0025_provenance_policies.sql (docs/provenance.md).
-- A replica of the previous release knows nothing of them: during a
-- rolling upgrade it accepts publishes the policy would refuse.
CREATE TABLE IF NOT EXISTS provenance_policies (
    namespace  text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES namespaces (name) ON DELETE CASCADE,
    issuer     text             NOT NULL,
    repository text             NOT NULL,
    refs       text             NOT NULL,
    updated_at timestamptz      NOT NULL,
    updated_by text             NOT NULL
);
