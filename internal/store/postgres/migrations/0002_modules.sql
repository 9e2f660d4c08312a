-- Trove index on PostgreSQL, schema version 2: module versions. It
-- mirrors the SQLite index's 0002_modules.sql.
--
-- Names are stored normalized (namespace and name lower case, system as
-- validated). metadata is the JSON document extracted at publish time,
-- kept byte for byte (bytea, not jsonb), NULL when there is none.

-- One row per module, maintained with its versions (create and delete) so
-- that listings and search do not read versions. Its row is also the lock
-- that serializes concurrent writes of one module's versions.
CREATE TABLE modules (
    namespace      text COLLATE "C" NOT NULL REFERENCES namespaces (name),
    name           text COLLATE "C" NOT NULL,
    system         text COLLATE "C" NOT NULL,
    version_count  integer          NOT NULL,
    latest_version text COLLATE "C" NOT NULL,
    description    text             NOT NULL, -- the latest version's description
    updated_at     timestamptz      NOT NULL,
    PRIMARY KEY (namespace, name, system)
);

CREATE INDEX modules_by_system ON modules (system, namespace, name);

CREATE TABLE module_versions (
    namespace      text COLLATE "C" NOT NULL,
    name           text COLLATE "C" NOT NULL,
    system         text COLLATE "C" NOT NULL,
    version        text COLLATE "C" NOT NULL,
    archive_digest text             NOT NULL,
    archive_format text             NOT NULL,
    archive_size   bigint           NOT NULL,
    metadata       bytea,
    description    text             NOT NULL,
    origin         text             NOT NULL,
    published_at   timestamptz      NOT NULL,
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system) REFERENCES modules (namespace, name, system)
);
