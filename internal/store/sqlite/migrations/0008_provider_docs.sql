-- Trove index, schema version 8: the documentation of provider versions.
--
-- A version's documentation archive (package providerdocs) is a blob like
-- its packages; the version names it by digest and size. '' and 0: no
-- documentation (every version stored before this migration). The columns
-- are set once, by CreateProviderVersion or SetProviderDocs, and never
-- change afterwards.
ALTER TABLE provider_versions ADD COLUMN docs_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE provider_versions ADD COLUMN docs_size INTEGER NOT NULL DEFAULT 0;
