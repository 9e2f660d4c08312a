package store

import (
	"context"
	"time"

	"trove.dev/trove/internal/registry"
)

// GitSources stores the git sources of modules (registry.GitSource), at
// most one per module, and the tags each took as versions
// (registry.GitTag). The store keeps what it is given: the caller
// validates sources (registry.ParseGitURL, ...). Deleting a namespace
// deletes its sources; deleting a source deletes its tags but never the
// versions published from them.
type GitSources interface {
	// CreateGitSource stores s. NotFound if its namespace does not
	// exist; Conflict if the module has a git source already.
	CreateGitSource(ctx context.Context, s registry.GitSource) error
	// GetGitSource returns the git source of a module, or NotFound.
	GetGitSource(ctx context.Context, namespace, name, system string) (registry.GitSource, error)
	// ListGitSources returns the git sources of namespace ("" for every
	// namespace) ordered by namespace, name and system.
	ListGitSources(ctx context.Context, namespace string) ([]registry.GitSource, error)
	// DeleteGitSource removes the git source of a module and its tags.
	// NotFound if there is none.
	DeleteGitSource(ctx context.Context, namespace, name, system string) error
	// ClaimGitSource takes (or, for the same holder, extends) the sync
	// lease of a module's git source until until, so that one sync of a
	// source runs at a time on all replicas. Conflict if another holder's
	// lease has not expired at now; NotFound without the source.
	ClaimGitSource(ctx context.Context, namespace, name, system, holder string, now, until time.Time) error
	// FinishGitSourceSync records the end of holder's sync (at, its error
	// text, "" for success, and when to sync next) and ends the lease.
	// NotFound without the source; a lease holder lost meanwhile records
	// nothing (Conflict).
	FinishGitSourceSync(ctx context.Context, namespace, name, system, holder string, at time.Time, lastError string, next time.Time) error
	// GitTags returns the tags recorded for a module's git source, in
	// tag order. A source without tags has none (never NotFound).
	GitTags(ctx context.Context, namespace, name, system string) ([]registry.GitTag, error)
	// RecordGitTag records tag t (PublishedAt ignored) for a module's
	// git source. Recording a tag again with the same commit succeeds
	// without change; with another commit it is a Conflict and changes
	// nothing (a version is immutable). NotFound without the source.
	RecordGitTag(ctx context.Context, namespace, name, system string, t registry.GitTag) error
	// MarkGitTagPublished records when the version of a recorded tag was
	// published. NotFound if the tag is not recorded.
	MarkGitTagPublished(ctx context.Context, namespace, name, system, tag string, at time.Time) error
}
