-- Trove index, schema version 19: the pending logins of the OAuth 2.0
-- device authorization grant (RFC 8628, `trove login --device`; see
-- docs/security.md). Only hashes of the device code and of the user code
-- are stored. decision is '' while pending, then 'approved' or 'denied'
-- with the user who decided; used_at is set when the token is issued.
-- Rows are deleted once expired, as authorization codes are.
CREATE TABLE IF NOT EXISTS device_codes (
    device_hash  text COLLATE "C" NOT NULL PRIMARY KEY,
    user_hash    text COLLATE "C" NOT NULL UNIQUE,
    client_id    text             NOT NULL,
    created_at   timestamptz      NOT NULL,
    expires_at   timestamptz      NOT NULL,
    last_poll_at timestamptz,
    decision     text             NOT NULL DEFAULT '',
    user_name    text COLLATE "C" NOT NULL DEFAULT '',
    scopes       text[]           NOT NULL DEFAULT '{}',
    token_id     text             NOT NULL DEFAULT '',
    decided_at   timestamptz,
    used_at      timestamptz
);

CREATE INDEX IF NOT EXISTS device_codes_by_expiry ON device_codes (expires_at);
