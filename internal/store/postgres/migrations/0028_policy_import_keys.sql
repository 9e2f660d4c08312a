-- Trove index on PostgreSQL, schema version 28: the import keys of
-- provenance policies, as the SQLite index's 0028_policy_import_keys.sql
-- (docs/provenance.md). A policy stored before it has none, so bundle
-- modules into its namespace are refused until an admin adds them. A
-- replica of the previous release neither reads nor writes the column:
-- during a rolling upgrade it checks bundle modules with the keys the
-- bundle carries, as that release did.
ALTER TABLE provenance_policies
    ADD COLUMN IF NOT EXISTS import_keys text NOT NULL DEFAULT '[]';
