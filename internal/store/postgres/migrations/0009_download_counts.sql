-- Trove index on PostgreSQL, schema version 9: download counts, as the
-- SQLite index's 0009_download_counts.sql.
--
-- (Number 8 is taken by a migration developed in parallel; the runner
-- applies migrations by version, so either may be released first.)
--
-- Each replica counts downloads in memory and adds its deltas here every
-- flush interval (package downloads): a row is the sum of every
-- replica's deltas, written with INSERT ... ON CONFLICT DO UPDATE SET
-- downloads = downloads + delta, so concurrent flushes add up. A count
-- belongs to what it counts: the foreign keys delete it with its version
-- (a module version deleted and published again starts from 0), and
-- deltas for versions that do not exist are dropped by the writes. A
-- replica of the previous release knows nothing of these tables: it
-- counts nothing, and its module deletes remove the counts through the
-- foreign key.
CREATE TABLE IF NOT EXISTS provider_downloads (
    namespace text COLLATE "C" NOT NULL,
    type      text COLLATE "C" NOT NULL,
    version   text COLLATE "C" NOT NULL,
    os        text COLLATE "C" NOT NULL,
    arch      text COLLATE "C" NOT NULL,
    downloads bigint           NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, type, version, os, arch),
    FOREIGN KEY (namespace, type, version) REFERENCES provider_versions (namespace, type, version) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS module_downloads (
    namespace text COLLATE "C" NOT NULL,
    name      text COLLATE "C" NOT NULL,
    system    text COLLATE "C" NOT NULL,
    version   text COLLATE "C" NOT NULL,
    downloads bigint           NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, name, system, version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
);
