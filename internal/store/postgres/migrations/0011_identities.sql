-- Trove index on PostgreSQL, schema version 11: single sign-on with
-- OpenID Connect, as the SQLite index's 0011_identities.sql. (Versions 8
-- to 10 are taken by changes on other branches; the runner applies every
-- version a database lacks, so the gap is filled when they arrive.)
-- Replicas of the previous release never read these tables.
CREATE TABLE IF NOT EXISTS identity_providers (
    name              text COLLATE "C" NOT NULL PRIMARY KEY,
    display_name      text             NOT NULL,
    issuer            text             NOT NULL,
    client_id         text             NOT NULL,
    client_secret_env text             NOT NULL,
    scopes            text[]           NOT NULL,
    username_claim    text             NOT NULL,
    created_at        timestamptz      NOT NULL,
    updated_at        timestamptz      NOT NULL
);

CREATE TABLE IF NOT EXISTS role_mappings (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider   text COLLATE "C" NOT NULL REFERENCES identity_providers (name) ON DELETE CASCADE,
    claim      text COLLATE "C" NOT NULL,
    value      text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    role       text             NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    created_at timestamptz      NOT NULL,
    UNIQUE (provider, claim, value, namespace)
);

CREATE TABLE IF NOT EXISTS identities (
    issuer        text COLLATE "C" NOT NULL,
    subject       text COLLATE "C" NOT NULL,
    user_name     text COLLATE "C" NOT NULL UNIQUE REFERENCES users (name),
    provider      text COLLATE "C" NOT NULL,
    created_at    timestamptz      NOT NULL,
    last_login_at timestamptz      NOT NULL,
    PRIMARY KEY (issuer, subject)
);

CREATE TABLE IF NOT EXISTS role_grants (
    user_name text COLLATE "C" NOT NULL REFERENCES users (name),
    namespace text COLLATE "C" NOT NULL,
    role      text             NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    PRIMARY KEY (user_name, namespace)
);
