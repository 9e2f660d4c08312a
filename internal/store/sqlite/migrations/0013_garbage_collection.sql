-- Trove index, schema version 13: deleting versions and collecting the
-- blobs no row names any more (docs/lifecycle.md). (Version 14 is taken
-- by a change on another branch; the runner applies every version a
-- database lacks.)
--
-- gc_lease holds at most one row: the garbage collector running now
-- (holder, a random id per run) and when its lease ends (Unix
-- microseconds). Another collector takes the row only once it expired,
-- so a crashed collector blocks the next one only until then.
CREATE TABLE IF NOT EXISTS gc_lease (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

-- The collector asks, before deleting each unreferenced blob, whether a
-- row names it now; these keep that question from scanning every
-- package and archive.
CREATE INDEX IF NOT EXISTS provider_platforms_by_sha256 ON provider_platforms (sha256);
CREATE INDEX IF NOT EXISTS module_versions_by_archive ON module_versions (archive_digest);

-- The retention rule of a namespace (registry.RetentionRule): which of
-- its provider and module versions the garbage collector deletes.
-- keep_last 0 and keep_within_seconds 0 mean no such keep; pins is a
-- JSON array of version constraints. Times are Unix microseconds.
CREATE TABLE IF NOT EXISTS retention_rules (
    namespace           TEXT    NOT NULL PRIMARY KEY REFERENCES namespaces (name) ON DELETE CASCADE,
    keep_last           INTEGER NOT NULL,
    keep_within_seconds INTEGER NOT NULL,
    pins                TEXT    NOT NULL,
    updated_at          INTEGER NOT NULL,
    updated_by          TEXT    NOT NULL
) STRICT;
