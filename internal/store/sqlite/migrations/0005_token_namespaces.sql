-- Trove index, schema version 5: a token is bound to a set of namespaces.
--
-- token_namespaces holds the set; a token without rows is global. A
-- binding goes only with its token (ON DELETE CASCADE on token_id); the
-- reference to the namespace has no action, so that a namespace cannot be
-- deleted while a token is bound to it: Trove deletes those tokens first,
-- in the same transaction, and a token never ends up bound to nothing,
-- which would make it global. The reference is checked at commit, after
-- the cascades of the transaction's statements have run, so that a plain
-- DELETE of a namespace that deletes the tokens bound to it through
-- tokens.namespace (below) succeeds.
--
-- tokens.namespace stays, and Trove keeps writing the first namespace of
-- the set into it (NULL for a global token): Trove reads the set as the
-- union of the column and the rows, so that a token bound through the
-- column alone (a row written before this migration, or by an older
-- Trove) stays bound, and an older Trove (a downgrade after a backup
-- restore, a tool) sees a token bound to several namespaces as bound to
-- the first one only, never as global. Its ON
-- DELETE CASCADE keeps deleting such tokens with that namespace. (SQLite
-- could not drop the column anyway, being part of a foreign key, short of
-- rebuilding the table.)
CREATE TABLE token_namespaces (
    token_id  TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    namespace TEXT NOT NULL REFERENCES namespaces (name) DEFERRABLE INITIALLY DEFERRED,
    PRIMARY KEY (token_id, namespace)
) STRICT;

CREATE INDEX token_namespaces_by_namespace ON token_namespaces (namespace, token_id);

INSERT INTO token_namespaces (token_id, namespace)
SELECT id, namespace FROM tokens WHERE namespace IS NOT NULL;
