-- Trove index, schema version 10: keyless publishing.
--
-- (Versions 8 and 9 are reserved for changes not merged yet: the runner
-- applies every migration a database has not recorded, so they will be
-- applied after this one to a database migrated to 10.)
--
-- A trust policy lets the ID tokens of a CI system's issuer, minted for
-- audience and whose claims match conditions (a JSON object of claim name
-- to pattern), be exchanged for a short-lived token of the namespace with
-- scope, living token_ttl_seconds. The policies go with their namespace.
CREATE TABLE trust_policies (
    id                TEXT    NOT NULL PRIMARY KEY,
    namespace         TEXT    NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    issuer            TEXT    NOT NULL,
    audience          TEXT    NOT NULL,
    conditions        TEXT    NOT NULL,
    scope             TEXT    NOT NULL CHECK (scope IN ('read', 'publish')),
    token_ttl_seconds INTEGER NOT NULL,
    description       TEXT    NOT NULL,
    created_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX trust_policies_by_namespace ON trust_policies (namespace, created_at, id);

-- The IDs (jti) of the ID tokens exchanged, as the hex SHA-256 of the
-- issuer, a NUL byte and the jti, kept until the token's own expiry so
-- that a token is exchanged once. Expired rows are removed by the next
-- exchange.
CREATE TABLE used_token_ids (
    key        TEXT    NOT NULL PRIMARY KEY,
    expires_at INTEGER NOT NULL
) STRICT;

CREATE INDEX used_token_ids_by_expiry ON used_token_ids (expires_at);
