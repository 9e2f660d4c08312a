-- Trove index on PostgreSQL, schema version 18: git repositories as
-- module sources, as the SQLite index's 0018_git_sources.sql
-- (docs/modules.md#git-repositories-as-modules). A replica of the
-- previous release ignores the tables.
--
-- sealed_secrets holds the credentials and the webhook secret, encrypted
-- with the signing secret. poll_seconds: 0 the server's default, -1
-- never. lease_holder and lease_until let one sync of a source run at a
-- time on all replicas.
CREATE TABLE IF NOT EXISTS git_sources (
    namespace      text COLLATE "C" NOT NULL REFERENCES namespaces (name) ON DELETE CASCADE,
    name           text COLLATE "C" NOT NULL,
    system         text COLLATE "C" NOT NULL,
    url            text             NOT NULL,
    subdir         text             NOT NULL,
    tag_prefix     text             NOT NULL,
    auth           text             NOT NULL CHECK (auth IN ('none', 'basic', 'ssh')),
    username       text             NOT NULL,
    known_hosts    text             NOT NULL,
    sealed_secrets bytea            NOT NULL,
    poll_seconds   bigint           NOT NULL,
    created_at     timestamptz      NOT NULL,
    created_by     text             NOT NULL,
    last_sync_at   timestamptz,
    last_error     text             NOT NULL DEFAULT '',
    next_sync_at   timestamptz,
    lease_holder   text             NOT NULL DEFAULT '',
    lease_until    timestamptz,
    PRIMARY KEY (namespace, name, system)
);

-- The tags a git source took as versions, each with the commit it named
-- when first seen: a tag moved later is refused, never republished.
CREATE TABLE IF NOT EXISTS git_source_tags (
    namespace    text COLLATE "C" NOT NULL,
    name         text COLLATE "C" NOT NULL,
    system       text COLLATE "C" NOT NULL,
    tag          text COLLATE "C" NOT NULL,
    version      text             NOT NULL,
    commit_id    text             NOT NULL,
    seen_at      timestamptz      NOT NULL,
    published_at timestamptz,
    PRIMARY KEY (namespace, name, system, tag),
    FOREIGN KEY (namespace, name, system) REFERENCES git_sources (namespace, name, system) ON DELETE CASCADE
);
