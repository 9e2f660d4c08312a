-- Trove index, schema version 4: namespaces are private by default.
--
-- Migration 3 gave the visibility column the default 'public' so that
-- namespaces existing at the time stayed readable; a namespace inserted
-- since without a visibility (by hand, or by a tool that omits the
-- column) would then be public. Trove itself always writes the column;
-- this makes the schema fail safe as well. Existing rows keep theirs.
--
-- SQLite cannot ALTER a column's default, and rebuilding the table would
-- cascade the DROP of the old one into memberships, tokens and keys. A
-- default lives only in the table's CREATE statement, not in the stored
-- rows, so the statement is edited in place: the procedure the SQLite
-- documentation gives for changing a default ("Making Other Kinds Of
-- Table Schema Changes"). Creating and dropping a table afterwards bumps
-- the schema cookie, so that every connection re-reads the schema, and
-- RESET makes this one re-read it now.
--
-- Rows stored before migration 3 added the column do not hold it: SQLite
-- reads their value from the default in the CREATE statement. Rewriting
-- every row first stores their 'public' for good.
UPDATE namespaces SET visibility = visibility;
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'visibility TEXT NOT NULL DEFAULT ''public''', 'visibility TEXT NOT NULL DEFAULT ''private''')
 WHERE type = 'table' AND name = 'namespaces';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_cookie_bump (x INTEGER) STRICT;
DROP TABLE schema_cookie_bump;
