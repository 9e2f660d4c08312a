-- Trove index, schema version 3: access control.
--
-- Namespaces gain a visibility. Namespaces that existed before this
-- migration were readable by anyone, so they become 'public' and every
-- install that worked keeps working; Trove writes the visibility of every
-- new namespace explicitly ('private' unless asked otherwise).
ALTER TABLE namespaces ADD COLUMN visibility TEXT NOT NULL DEFAULT 'public'
    CHECK (visibility IN ('public', 'private'));

-- Local accounts. password_hash is an encoded argon2id hash ('' when the
-- user has no password). Users are never deleted, only disabled.
CREATE TABLE users (
    name          TEXT    NOT NULL PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    admin         INTEGER NOT NULL CHECK (admin IN (0, 1)),
    disabled      INTEGER NOT NULL CHECK (disabled IN (0, 1)),
    created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE memberships (
    user_name  TEXT    NOT NULL REFERENCES users (name),
    namespace  TEXT    NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    role       TEXT    NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_name, namespace)
) STRICT;

CREATE INDEX memberships_by_namespace ON memberships (namespace, user_name);

-- Personal tokens act for a user; service tokens have NULL.
ALTER TABLE tokens ADD COLUMN user_name TEXT REFERENCES users (name);

CREATE INDEX tokens_by_user ON tokens (user_name, created_at, id);

-- OAuth 2.0 authorization codes of login.v1, by the SHA-256 of the code.
-- scopes is a JSON array; used_at is NULL until the code is exchanged.
CREATE TABLE auth_codes (
    hash         TEXT    NOT NULL PRIMARY KEY,
    client_id    TEXT    NOT NULL,
    redirect_uri TEXT    NOT NULL,
    challenge    TEXT    NOT NULL,
    user_name    TEXT    NOT NULL REFERENCES users (name),
    scopes       TEXT    NOT NULL,
    token_id     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    used_at      INTEGER
) STRICT;

CREATE INDEX auth_codes_by_expiry ON auth_codes (expires_at);

-- The audit log. AUTOINCREMENT: an ID is never reused, even after the
-- newest events were deleted by hand. namespace is not a foreign key:
-- events outlive the namespaces they name.
CREATE TABLE audit_events (
    id          INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    action      TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    source_addr TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    target      TEXT    NOT NULL,
    details     TEXT    NOT NULL
) STRICT;

CREATE INDEX audit_events_by_action ON audit_events (action, id);
CREATE INDEX audit_events_by_actor ON audit_events (actor, id);
CREATE INDEX audit_events_by_namespace ON audit_events (namespace, id);
CREATE INDEX audit_events_by_time ON audit_events (at);
