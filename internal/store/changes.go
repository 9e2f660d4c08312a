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
)

// Change is a committed change to an Index that caches of its data must
// see. Names are normalized.
type Change struct {
	Kind      ChangeKind
	Namespace string
	Name      string // provider type or module name
	System    string // module system; "" for providers
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
	// to the backend. It reconnects by itself after failures.
	WatchChanges(ctx context.Context, fn func(Change)) error
}
