-- Trove index, schema version 6: registry-managed signing keys.
--
-- A managed key's public half is an ordinary row of signing_keys (listed,
-- served in signing_keys, snapshotted into the versions it signs); this
-- table adds its private half, sealed (encrypted and authenticated) by
-- Trove with a key-encryption secret that is never stored in the index.
-- The primary key on namespace allows one managed key per namespace. The
-- row goes with its public key (ON DELETE CASCADE), so removing the key
-- with `trove key remove` also destroys the private half.
CREATE TABLE managed_signing_keys (
    namespace          TEXT NOT NULL PRIMARY KEY,
    key_id             TEXT NOT NULL,
    sealed_private_key BLOB NOT NULL,
    FOREIGN KEY (namespace, key_id) REFERENCES signing_keys (namespace, key_id) ON DELETE CASCADE
) STRICT;
