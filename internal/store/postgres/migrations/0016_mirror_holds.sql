-- Trove index on PostgreSQL, schema version 16: holding new upstream
-- versions back, as the SQLite index's 0016_mirror_holds.sql
-- (docs/mirror.md#holding-new-releases-back). Replicas of the previous
-- release never read the tables: they serve held and denied versions
-- until they are upgraded (see docs/high-availability.md).
CREATE TABLE IF NOT EXISTS mirror_first_seen (
    host       text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    version    text COLLATE "C" NOT NULL,
    first_seen timestamptz      NOT NULL,
    PRIMARY KEY (host, namespace, type, version)
);

CREATE TABLE IF NOT EXISTS mirror_decisions (
    host       text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    type       text COLLATE "C" NOT NULL,
    kind       text COLLATE "C" NOT NULL CHECK (kind IN ('approve', 'deny')),
    versions   text COLLATE "C" NOT NULL,
    reason     text             NOT NULL,
    created_by text             NOT NULL,
    created_at timestamptz      NOT NULL,
    PRIMARY KEY (host, namespace, type, kind, versions)
);
