-- Trove index on PostgreSQL, schema version 8: the documentation of
-- provider versions, as the SQLite index's 0008_provider_docs.sql.
--
-- A version's documentation archive (package providerdocs) is a blob like
-- its packages; the version names it by digest and size. '' and 0: no
-- documentation (every version stored before this migration). The columns
-- are set once, by CreateProviderVersion or SetProviderDocs, and never
-- change afterwards. A replica of the previous release, which knows
-- nothing of them, creates versions without documentation (the defaults)
-- and reads versions as before.
ALTER TABLE provider_versions
    ADD COLUMN IF NOT EXISTS docs_digest text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS docs_size   bigint           NOT NULL DEFAULT 0;
