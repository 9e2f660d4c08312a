package server

import (
	"context"

	"trove.dev/trove/internal/store"
)

// One change channel: every cache of this process (the protocol
// documents, the mirror's documents, the web UI's pages, version lists
// and search catalog, the access guard's namespace visibility and token
// lookups) is dropped by applyChange, fed by the index with the change
// records its writes make, and by nothing else:
//
//   - store.ChangeHook (OnCommit, registered by New): this process's
//     changes, in the writing goroutine before the write returns, so that
//     a client that writes and then reads through the same replica sees
//     its write (read-your-writes);
//   - store.ChangeFeed (followChanges, while Serve runs): every replica's
//     changes, this one's included (PostgreSQL's LISTEN/NOTIFY; SQLite's
//     own feed), which drops the entries of this process's own changes a
//     second time (at most one more render each).

// followChanges keeps the caches in step with the changes committed to
// the index by any process, until ctx ends, and keeps s.following (see
// settledIndex) true while the feed listens. It does nothing for an
// index without a change feed; responses are then rendered again after
// their maximum age.
func (s *Server) followChanges(ctx context.Context) {
	feed, ok := s.opt.Index.(store.ChangeFeed)
	if !ok {
		return
	}
	defer s.following.Store(false)
	err := feed.WatchChanges(ctx, func(c store.Change) {
		switch c.Kind {
		case store.ChangeLost:
			// Changes may go unreported from now on: documents are
			// rendered on age again until the feed is back.
			s.following.Store(false)
		case store.ChangeAll:
			// Listening (again): every document cached before is
			// dropped first, then the feed reports every change.
			s.applyChange(c)
			s.following.Store(true)
		default:
			s.applyChange(c)
		}
	})
	if ctx.Err() == nil {
		s.log.Error("the index change feed stopped: other replicas' changes show up only after the caches' maximum age", "err", err)
	}
}

// applyChange drops what a change makes stale. It only takes the caches'
// locks: it may run in a writer's goroutine.
func (s *Server) applyChange(c store.Change) {
	switch c.Kind {
	case store.ChangeProvider:
		s.providers.Invalidate(c.Namespace, c.Name)
		s.oci.InvalidateProvider(c.Namespace, c.Name)
	case store.ChangeModule:
		s.modules.Invalidate(c.Namespace, c.Name, c.System)
		s.oci.InvalidateModule(c.Namespace, c.Name, c.System)
	case store.ChangeMirrored:
		s.providers.InvalidateMirrored(c.Host, c.Namespace, c.Name)
	case store.ChangeNamespace:
	case store.ChangeAccess:
		// Who may read what changed: the pages' keys hold what the
		// visitor may read, computed per request through the guard.
		if s.opt.Access != nil {
			s.opt.Access.ApplyChange(c)
		}
		return
	default: // changes may have been missed
		s.providers.InvalidateAll()
		s.modules.InvalidateAll()
		s.oci.InvalidateAll()
	}
	if s.opt.Access != nil {
		s.opt.Access.ApplyChange(c) // visibility and token lookups
	}
	s.invalidateUI()
}
