-- Trove index on PostgreSQL, schema version 3: access control. It mirrors
-- the SQLite index's 0003_access.sql.
--
-- Namespaces gain a visibility. Namespaces that existed before this
-- migration were readable by anyone, so they become 'public' and every
-- install that worked keeps working; Trove writes the visibility of every
-- new namespace explicitly ('private' unless asked otherwise).
ALTER TABLE namespaces ADD COLUMN visibility text NOT NULL DEFAULT 'public'
    CHECK (visibility IN ('public', 'private'));

-- Local accounts. password_hash is an encoded argon2id hash ('' when the
-- user has no password). Users are never deleted, only disabled.
CREATE TABLE users (
    name          text COLLATE "C" NOT NULL PRIMARY KEY,
    password_hash text             NOT NULL,
    admin         boolean          NOT NULL,
    disabled      boolean          NOT NULL,
    created_at    timestamptz      NOT NULL
);

CREATE TABLE memberships (
    user_name  text COLLATE "C" NOT NULL REFERENCES users (name),
    namespace  text COLLATE "C" NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    role       text             NOT NULL CHECK (role IN ('reader', 'publisher', 'admin')),
    created_at timestamptz      NOT NULL,
    PRIMARY KEY (user_name, namespace)
);

CREATE INDEX memberships_by_namespace ON memberships (namespace, user_name);

-- Personal tokens act for a user; service tokens have NULL.
ALTER TABLE tokens ADD COLUMN user_name text COLLATE "C" REFERENCES users (name);

CREATE INDEX tokens_by_user ON tokens (user_name, created_at, id);

-- OAuth 2.0 authorization codes of login.v1, by the SHA-256 of the code;
-- used_at is NULL until the code is exchanged.
CREATE TABLE auth_codes (
    hash         text COLLATE "C" NOT NULL PRIMARY KEY,
    client_id    text             NOT NULL,
    redirect_uri text             NOT NULL,
    challenge    text             NOT NULL,
    user_name    text COLLATE "C" NOT NULL REFERENCES users (name),
    scopes       text[]           NOT NULL,
    token_id     text             NOT NULL,
    created_at   timestamptz      NOT NULL,
    expires_at   timestamptz      NOT NULL,
    used_at      timestamptz
);

CREATE INDEX auth_codes_by_expiry ON auth_codes (expires_at);

-- The audit log. IDs come from an identity column: increasing, never
-- reused (a sequence does not go back). namespace is not a foreign key:
-- events outlive the namespaces they name.
CREATE TABLE audit_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz      NOT NULL,
    action      text COLLATE "C" NOT NULL,
    actor       text COLLATE "C" NOT NULL,
    source_addr text             NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    target      text             NOT NULL,
    details     text             NOT NULL
);

CREATE INDEX audit_events_by_action ON audit_events (action, id);
CREATE INDEX audit_events_by_actor ON audit_events (actor, id);
CREATE INDEX audit_events_by_namespace ON audit_events (namespace, id);
CREATE INDEX audit_events_by_time ON audit_events (at);
