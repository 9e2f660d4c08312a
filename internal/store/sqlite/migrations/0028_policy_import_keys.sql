-- Trove index, schema version 28: the import keys of provenance policies
-- (docs/provenance.md).
--
-- The public keys (JSON array of {key_id, fingerprint, ascii_armor}) of
-- the exporting Troves whose provenance a namespace with a policy accepts
-- in air-gap bundles. A policy stored before this migration has none, so
-- bundle modules into its namespace are refused until an admin adds them.
ALTER TABLE provenance_policies ADD COLUMN import_keys TEXT NOT NULL DEFAULT '[]';
