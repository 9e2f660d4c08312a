-- Trove index, schema version 23: the provenance of provider versions
-- (docs/provenance.md).
--
-- The DSSE envelope (JSON) of the in-toto statement Trove signed when the
-- version was published; written in the publish's transaction, never
-- changed, removed with its version.
CREATE TABLE IF NOT EXISTS provider_provenance (
    version_id bigint NOT NULL PRIMARY KEY REFERENCES provider_versions (id) ON DELETE CASCADE,
    envelope   text   NOT NULL
);

-- What the ID token of a keyless exchange said about the pipeline
-- (registry.CIClaims, JSON), for the provenance of what the token
-- publishes; removed with its token.
CREATE TABLE IF NOT EXISTS token_ci_claims (
    token_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES tokens (id) ON DELETE CASCADE,
    claims   text NOT NULL
);
