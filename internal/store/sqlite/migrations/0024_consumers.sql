-- Trove index, schema version 24: consumers (docs/consumers.md).
--
-- Who downloaded which version, with which client, by UTC day. Each
-- process records downloads in memory with the download counts and adds
-- its deltas here in the same flush (package downloads), so a row is a
-- sum of every replica's deltas. Rows go with their version (foreign
-- keys) and are pruned after the retention (--consumer-retention).
-- Platforms are not kept: a consumer record is per version.
CREATE TABLE IF NOT EXISTS provider_consumers (
    namespace      TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    version        TEXT    NOT NULL,
    day            TEXT    NOT NULL,
    consumer       TEXT    NOT NULL,
    client         TEXT    NOT NULL,
    client_version TEXT    NOT NULL,
    downloads      INTEGER NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, type, version, day, consumer, client, client_version),
    FOREIGN KEY (namespace, type, version) REFERENCES provider_versions (namespace, type, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS provider_consumers_by_day ON provider_consumers (day);

CREATE TABLE IF NOT EXISTS module_consumers (
    namespace      TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    system         TEXT    NOT NULL,
    version        TEXT    NOT NULL,
    day            TEXT    NOT NULL,
    consumer       TEXT    NOT NULL,
    client         TEXT    NOT NULL,
    client_version TEXT    NOT NULL,
    downloads      INTEGER NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, name, system, version, day, consumer, client, client_version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS module_consumers_by_day ON module_consumers (day);
