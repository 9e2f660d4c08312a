-- Trove index on PostgreSQL, schema version 1. It mirrors the SQLite
-- index's 0001_init.sql table for table; the differences are PostgreSQL's
-- own types:
--
-- * times are timestamptz (microseconds); NULL means "never" for the
--   optional ones (expires_at, revoked_at);
-- * lists (scopes, protocols) are text[];
-- * names and IDs are text COLLATE "C", so that they compare and sort
--   bytewise, as SQLite does, whatever the database's default collation.
--   Names are stored normalized (lower case).

CREATE TABLE namespaces (
    name        text COLLATE "C" NOT NULL PRIMARY KEY,
    description text             NOT NULL,
    created_at  timestamptz      NOT NULL
);

CREATE TABLE signing_keys (
    namespace   text COLLATE "C" NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    key_id      text COLLATE "C" NOT NULL,
    fingerprint text             NOT NULL,
    ascii_armor text             NOT NULL,
    created_at  timestamptz      NOT NULL,
    expires_at  timestamptz,
    PRIMARY KEY (namespace, key_id)
);

CREATE TABLE tokens (
    id          text COLLATE "C" NOT NULL PRIMARY KEY,
    hash        text COLLATE "C" NOT NULL UNIQUE,
    namespace   text COLLATE "C" REFERENCES namespaces (name) ON DELETE CASCADE, -- NULL: global
    scopes      text[]           NOT NULL,
    description text             NOT NULL,
    created_at  timestamptz      NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz
);

CREATE INDEX tokens_by_created ON tokens (created_at, id);
CREATE INDEX tokens_by_namespace ON tokens (namespace, created_at, id);

-- The signing key that verified a version, as it was at publish time.
-- Versions signed by the same key share one row (digest covers every
-- column), so the armor is stored once, not once per version.
CREATE TABLE signing_key_snapshots (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest        text COLLATE "C" NOT NULL UNIQUE,
    namespace     text COLLATE "C" NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    key_namespace text COLLATE "C" NOT NULL,
    key_id        text COLLATE "C" NOT NULL,
    fingerprint   text             NOT NULL,
    ascii_armor   text             NOT NULL,
    created_at    timestamptz      NOT NULL,
    expires_at    timestamptz
);

CREATE INDEX signing_key_snapshots_by_namespace ON signing_key_snapshots (namespace);

-- One row per provider type, maintained with its versions so that listing
-- a namespace's providers does not read their versions. Its row is also
-- the lock that serializes concurrent publishes of one provider.
CREATE TABLE providers (
    namespace      text COLLATE "C" NOT NULL REFERENCES namespaces (name),
    type           text COLLATE "C" NOT NULL,
    version_count  integer          NOT NULL,
    latest_version text COLLATE "C" NOT NULL,
    updated_at     timestamptz      NOT NULL,
    PRIMARY KEY (namespace, type)
);

CREATE TABLE provider_versions (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace                text COLLATE "C" NOT NULL,
    type                     text COLLATE "C" NOT NULL,
    version                  text COLLATE "C" NOT NULL,
    protocols                text[]           NOT NULL,
    shasums_digest           text             NOT NULL,
    shasums_signature_digest text             NOT NULL,
    signing_key_snapshot     bigint           NOT NULL REFERENCES signing_key_snapshots (id),
    published_at             timestamptz      NOT NULL,
    UNIQUE (namespace, type, version),
    FOREIGN KEY (namespace, type) REFERENCES providers (namespace, type)
);

CREATE INDEX provider_versions_by_snapshot ON provider_versions (signing_key_snapshot);

CREATE TABLE provider_platforms (
    version_id bigint           NOT NULL REFERENCES provider_versions (id) ON DELETE CASCADE,
    os         text COLLATE "C" NOT NULL,
    arch       text COLLATE "C" NOT NULL,
    filename   text             NOT NULL,
    sha256     text             NOT NULL,
    size       bigint           NOT NULL,
    PRIMARY KEY (version_id, os, arch)
);

CREATE TABLE secrets (
    name  text COLLATE "C" NOT NULL PRIMARY KEY,
    value bytea            NOT NULL
);
