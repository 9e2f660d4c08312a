-- Trove index on PostgreSQL, schema version 15: when each blob stopped
-- being referenced, as the SQLite index's 0015_released_blobs.sql
-- (docs/lifecycle.md, docs/backup.md). Replicas of the previous release
-- never read or write the table: the deletes they make record nothing,
-- and their collections count a blob's age from its last write only (see
-- docs/high-availability.md).
--
-- Every transaction that deletes rows naming blobs records here, for each
-- digest those rows named and no row names any more, the time of the
-- delete (a later release moves it forward, never back). A write that
-- names a digest again removes its row, and so does the garbage collector
-- when it deletes the blob.
CREATE TABLE IF NOT EXISTS released_blobs (
    digest      text COLLATE "C" NOT NULL PRIMARY KEY,
    released_at timestamptz      NOT NULL
);

-- The question whether a row names a digest, which every release and
-- every candidate of the collector asks, looks each blob column up
-- through an index (0013 added those of provider_platforms and
-- module_versions, 0007 that of mirrored_platforms).
CREATE INDEX IF NOT EXISTS provider_versions_by_shasums ON provider_versions (shasums_digest);
CREATE INDEX IF NOT EXISTS provider_versions_by_signature ON provider_versions (shasums_signature_digest);
CREATE INDEX IF NOT EXISTS provider_versions_by_docs ON provider_versions (docs_digest);
CREATE INDEX IF NOT EXISTS mirrored_versions_by_shasums ON mirrored_versions (shasums_digest);
CREATE INDEX IF NOT EXISTS mirrored_versions_by_signature ON mirrored_versions (shasums_signature_digest);
