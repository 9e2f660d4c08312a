-- Trove index on PostgreSQL, schema version 13: deleting versions and
-- collecting the blobs no row names any more, as the SQLite index's
-- 0013_garbage_collection.sql (docs/lifecycle.md). A replica of the
-- previous release ignores the table and the indexes.
--
-- gc_lease holds at most one row: the garbage collector running now
-- (holder, a random id per run) and when its lease ends. Another
-- collector, on any replica, takes the row only once it expired, so a
-- crashed collector blocks the next one only until then.
CREATE TABLE IF NOT EXISTS gc_lease (
    id         integer          NOT NULL PRIMARY KEY CHECK (id = 1),
    holder     text COLLATE "C" NOT NULL,
    expires_at timestamptz      NOT NULL
);

-- The collector asks, before deleting each unreferenced blob, whether a
-- row names it now; these keep that question from scanning every
-- package and archive.
CREATE INDEX IF NOT EXISTS provider_platforms_by_sha256 ON provider_platforms (sha256);
CREATE INDEX IF NOT EXISTS module_versions_by_archive ON module_versions (archive_digest);

-- The retention rule of a namespace (registry.RetentionRule): which of
-- its provider and module versions the garbage collector deletes.
-- keep_last 0 and keep_within_seconds 0 mean no such keep; pins is a
-- JSON array of version constraints.
CREATE TABLE IF NOT EXISTS retention_rules (
    namespace           text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES namespaces (name) ON DELETE CASCADE,
    keep_last           integer          NOT NULL,
    keep_within_seconds bigint           NOT NULL,
    pins                text             NOT NULL,
    updated_at          timestamptz      NOT NULL,
    updated_by          text             NOT NULL
);
