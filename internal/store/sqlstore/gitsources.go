package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"trove.dev/trove/internal/registry"
)

const gitSourceColumns = `namespace, name, system, url, subdir, tag_prefix, auth, username, known_hosts, sealed_secrets,
	poll_seconds, created_at, created_by, last_sync_at, last_error, next_sync_at`

func gitSourceName(namespace, name, system string) string {
	return namespace + "/" + name + "/" + system
}

func noGitSource(namespace, name, system string) error {
	return registry.Errorf(registry.NotFound, "module %s has no git source", gitSourceName(namespace, name, system))
}

// CreateGitSource stores s; NotFound without its namespace, Conflict if
// the module has a git source.
func (x *Index) CreateGitSource(ctx context.Context, s registry.GitSource) error {
	created, err := x.time(s.CreatedAt, "git source creation time")
	if err != nil {
		return err
	}
	next, err := x.optTime(s.NextSyncAt, "next sync time")
	if err != nil {
		return err
	}
	if len(s.SealedSecrets) == 0 {
		return registry.Errorf(registry.Invalid, "the git source of %s has no sealed secrets", gitSourceName(s.Namespace, s.Name, s.System))
	}
	return x.write(ctx, "creating the git source of "+gitSourceName(s.Namespace, s.Name, s.System), func(ctx context.Context, t tx) error {
		if err := namespaceExists(ctx, t, s.Namespace); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO git_sources (namespace, name, system, url, subdir, tag_prefix, auth, username, known_hosts,
			sealed_secrets, poll_seconds, created_at, created_by, next_sync_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			s.Namespace, s.Name, s.System, s.URL, s.Subdir, s.TagPrefix, s.Auth, s.Username, s.KnownHosts, s.SealedSecrets,
			pollSeconds(s.PollInterval), created, s.CreatedBy, next)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "module %s has a git source already: remove it first (trove module source remove)", gitSourceName(s.Namespace, s.Name, s.System))
		}
		return err
	})
}

// pollSeconds encodes a poll interval: 0 the default, -1 never.
func pollSeconds(d time.Duration) int64 {
	switch {
	case d < 0:
		return -1
	case d == 0:
		return 0
	}
	return max(int64(d/time.Second), 1)
}

// GetGitSource returns the git source of a module, or NotFound.
func (x *Index) GetGitSource(ctx context.Context, namespace, name, system string) (registry.GitSource, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	s, err := scanGitSource(x.row(ctx, `SELECT `+gitSourceColumns+` FROM git_sources WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.GitSource{}, noGitSource(namespace, name, system)
	}
	return s, x.fail(err, "reading the git source of "+gitSourceName(namespace, name, system))
}

// ListGitSources returns the git sources of a namespace, or all.
func (x *Index) ListGitSources(ctx context.Context, namespace string) ([]registry.GitSource, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+gitSourceColumns+` FROM git_sources WHERE $1 = '' OR namespace = $1 ORDER BY namespace, name, system`, namespace)
	out, err := collect(rows, err, scanGitSource)
	return nonNil(out), x.fail(err, "listing git sources")
}

// DeleteGitSource removes a git source and its tags.
func (x *Index) DeleteGitSource(ctx context.Context, namespace, name, system string) error {
	return x.write(ctx, "deleting the git source of "+gitSourceName(namespace, name, system), func(ctx context.Context, t tx) error {
		if _, err := t.exec(ctx, `DELETE FROM git_source_tags WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system); err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM git_sources WHERE namespace = $1 AND name = $2 AND system = $3`, namespace, name, system)
		return affected(res, err, noGitSource(namespace, name, system))
	})
}

// ClaimGitSource takes the sync lease of a git source.
func (x *Index) ClaimGitSource(ctx context.Context, namespace, name, system, holder string, now, until time.Time) error {
	if holder == "" {
		return registry.Errorf(registry.Invalid, "a git source lease needs a holder")
	}
	n, err := x.time(now, "lease time")
	if err != nil {
		return err
	}
	u, err := x.time(until, "lease expiry")
	if err != nil {
		return err
	}
	return x.write(ctx, "taking the sync lease of "+gitSourceName(namespace, name, system), func(ctx context.Context, t tx) error {
		exists, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM git_sources WHERE namespace = $1 AND name = $2 AND system = $3)`, namespace, name, system)
		if err != nil {
			return err
		}
		if !exists {
			return noGitSource(namespace, name, system)
		}
		res, err := t.exec(ctx, `UPDATE git_sources SET lease_holder = $4, lease_until = $5
			WHERE namespace = $1 AND name = $2 AND system = $3 AND (lease_holder = '' OR lease_holder = $4 OR lease_until IS NULL OR lease_until <= $6)`,
			namespace, name, system, holder, u, n)
		return affected(res, err, registry.Errorf(registry.Conflict, "a sync of the git source of %s is running; try again when it has finished", gitSourceName(namespace, name, system)))
	})
}

// FinishGitSourceSync records a sync's end and releases the lease.
func (x *Index) FinishGitSourceSync(ctx context.Context, namespace, name, system, holder string, at time.Time, lastError string, next time.Time) error {
	a, err := x.time(at, "sync time")
	if err != nil {
		return err
	}
	nx, err := x.optTime(next, "next sync time")
	if err != nil {
		return err
	}
	return x.write(ctx, "recording a sync of "+gitSourceName(namespace, name, system), func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE git_sources SET last_sync_at = $5, last_error = $6, next_sync_at = $7, lease_holder = '', lease_until = NULL
			WHERE namespace = $1 AND name = $2 AND system = $3 AND lease_holder = $4`, namespace, name, system, holder, a, lastError, nx)
		return affected(res, err, registry.Errorf(registry.Conflict, "the sync lease of %s was lost", gitSourceName(namespace, name, system)))
	})
}

// GitTags returns the recorded tags of a git source.
func (x *Index) GitTags(ctx context.Context, namespace, name, system string) ([]registry.GitTag, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT tag, version, commit_id, seen_at, published_at FROM git_source_tags
		WHERE namespace = $1 AND name = $2 AND system = $3 ORDER BY tag`, namespace, name, system)
	out, err := collect(rows, err, func(s scanner) (registry.GitTag, error) {
		var g registry.GitTag
		err := s.Scan(&g.Tag, &g.Version, &g.Commit, at(&g.SeenAt), at(&g.PublishedAt))
		return g, err
	})
	return nonNil(out), x.fail(err, "listing the tags of "+gitSourceName(namespace, name, system))
}

// RecordGitTag records a tag and its commit, refusing a moved tag.
func (x *Index) RecordGitTag(ctx context.Context, namespace, name, system string, g registry.GitTag) error {
	seen, err := x.time(g.SeenAt, "tag time")
	if err != nil {
		return err
	}
	return x.write(ctx, "recording tag "+g.Tag+" of "+gitSourceName(namespace, name, system), func(ctx context.Context, t tx) error {
		var commit string
		err := t.row(ctx, `SELECT commit_id FROM git_source_tags WHERE namespace = $1 AND name = $2 AND system = $3 AND tag = $4`,
			namespace, name, system, g.Tag).Scan(&commit)
		switch {
		case err == nil && commit == g.Commit:
			return nil
		case err == nil:
			return registry.Errorf(registry.Conflict, "tag %s of %s named commit %s when it was published and names %s now; versions are immutable: the tag is not published again", g.Tag, gitSourceName(namespace, name, system), commit, g.Commit)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		exists, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM git_sources WHERE namespace = $1 AND name = $2 AND system = $3)`, namespace, name, system)
		if err != nil {
			return err
		}
		if !exists {
			return noGitSource(namespace, name, system)
		}
		_, err = t.exec(ctx, `INSERT INTO git_source_tags (namespace, name, system, tag, version, commit_id, seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			namespace, name, system, g.Tag, g.Version, g.Commit, seen)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "tag %s of %s was recorded concurrently; sync again", g.Tag, gitSourceName(namespace, name, system))
		}
		return err
	})
}

// MarkGitTagPublished records when a tag's version was published.
func (x *Index) MarkGitTagPublished(ctx context.Context, namespace, name, system, tag string, when time.Time) error {
	a, err := x.time(when, "publish time")
	if err != nil {
		return err
	}
	return x.write(ctx, "recording the publish of tag "+tag+" of "+gitSourceName(namespace, name, system), func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `UPDATE git_source_tags SET published_at = $5 WHERE namespace = $1 AND name = $2 AND system = $3 AND tag = $4`,
			namespace, name, system, tag, a)
		return affected(res, err, registry.Errorf(registry.NotFound, "tag %s of %s is not recorded", tag, gitSourceName(namespace, name, system)))
	})
}

func scanGitSource(s scanner) (registry.GitSource, error) {
	var g registry.GitSource
	var poll int64
	if err := s.Scan(&g.Namespace, &g.Name, &g.System, &g.URL, &g.Subdir, &g.TagPrefix, &g.Auth, &g.Username, &g.KnownHosts,
		&g.SealedSecrets, &poll, at(&g.CreatedAt), &g.CreatedBy, at(&g.LastSyncAt), &g.LastError, at(&g.NextSyncAt)); err != nil {
		return registry.GitSource{}, err
	}
	switch {
	case poll < 0:
		g.PollInterval = -1
	default:
		g.PollInterval = time.Duration(poll) * time.Second
	}
	return g, nil
}
