-- Trove index on PostgreSQL, schema version 10: keyless publishing, as
-- the SQLite index's 0010_trust_policies.sql.
--
-- (Versions 8 and 9 are reserved for changes not merged yet: the runner
-- applies every migration a database has not recorded, so they will be
-- applied after this one to a database migrated to 10.)
--
-- A trust policy lets the ID tokens of a CI system's issuer, minted for
-- audience and whose claims match conditions (a JSON object of claim name
-- to pattern), be exchanged for a short-lived token of the namespace with
-- scope, living token_ttl_seconds. The policies go with their namespace
-- (ON DELETE CASCADE, so a replica of the previous release that deletes a
-- namespace deletes its policies too).
CREATE TABLE IF NOT EXISTS trust_policies (
    id                text COLLATE "C" NOT NULL PRIMARY KEY,
    namespace         text COLLATE "C" NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    issuer            text             NOT NULL,
    audience          text             NOT NULL,
    conditions        text             NOT NULL,
    scope             text             NOT NULL CHECK (scope IN ('read', 'publish')),
    token_ttl_seconds bigint           NOT NULL,
    description       text             NOT NULL,
    created_at        timestamptz      NOT NULL
);

CREATE INDEX IF NOT EXISTS trust_policies_by_namespace ON trust_policies (namespace, created_at, id);

-- The IDs (jti) of the ID tokens exchanged, as the hex SHA-256 of the
-- issuer, a NUL byte and the jti, kept until the token's own expiry so
-- that a token is exchanged once on every replica. Expired rows are
-- removed by the next exchange. Every statement may run again (IF NOT
-- EXISTS), as the other migrations of this backend.
CREATE TABLE IF NOT EXISTS used_token_ids (
    key        text COLLATE "C" NOT NULL PRIMARY KEY,
    expires_at timestamptz      NOT NULL
);

CREATE INDEX IF NOT EXISTS used_token_ids_by_expiry ON used_token_ids (expires_at);
