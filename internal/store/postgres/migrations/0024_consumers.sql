-- Trove index on PostgreSQL, schema version 24: consumers, as the SQLite
-- index's 0024_consumers.sql (docs/consumers.md).
--
-- Each replica records who downloaded which version, with which client,
-- by UTC day, in memory with its download counts, and adds the deltas
-- here in the same flush with INSERT ... ON CONFLICT DO UPDATE, so
-- concurrent flushes add up. A replica of the previous release records
-- no consumers; its deletes remove them through the foreign keys.
CREATE TABLE IF NOT EXISTS provider_consumers (
    namespace      text COLLATE "C" NOT NULL,
    type           text COLLATE "C" NOT NULL,
    version        text COLLATE "C" NOT NULL,
    day            text COLLATE "C" NOT NULL,
    consumer       text COLLATE "C" NOT NULL,
    client         text COLLATE "C" NOT NULL,
    client_version text COLLATE "C" NOT NULL,
    downloads      bigint           NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, type, version, day, consumer, client, client_version),
    FOREIGN KEY (namespace, type, version) REFERENCES provider_versions (namespace, type, version) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS provider_consumers_by_day ON provider_consumers (day);

CREATE TABLE IF NOT EXISTS module_consumers (
    namespace      text COLLATE "C" NOT NULL,
    name           text COLLATE "C" NOT NULL,
    system         text COLLATE "C" NOT NULL,
    version        text COLLATE "C" NOT NULL,
    day            text COLLATE "C" NOT NULL,
    consumer       text COLLATE "C" NOT NULL,
    client         text COLLATE "C" NOT NULL,
    client_version text COLLATE "C" NOT NULL,
    downloads      bigint           NOT NULL CHECK (downloads >= 0),
    PRIMARY KEY (namespace, name, system, version, day, consumer, client, client_version),
    FOREIGN KEY (namespace, name, system, version) REFERENCES module_versions (namespace, name, system, version) ON DELETE CASCADE
);

CREATE INDEX IF NOT EXISTS module_consumers_by_day ON module_consumers (day);
