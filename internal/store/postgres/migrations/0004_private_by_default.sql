-- Trove index, schema version 4: namespaces are private by default.
--
-- Migration 3 gave the visibility column the default 'public' so that
-- namespaces existing at the time stayed readable; a namespace inserted
-- since without a visibility (by hand, or by a tool that omits the
-- column) would then be public. Trove itself always writes the column;
-- this makes the schema fail safe as well. Existing rows keep theirs.
ALTER TABLE namespaces ALTER COLUMN visibility SET DEFAULT 'private';
