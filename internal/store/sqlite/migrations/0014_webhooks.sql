-- Trove index, schema version 14: webhooks (docs/webhooks.md). (Version
-- 13 is taken by a change on another branch; the runner applies every
-- version a database lacks.)
--
-- A webhook subscribes a target URL to the events of one namespace, or of
-- every namespace when namespace is NULL (a global webhook). events is the
-- filter (a list; empty means every event); secret keys the HMAC-SHA256
-- signature of its deliveries. Webhooks go with their namespace.
CREATE TABLE webhooks (
    id              TEXT    NOT NULL PRIMARY KEY,
    namespace       TEXT    REFERENCES namespaces (name) ON DELETE CASCADE,
    url             TEXT    NOT NULL,
    events          TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    active          INTEGER NOT NULL,
    description     TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    created_by      TEXT    NOT NULL,
    disabled_reason TEXT    NOT NULL
) STRICT;

CREATE INDEX webhooks_by_namespace ON webhooks (namespace, created_at, id);

-- An event as sent: payload is the JSON body, byte for byte, of every
-- delivery of it.
CREATE TABLE webhook_events (
    id          TEXT    NOT NULL PRIMARY KEY,
    type        TEXT    NOT NULL,
    namespace   TEXT    NOT NULL,
    occurred_at INTEGER NOT NULL,
    payload     TEXT    NOT NULL
) STRICT;

-- The outbox: one row per event and webhook, pending until an attempt
-- succeeds or the attempts are exhausted. A worker leases a due row
-- (lease_owner, lease_until) for the length of one attempt.
CREATE TABLE webhook_deliveries (
    id              TEXT    NOT NULL PRIMARY KEY,
    webhook_id      TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT    NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    state           TEXT    NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts        INTEGER NOT NULL,
    next_attempt_at INTEGER,
    lease_owner     TEXT    NOT NULL,
    lease_until     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id);

-- Each attempt of a delivery: HTTP status (0 without an answer), its
-- duration in milliseconds, why it failed and the answer's first bytes.
CREATE TABLE webhook_attempts (
    delivery_id TEXT    NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status      INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    error       TEXT    NOT NULL,
    response    TEXT    NOT NULL,
    PRIMARY KEY (delivery_id, n)
) STRICT;
