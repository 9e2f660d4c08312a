-- Trove index, schema version 7: package hashes and the provider mirror.
--
-- A published package gains its "h1:" hash (registry.Platform.H1), the
-- hash Terraform and OpenTofu write into lock files; '' until it is known.
-- Packages published before this migration get it from the start-up
-- backfill, which finds them through the partial index below; so does
-- SetPackageHash, which updates every row of one digest.
ALTER TABLE provider_platforms ADD COLUMN h1 TEXT NOT NULL DEFAULT '';

CREATE INDEX provider_platforms_without_h1 ON provider_platforms (sha256) WHERE h1 = '';

-- The signing keys that verified mirrored versions, each stored once
-- (digest covers every column, as for signing_key_snapshots): an upstream
-- signs thousands of versions with a few keys. host is the upstream's.
CREATE TABLE mirrored_signing_keys (
    id            INTEGER NOT NULL PRIMARY KEY,
    digest        TEXT    NOT NULL UNIQUE,
    host          TEXT    NOT NULL,
    key_namespace TEXT    NOT NULL,
    key_id        TEXT    NOT NULL,
    fingerprint   TEXT    NOT NULL,
    ascii_armor   TEXT    NOT NULL,
    created_at    INTEGER,
    expires_at    INTEGER
) STRICT;

-- Provider versions the mirror fetched from upstream registries
-- (registry.MirroredVersion): the upstream's SHA256SUMS and its signature
-- (blobs), the key that verified it, and when the mirror fetched it.
-- namespace is the upstream's, not a Trove namespace: no foreign key.
CREATE TABLE mirrored_versions (
    id                       INTEGER NOT NULL PRIMARY KEY,
    host                     TEXT    NOT NULL,
    namespace                TEXT    NOT NULL,
    type                     TEXT    NOT NULL,
    version                  TEXT    NOT NULL,
    protocols                TEXT    NOT NULL,
    shasums_digest           TEXT    NOT NULL,
    shasums_signature_digest TEXT    NOT NULL,
    signing_key              INTEGER NOT NULL REFERENCES mirrored_signing_keys (id),
    fetched_at               INTEGER NOT NULL,
    UNIQUE (host, namespace, type, version)
) STRICT;

CREATE INDEX mirrored_versions_by_signing_key ON mirrored_versions (signing_key);

-- The packages of a mirrored version, known by the SHA-256 that
-- SHA256SUMS lists; size and h1 are set once the mirror holds the package
-- (0 and '' until then). Indexed by sha256 for file downloads.
CREATE TABLE mirrored_platforms (
    version_id INTEGER NOT NULL REFERENCES mirrored_versions (id) ON DELETE CASCADE,
    os         TEXT    NOT NULL,
    arch       TEXT    NOT NULL,
    filename   TEXT    NOT NULL,
    sha256     TEXT    NOT NULL,
    size       INTEGER NOT NULL DEFAULT 0,
    h1         TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (version_id, os, arch)
) STRICT, WITHOUT ROWID;

CREATE INDEX mirrored_platforms_by_sha256 ON mirrored_platforms (sha256);

-- The upstream registries the mirror may fetch from
-- (registry.MirrorUpstream); allow is a JSON array of
-- {"Provider": ..., "Versions": ...} rules.
CREATE TABLE mirror_upstreams (
    host            TEXT    NOT NULL PRIMARY KEY,
    service_url     TEXT    NOT NULL,
    ca_certificates TEXT    NOT NULL,
    allow           TEXT    NOT NULL,
    description     TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

-- The two public registries, allowing every provider; an operator may
-- change or delete them.
INSERT INTO mirror_upstreams (host, service_url, ca_certificates, allow, description, created_at, updated_at)
VALUES
    ('registry.opentofu.org', '', '', '[{"Provider":"*/*","Versions":""}]', 'The public OpenTofu registry',
     CAST(unixepoch('subsec') * 1000000 AS INTEGER), CAST(unixepoch('subsec') * 1000000 AS INTEGER)),
    ('registry.terraform.io', '', '', '[{"Provider":"*/*","Versions":""}]', 'The public Terraform registry',
     CAST(unixepoch('subsec') * 1000000 AS INTEGER), CAST(unixepoch('subsec') * 1000000 AS INTEGER));
