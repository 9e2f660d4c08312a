-- Trove index, schema version 16: holding new upstream versions back
-- (docs/mirror.md#holding-new-releases-back).
--
-- When this Trove first saw each version of a mirrored provider listed by
-- its upstream: a rule's minimum age counts from it when the upstream
-- gives no publish time. Rows are only ever added.
CREATE TABLE mirror_first_seen (
    host       TEXT    NOT NULL,
    namespace  TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    version    TEXT    NOT NULL,
    first_seen INTEGER NOT NULL,
    PRIMARY KEY (host, namespace, type, version)
) STRICT, WITHOUT ROWID;

-- Operators' decisions about mirrored versions (registry.MirrorDecision):
-- kind 'approve' releases one version (versions) before its minimum age,
-- 'deny' keeps the versions a constraint matches from being served.
CREATE TABLE mirror_decisions (
    host       TEXT    NOT NULL,
    namespace  TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('approve', 'deny')),
    versions   TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    created_by TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (host, namespace, type, kind, versions)
) STRICT, WITHOUT ROWID;
