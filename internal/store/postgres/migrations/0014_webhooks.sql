-- Trove index on PostgreSQL, schema version 14: webhooks, as the SQLite
-- index's 0014_webhooks.sql (docs/webhooks.md). Replicas of the previous
-- release never read these tables: they emit no events.
CREATE TABLE IF NOT EXISTS webhooks (
    id              text COLLATE "C" NOT NULL PRIMARY KEY,
    namespace       text COLLATE "C" REFERENCES namespaces (name) ON DELETE CASCADE,
    url             text             NOT NULL,
    events          text[]           NOT NULL,
    secret          text             NOT NULL,
    active          boolean          NOT NULL,
    description     text             NOT NULL,
    created_at      timestamptz      NOT NULL,
    created_by      text             NOT NULL,
    disabled_reason text             NOT NULL
);

CREATE INDEX IF NOT EXISTS webhooks_by_namespace ON webhooks (namespace, created_at, id);

CREATE TABLE IF NOT EXISTS webhook_events (
    id          text COLLATE "C" NOT NULL PRIMARY KEY,
    type        text             NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    occurred_at timestamptz      NOT NULL,
    payload     text             NOT NULL
);

CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id              text COLLATE "C" NOT NULL PRIMARY KEY,
    webhook_id      text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        text COLLATE "C" NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    state           text             NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
    attempts        integer          NOT NULL,
    next_attempt_at timestamptz,
    lease_owner     text             NOT NULL,
    lease_until     timestamptz,
    created_at      timestamptz      NOT NULL,
    updated_at      timestamptz      NOT NULL
);

CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_event ON webhook_deliveries (event_id);

CREATE TABLE IF NOT EXISTS webhook_attempts (
    delivery_id text COLLATE "C" NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    n           integer          NOT NULL,
    at          timestamptz      NOT NULL,
    status      integer          NOT NULL,
    duration_ms bigint           NOT NULL,
    error       text             NOT NULL,
    response    text             NOT NULL,
    PRIMARY KEY (delivery_id, n)
);
