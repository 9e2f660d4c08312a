-- Trove index, schema version 15: when each blob stopped being referenced
-- (docs/lifecycle.md, docs/backup.md).
--
-- Every transaction that deletes rows naming blobs (provider and module
-- versions, by an admin or a retention rule) records here, for each digest
-- those rows named and no row names any more, the time of the delete
-- (Unix microseconds; a later release of the same digest moves it
-- forward, never back). A write that names a digest again removes its
-- row, and so does the garbage collector when it deletes the blob. The
-- collector keeps an unreferenced blob until the grace period has passed
-- since its last write and since this time, so that a copy of the blob
-- store made within the grace period of an index snapshot holds every
-- blob the snapshot names.
CREATE TABLE IF NOT EXISTS released_blobs (
    digest      TEXT    NOT NULL PRIMARY KEY,
    released_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The question whether a row names a digest, which every release and
-- every candidate of the collector asks, looks each blob column up
-- through an index (0013 added those of provider_platforms and
-- module_versions, 0007 that of mirrored_platforms).
CREATE INDEX IF NOT EXISTS provider_versions_by_shasums ON provider_versions (shasums_digest);
CREATE INDEX IF NOT EXISTS provider_versions_by_signature ON provider_versions (shasums_signature_digest);
CREATE INDEX IF NOT EXISTS provider_versions_by_docs ON provider_versions (docs_digest);
CREATE INDEX IF NOT EXISTS mirrored_versions_by_shasums ON mirrored_versions (shasums_digest);
CREATE INDEX IF NOT EXISTS mirrored_versions_by_signature ON mirrored_versions (shasums_signature_digest);
