-- Trove index, schema version 2: module versions.
--
-- Names are stored normalized (namespace and name lower case, system as
-- validated). metadata is the JSON document extracted at publish time, NULL
-- when there is none.

-- One row per module, maintained with its versions (create and delete) so
-- that listings and search do not read versions.
CREATE TABLE modules (
    namespace      TEXT    NOT NULL REFERENCES namespaces (name),
    name           TEXT    NOT NULL,
    system         TEXT    NOT NULL,
    version_count  INTEGER NOT NULL,
    latest_version TEXT    NOT NULL,
    description    TEXT    NOT NULL, -- the latest version's description
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (namespace, name, system)
) STRICT;

CREATE INDEX modules_by_system ON modules (system, namespace, name);

CREATE TABLE module_versions (
    namespace      TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    system         TEXT    NOT NULL,
    version        TEXT    NOT NULL,
    archive_digest TEXT    NOT NULL,
    archive_format TEXT    NOT NULL,
    archive_size   INTEGER NOT NULL,
    metadata       BLOB,
    description    TEXT    NOT NULL,
    origin         TEXT    NOT NULL,
    published_at   INTEGER NOT NULL,
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system) REFERENCES modules (namespace, name, system)
) STRICT;
