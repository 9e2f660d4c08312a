-- Trove index on PostgreSQL, schema version 6: registry-managed signing
-- keys, as the SQLite index's 0006_managed_signing_keys.sql.
--
-- A managed key's public half is an ordinary row of signing_keys (listed,
-- served in signing_keys, snapshotted into the versions it signs); this
-- table adds its private half, sealed (encrypted and authenticated) by
-- Trove with a key-encryption secret that is never stored in the index.
-- The primary key on namespace allows one managed key per namespace. The
-- row goes with its public key (ON DELETE CASCADE), so removing the key
-- (or its namespace) also destroys the private half. A replica of the
-- previous release, which knows nothing of this table, still lists and
-- removes the public key correctly.
CREATE TABLE IF NOT EXISTS managed_signing_keys (
    namespace          text COLLATE "C" NOT NULL PRIMARY KEY,
    key_id             text COLLATE "C" NOT NULL,
    sealed_private_key bytea            NOT NULL,
    FOREIGN KEY (namespace, key_id) REFERENCES signing_keys (namespace, key_id) ON DELETE CASCADE
);
