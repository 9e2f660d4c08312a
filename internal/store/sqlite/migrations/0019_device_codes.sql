-- Trove index, schema version 19: the pending logins of the OAuth 2.0
-- device authorization grant (RFC 8628, `trove login --device`; see
-- docs/security.md). Only hashes of the device code and of the user code
-- are stored. decision is '' while pending, then 'approved' or 'denied'
-- with the user who decided; used_at is set when the token is issued.
-- Rows are deleted once expired, as authorization codes are.
CREATE TABLE IF NOT EXISTS device_codes (
    device_hash  TEXT    NOT NULL PRIMARY KEY,
    user_hash    TEXT    NOT NULL UNIQUE,
    client_id    TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    last_poll_at INTEGER,
    decision     TEXT    NOT NULL DEFAULT '',
    user_name    TEXT    NOT NULL DEFAULT '',
    scopes       TEXT    NOT NULL DEFAULT '',
    token_id     TEXT    NOT NULL DEFAULT '',
    decided_at   INTEGER,
    used_at      INTEGER
) STRICT;

CREATE INDEX IF NOT EXISTS device_codes_by_expiry ON device_codes (expires_at);
