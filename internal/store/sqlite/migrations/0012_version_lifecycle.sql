-- Trove index, schema version 12: the lifecycle of published versions
-- (docs/lifecycle.md). (Version 10 is taken by a change on another
-- branch; the runner applies every version a database lacks.)
--
-- A provider or module version is deprecated while deprecated_at is not
-- NULL (with a one-line reason, an optional https link and who did it),
-- and revoked while revoked_at is not NULL. Both are set and cleared by
-- the store.Lifecycle methods; every version stored before this migration
-- is neither. Times are Unix microseconds like every other time column.
ALTER TABLE provider_versions ADD COLUMN deprecated_at INTEGER;
ALTER TABLE provider_versions ADD COLUMN deprecation_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE provider_versions ADD COLUMN deprecation_link TEXT NOT NULL DEFAULT '';
ALTER TABLE provider_versions ADD COLUMN deprecated_by TEXT NOT NULL DEFAULT '';
ALTER TABLE provider_versions ADD COLUMN revoked_at INTEGER;
ALTER TABLE provider_versions ADD COLUMN revocation_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE provider_versions ADD COLUMN revoked_by TEXT NOT NULL DEFAULT '';

ALTER TABLE module_versions ADD COLUMN deprecated_at INTEGER;
ALTER TABLE module_versions ADD COLUMN deprecation_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE module_versions ADD COLUMN deprecation_link TEXT NOT NULL DEFAULT '';
ALTER TABLE module_versions ADD COLUMN deprecated_by TEXT NOT NULL DEFAULT '';
ALTER TABLE module_versions ADD COLUMN revoked_at INTEGER;
ALTER TABLE module_versions ADD COLUMN revocation_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE module_versions ADD COLUMN revoked_by TEXT NOT NULL DEFAULT '';
