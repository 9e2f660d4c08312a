-- Trove index, schema version 1.
--
-- Times are UTC Unix microseconds (INTEGER); NULL means "never" for the
-- optional ones (expires_at, revoked_at). Lists (scopes, protocols) are
-- JSON arrays of strings. Names are stored normalized (lower case).

CREATE TABLE namespaces (
    name        TEXT    NOT NULL PRIMARY KEY,
    description TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE signing_keys (
    namespace   TEXT    NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    key_id      TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    ascii_armor TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    PRIMARY KEY (namespace, key_id)
) STRICT;

CREATE TABLE tokens (
    id          TEXT    NOT NULL PRIMARY KEY,
    hash        TEXT    NOT NULL UNIQUE,
    namespace   TEXT    REFERENCES namespaces (name) ON DELETE CASCADE, -- NULL: global
    scopes      TEXT    NOT NULL,
    description TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    revoked_at  INTEGER
) STRICT;

CREATE INDEX tokens_by_created ON tokens (created_at, id);
CREATE INDEX tokens_by_namespace ON tokens (namespace, created_at, id);

-- The signing key that verified a version, as it was at publish time.
-- Versions signed by the same key share one row (digest covers every
-- column), so the armor is stored once, not once per version.
CREATE TABLE signing_key_snapshots (
    id            INTEGER NOT NULL PRIMARY KEY,
    digest        TEXT    NOT NULL UNIQUE,
    namespace     TEXT    NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    key_namespace TEXT    NOT NULL,
    key_id        TEXT    NOT NULL,
    fingerprint   TEXT    NOT NULL,
    ascii_armor   TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER
) STRICT;

CREATE INDEX signing_key_snapshots_by_namespace ON signing_key_snapshots (namespace);

-- One row per provider type, maintained with its versions so that listing
-- a namespace's providers does not read their versions.
CREATE TABLE providers (
    namespace      TEXT    NOT NULL REFERENCES namespaces (name),
    type           TEXT    NOT NULL,
    version_count  INTEGER NOT NULL,
    latest_version TEXT    NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (namespace, type)
) STRICT;

CREATE TABLE provider_versions (
    id                       INTEGER NOT NULL PRIMARY KEY,
    namespace                TEXT    NOT NULL,
    type                     TEXT    NOT NULL,
    version                  TEXT    NOT NULL,
    protocols                TEXT    NOT NULL,
    shasums_digest           TEXT    NOT NULL,
    shasums_signature_digest TEXT    NOT NULL,
    signing_key_snapshot     INTEGER NOT NULL REFERENCES signing_key_snapshots (id),
    published_at             INTEGER NOT NULL,
    UNIQUE (namespace, type, version),
    FOREIGN KEY (namespace, type) REFERENCES providers (namespace, type)
) STRICT;

CREATE INDEX provider_versions_by_snapshot ON provider_versions (signing_key_snapshot);

CREATE TABLE provider_platforms (
    version_id INTEGER NOT NULL REFERENCES provider_versions (id) ON DELETE CASCADE,
    os         TEXT    NOT NULL,
    arch       TEXT    NOT NULL,
    filename   TEXT    NOT NULL,
    sha256     TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    PRIMARY KEY (version_id, os, arch)
) STRICT, WITHOUT ROWID;

CREATE TABLE secrets (
    name  TEXT NOT NULL PRIMARY KEY,
    value BLOB NOT NULL
) STRICT;
