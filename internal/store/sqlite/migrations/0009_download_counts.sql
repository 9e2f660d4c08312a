-- Trove index, schema version 9: download counts.
--
-- (Number 8 is taken by a migration developed in parallel; the runner
-- applies migrations by version, so either may be released first.)
--
-- Each process counts downloads in memory and adds its deltas here every
-- flush interval (package downloads), so a row is a sum of every
-- replica's deltas. A count belongs to what it counts: the foreign keys
-- delete it with its version (a module version deleted and published
-- again starts from 0), and deltas for versions that do not exist are
-- dropped by the writes. Provider counts are per version and platform,
-- module counts per version.
CREATE TABLE provider_downloads (
    namespace TEXT    NOT NULL,
    type      TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    os        TEXT    NOT NULL,
    arch      TEXT    NOT NULL,
    downloads INTEGER NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, type, version, os, arch),
    FOREIGN KEY (namespace, type, version) REFERENCES provider_versions (namespace, type, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE module_downloads (
    namespace TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    system    TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    downloads INTEGER NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
