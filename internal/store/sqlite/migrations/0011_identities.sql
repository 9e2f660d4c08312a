-- Trove index, schema version 11: single sign-on with OpenID Connect.
-- (Versions 8 to 10 are taken by changes on other branches; the runner
-- applies every version a database lacks, so the gap is filled when they
-- arrive.)
--
-- Identity providers people sign in with (registry.IdentityProvider).
-- The client secret is not stored: client_secret_env names the
-- environment variable of every replica that holds it. scopes is a JSON
-- array.
CREATE TABLE identity_providers (
    name              TEXT    NOT NULL PRIMARY KEY,
    display_name      TEXT    NOT NULL,
    issuer            TEXT    NOT NULL,
    client_id         TEXT    NOT NULL,
    client_secret_env TEXT    NOT NULL,
    scopes            TEXT    NOT NULL,
    username_claim    TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

-- Role mappings (registry.RoleMapping): a claim value gives a role in a
-- namespace, or the global admin flag (namespace '*'). A namespace is not
-- a foreign key ('*' is none); mappings to a namespace that does not
-- exist are ignored at sign-in.
CREATE TABLE role_mappings (
    id         INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    provider   TEXT    NOT NULL REFERENCES identity_providers (name) ON DELETE CASCADE,
    claim      TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    namespace  TEXT    NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    created_at INTEGER NOT NULL,
    UNIQUE (provider, claim, value, namespace)
) STRICT;

-- People at identity providers, linked by issuer and subject (never by
-- name or e-mail) to the user created at their first sign-in.
CREATE TABLE identities (
    issuer        TEXT    NOT NULL,
    subject       TEXT    NOT NULL,
    user_name     TEXT    NOT NULL UNIQUE REFERENCES users (name),
    provider      TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    last_login_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;

-- What the role mappings granted a user at the last sign-in: a
-- membership (namespace, role) or the admin flag (namespace '*'). A
-- membership is managed by the mappings while its role is the one
-- granted here; an admin who changes or removes it takes it over.
CREATE TABLE role_grants (
    user_name TEXT NOT NULL REFERENCES users (name),
    namespace TEXT NOT NULL,
    role      TEXT NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    PRIMARY KEY (user_name, namespace)
) STRICT;
