-- Trove index, schema version 18: git repositories as module sources
-- (docs/modules.md#git-repositories-as-modules). (Versions 16 and 17 are
-- taken by changes on other branches; the runner applies every version a
-- database lacks.)
--
-- A git source makes a module's versions come from the semver tags of a
-- repository. sealed_secrets holds the credentials and the webhook
-- secret, encrypted with the signing secret (never in clear here).
-- poll_seconds: 0 the server's default, -1 never. lease_holder and
-- lease_until let one sync of a source run at a time on all replicas.
-- Times are Unix microseconds.
CREATE TABLE IF NOT EXISTS git_sources (
    namespace      TEXT    NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    system         TEXT    NOT NULL,
    url            TEXT    NOT NULL,
    subdir         TEXT    NOT NULL,
    tag_prefix     TEXT    NOT NULL,
    auth           TEXT    NOT NULL CHECK (auth IN ('none', 'basic', 'ssh')),
    username       TEXT    NOT NULL,
    known_hosts    TEXT    NOT NULL,
    sealed_secrets BLOB    NOT NULL,
    poll_seconds   INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    created_by     TEXT    NOT NULL,
    last_sync_at   INTEGER,
    last_error     TEXT    NOT NULL DEFAULT '',
    next_sync_at   INTEGER,
    lease_holder   TEXT    NOT NULL DEFAULT '',
    lease_until    INTEGER,
    PRIMARY KEY (namespace, name, system)
) STRICT;

-- The tags a git source took as versions, each with the commit it named
-- when first seen: a tag moved later is refused, never republished.
CREATE TABLE IF NOT EXISTS git_source_tags (
    namespace    TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    system       TEXT    NOT NULL,
    tag          TEXT    NOT NULL,
    version      TEXT    NOT NULL,
    commit_id    TEXT    NOT NULL,
    seen_at      INTEGER NOT NULL,
    published_at INTEGER,
    PRIMARY KEY (namespace, name, system, tag),
    FOREIGN KEY (namespace, name, system) REFERENCES git_sources (namespace, name, system) ON DELETE CASCADE
) STRICT;
