-- Trove index on PostgreSQL, schema version 7: package hashes and the
-- provider mirror, as the SQLite index's 0007_mirror.sql.
--
-- A published package gains its "h1:" hash (registry.Platform.H1), the
-- hash Terraform and OpenTofu write into lock files; '' until it is known.
-- Packages published before this migration (or by a replica of the
-- previous release during a rolling upgrade, which leaves the column to
-- its default) get it from the start-up backfill, which finds them
-- through the partial index below; so does SetPackageHash, which updates
-- every row of one digest. Adding a column with a constant default does
-- not rewrite the table.
ALTER TABLE provider_platforms ADD COLUMN IF NOT EXISTS h1 text NOT NULL DEFAULT '';

CREATE INDEX IF NOT EXISTS provider_platforms_without_h1 ON provider_platforms (sha256) WHERE h1 = '';

-- The signing keys that verified mirrored versions, each stored once
-- (digest covers every column, as for signing_key_snapshots): an upstream
-- signs thousands of versions with a few keys. host is the upstream's.
CREATE TABLE IF NOT EXISTS mirrored_signing_keys (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest        text COLLATE "C" NOT NULL UNIQUE,
    host          text COLLATE "C" NOT NULL,
    key_namespace text COLLATE "C" NOT NULL,
    key_id        text COLLATE "C" NOT NULL,
    fingerprint   text             NOT NULL,
    ascii_armor   text             NOT NULL,
    created_at    timestamptz,
    expires_at    timestamptz
);

-- Provider versions the mirror fetched from upstream registries
-- (registry.MirroredVersion): the upstream's SHA256SUMS and its signature
-- (blobs), the key that verified it, and when the mirror fetched it.
-- namespace is the upstream's, not a Trove namespace: no foreign key.
CREATE TABLE IF NOT EXISTS mirrored_versions (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host                     text COLLATE "C" NOT NULL,
    namespace                text COLLATE "C" NOT NULL,
    type                     text COLLATE "C" NOT NULL,
    version                  text COLLATE "C" NOT NULL,
    protocols                text[]           NOT NULL,
    shasums_digest           text             NOT NULL,
    shasums_signature_digest text             NOT NULL,
    signing_key              bigint           NOT NULL REFERENCES mirrored_signing_keys (id),
    fetched_at               timestamptz      NOT NULL,
    UNIQUE (host, namespace, type, version)
);

CREATE INDEX IF NOT EXISTS mirrored_versions_by_signing_key ON mirrored_versions (signing_key);

-- The packages of a mirrored version, known by the SHA-256 that
-- SHA256SUMS lists; size and h1 are set once the mirror holds the package
-- (0 and '' until then). Indexed by sha256 for file downloads.
CREATE TABLE IF NOT EXISTS mirrored_platforms (
    version_id bigint           NOT NULL REFERENCES mirrored_versions (id) ON DELETE CASCADE,
    os         text COLLATE "C" NOT NULL,
    arch       text COLLATE "C" NOT NULL,
    filename   text             NOT NULL,
    sha256     text COLLATE "C" NOT NULL,
    size       bigint           NOT NULL DEFAULT 0,
    h1         text             NOT NULL DEFAULT '',
    PRIMARY KEY (version_id, os, arch)
);

CREATE INDEX IF NOT EXISTS mirrored_platforms_by_sha256 ON mirrored_platforms (sha256);

-- The upstream registries the mirror may fetch from
-- (registry.MirrorUpstream); allow is a JSON array of
-- {"Provider": ..., "Versions": ...} rules, kept as text.
CREATE TABLE IF NOT EXISTS mirror_upstreams (
    host            text COLLATE "C" NOT NULL PRIMARY KEY,
    service_url     text             NOT NULL,
    ca_certificates text             NOT NULL,
    allow           text             NOT NULL,
    description     text             NOT NULL,
    created_at      timestamptz      NOT NULL,
    updated_at      timestamptz      NOT NULL
);

-- The two public registries, allowing every provider; an operator may
-- change or delete them.
INSERT INTO mirror_upstreams (host, service_url, ca_certificates, allow, description, created_at, updated_at)
VALUES
    ('registry.opentofu.org', '', '', '[{"Provider":"*/*","Versions":""}]', 'The public OpenTofu registry', now(), now()),
    ('registry.terraform.io', '', '', '[{"Provider":"*/*","Versions":""}]', 'The public Terraform registry', now(), now())
ON CONFLICT (host) DO NOTHING;
