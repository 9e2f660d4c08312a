-- Trove index on PostgreSQL, schema version 12: the lifecycle of
-- published versions, as the SQLite index's 0012_version_lifecycle.sql
-- (docs/lifecycle.md).
--
-- A provider or module version is deprecated while deprecated_at is not
-- NULL (with a one-line reason, an optional https link and who did it),
-- and revoked while revoked_at is not NULL. Every version stored before
-- this migration is neither. A replica of the previous release, which
-- knows nothing of the columns, keeps listing revoked versions and shows
-- no deprecation until it is upgraded (docs/high-availability.md).
ALTER TABLE provider_versions
    ADD COLUMN IF NOT EXISTS deprecated_at      timestamptz,
    ADD COLUMN IF NOT EXISTS deprecation_reason text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS deprecation_link   text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS deprecated_by      text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS revoked_at         timestamptz,
    ADD COLUMN IF NOT EXISTS revocation_reason  text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS revoked_by         text NOT NULL DEFAULT '';

ALTER TABLE module_versions
    ADD COLUMN IF NOT EXISTS deprecated_at      timestamptz,
    ADD COLUMN IF NOT EXISTS deprecation_reason text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS deprecation_link   text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS deprecated_by      text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS revoked_at         timestamptz,
    ADD COLUMN IF NOT EXISTS revocation_reason  text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS revoked_by         text NOT NULL DEFAULT '';
