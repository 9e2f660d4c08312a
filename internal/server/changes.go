package server

import (
	"context"

	"trove.dev/trove/internal/store"
)

// followChanges keeps the cached protocol responses in step with the
// changes committed to the index, until ctx ends: PostgreSQL's feed
// carries every replica's commits (LISTEN/NOTIFY), SQLite's this
// process's own, so both invalidate through this one path. It does nothing
// for an index without a change feed; responses are then rendered again
// after their maximum age.
func (s *Server) followChanges(ctx context.Context) {
	feed, ok := s.opt.Index.(store.ChangeFeed)
	if !ok {
		return
	}
	err := feed.WatchChanges(ctx, s.applyChange)
	if ctx.Err() == nil {
		s.log.Error("the index change feed stopped: other replicas' publishes show up only after the cache's maximum age", "err", err)
	}
}

// applyChange drops the cached responses a change makes stale.
func (s *Server) applyChange(c store.Change) {
	switch c.Kind {
	case store.ChangeProvider:
		s.providers.Invalidate(c.Namespace, c.Name)
		s.oci.InvalidateProvider(c.Namespace, c.Name)
	case store.ChangeModule:
		s.modules.Invalidate(c.Namespace, c.Name, c.System)
		s.oci.InvalidateModule(c.Namespace, c.Name, c.System)
	default: // changes may have been missed
		s.providers.InvalidateAll()
		s.modules.InvalidateAll()
		s.oci.InvalidateAll()
	}
	s.invalidateUI()
}
