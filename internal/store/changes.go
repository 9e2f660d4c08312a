package store

import "context"

// ChangeKind says what a Change is about.
type ChangeKind int

// The kinds of change. The zero value is ChangeAll, the safe default: an
// unknown change invalidates everything.
const (
	// ChangeAll means that any cached data may be stale, for example
	// because changes may have been missed while a feed reconnected.
	ChangeAll ChangeKind = iota
	// ChangeProvider means that the versions of the provider
	// Namespace/Name (Name is the provider type) changed.
	ChangeProvider
	// ChangeModule means that the versions of the module
	// Namespace/Name/System changed.
	ChangeModule
	// ChangeMirrored means that the mirror's versions or packages of the
	// provider Host/Namespace/Name of another registry changed.
	ChangeMirrored
	// ChangeNamespace means that the namespace Namespace was created,
	// changed (its visibility) or deleted.
	ChangeNamespace
	// ChangeAccess means that who may do what changed: a token was
	// revoked or expired, a membership or a user changed. Cached token
	// lookups and rights are all dropped.
	ChangeAccess
	// ChangeLost is sent by a ChangeFeed that stopped listening (its
	// connection failed): the changes committed from then on reach the
	// watcher only as the ChangeAll that follows its reconnection. It
	// makes nothing stale by itself; it says that, until that ChangeAll,
	// the feed cannot be relied on to report changes as they commit.
	ChangeLost
)

// Change is a committed change to an Index that caches of its data must
// see. Names are normalized.
type Change struct {
	Kind      ChangeKind
	Namespace string
	Name      string // provider type or module name
	System    string // module system; "" for providers
	Host      string // ChangeMirrored: the provider's registry
}

// ChangeFeed is an optional ability of an Index shared by several
// processes (Trove replicas): telling each of them about the changes any
// of them commits, so that cached responses are dropped at once instead
// of after a maximum age. Find it with a type assertion.
type ChangeFeed interface {
	// WatchChanges calls fn for every change committed through any process
	// sharing the index, this one included, until ctx ends, then returns
	// ctx's error; it returns early only when the index is closed. Calls
	// are sequential, in commit order, each after its transaction
	// committed; fn must not block for long.
	//
	// Whenever changes may have been missed it calls fn with a Change of
	// kind ChangeAll: once when it has started listening (changes before
	// that moment were not watched) and again after every reconnection
	// to the backend. It reconnects by itself after failures, and calls
	// fn with a Change of kind ChangeLost as soon as it finds that it
	// stopped listening (once per failure, before the reconnection's
	// ChangeAll), so that fn can tell whether it is being told of
	// changes as they commit: from a ChangeAll until a ChangeLost (or
	// until WatchChanges returns).
	WatchChanges(ctx context.Context, fn func(Change)) error
}

// ChangeHook is an optional ability of an Index: reporting the changes
// committed through this very index, in the writing goroutine, after the
// commit and before the write returns. It is how a process's caches see
// its own writes at once (read-your-writes: a client that publishes and
// then reads through the same replica sees its version), whereas the
// ChangeFeed carries every process's changes, later. Both carry the same
// Change records, made by the write itself; applying one twice costs at
// most a render. Find it with a type assertion.
type ChangeHook interface {
	// OnCommit registers fn, called with every change this index commits
	// from now on until stop is called. fn must not block for long nor
	// write to the index; calls from concurrent writes may overlap.
	OnCommit(fn func(Change)) (stop func())
}

// SoleWriter is an optional ability of an Index that is also a
// ChangeHook: reporting that no other process writes to its database, so
// that its OnCommit functions see every change the database ever holds,
// as it commits (Trove's SQLite index: one process, holding the data
// directory's lock). Caches fed by such a hook need no maximum age to
// see other writers' changes. Find it with a type assertion.
type SoleWriter interface {
	// SoleWriter reports whether this index is its database's only
	// writer.
	SoleWriter() bool
}
